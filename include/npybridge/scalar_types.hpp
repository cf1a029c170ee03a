// npybridge/scalar_types.hpp — 16-bit float storage types MegDNN has and C++17 lacks.
#pragma once

#include <cstdint>
#include <cstring>

namespace npybridge {

/// IEEE 754 binary16, held as its bits. npybridge only moves these values; it
/// never computes with them, so no arithmetic is provided.
struct half {
    std::uint16_t bits = 0;
    friend constexpr bool operator==(half a, half b) noexcept { return a.bits == b.bits; }
    friend constexpr bool operator!=(half a, half b) noexcept { return a.bits != b.bits; }
};

/// bfloat16: the upper 16 bits of an IEEE 754 binary32.
struct bfloat16 {
    std::uint16_t bits = 0;

    /// Rounds to nearest, ties to even; NaN stays a (quiet) NaN.
    static bfloat16 from_float(float value) noexcept {
        std::uint32_t u;
        std::memcpy(&u, &value, sizeof u);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            return bfloat16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
        }
        const std::uint32_t lsb = (u >> 16) & 1u;
        u += 0x7fffu + lsb;
        return bfloat16{static_cast<std::uint16_t>(u >> 16)};
    }

    /// Exact: bfloat16 is a prefix of binary32.
    float to_float() const noexcept {
        const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
        float value;
        std::memcpy(&value, &u, sizeof value);
        return value;
    }

    friend constexpr bool operator==(bfloat16 a, bfloat16 b) noexcept { return a.bits == b.bits; }
    friend constexpr bool operator!=(bfloat16 a, bfloat16 b) noexcept { return a.bits != b.bits; }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2,
              "npybridge: half and bfloat16 must be exactly 2 bytes on this compiler");

}  // namespace npybridge
