// npybridge/core/scalar_types.hpp — 16-bit float storage types MegDNN has and C++17 lacks.
#pragma once

#include <npybridge/core/config.hpp>

#include <cstdint>
#include <cstring>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// IEEE 754 binary16, held as its bits. npybridge only moves these values; it
/// never computes with them, so no arithmetic is provided.
struct half {
    std::uint16_t bits = 0;

    /// Exact widening to float (subnormals, infinities and NaN included).
    float to_float() const noexcept {
        const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
        std::uint32_t exponent = (bits >> 10) & 0x1Fu;
        std::uint32_t mantissa = bits & 0x3FFu;
        std::uint32_t u;
        if (exponent == 0x1F) {
            u = sign | 0x7F800000u | (mantissa << 13);
        } else if (exponent != 0) {
            u = sign | ((exponent + 112) << 23) | (mantissa << 13);
        } else if (mantissa == 0) {
            u = sign;
        } else {  // subnormal: normalize
            exponent = 113;
            while ((mantissa & 0x400u) == 0) {
                mantissa <<= 1;
                --exponent;
            }
            u = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
        }
        float value;
        std::memcpy(&value, &u, sizeof value);
        return value;
    }

    /// Rounds to nearest, ties to even; overflow gives infinity; NaN stays NaN.
    static half from_float(float value) noexcept {
        std::uint32_t u;
        std::memcpy(&u, &value, sizeof u);
        const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
        const std::uint32_t magnitude = u & 0x7FFFFFFFu;
        if (magnitude > 0x7F800000u) return half{static_cast<std::uint16_t>(sign | 0x7E00u)};
        if (magnitude >= 0x477FF000u) return half{static_cast<std::uint16_t>(sign | 0x7C00u)};  // >= 65520: inf
        if (magnitude < 0x38800000u) {                       // below the smallest normal half: subnormal or zero
            if (magnitude < 0x33000000u) return half{sign};  // rounds to zero
            const std::uint32_t exponent = magnitude >> 23;
            const std::uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
            const std::uint32_t shift = 126 - exponent;  // 14 + (112 - exponent) + ... maps to half subnormal
            std::uint32_t result = mantissa >> shift;
            const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
            const std::uint32_t halfway = 1u << (shift - 1);
            if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
            return half{static_cast<std::uint16_t>(sign | result)};
        }
        std::uint32_t result = magnitude - 0x38000000u;  // rebias exponent 127 -> 15
        const std::uint32_t rest = result & 0x1FFFu;
        result >>= 13;
        if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;
        return half{static_cast<std::uint16_t>(sign | result)};
    }

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
