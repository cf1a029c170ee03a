// npybridge/core/scalar_types.hpp — the 16-bit float storage types MegDNN has and C++17 lacks.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/float_bits.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// IEEE 754 binary16 as its bits; npybridge only moves these values, so there is no arithmetic.
struct half {
    std::uint16_t bits = 0;

    /// Exact widening to float.
    float to_float() const noexcept;

    /// Rounds to nearest, ties to even; overflow gives infinity, NaN stays NaN.
    static half from_float(float value) noexcept;

    friend constexpr bool operator==(half a, half b) noexcept { return a.bits == b.bits; }
    friend constexpr bool operator!=(half a, half b) noexcept { return a.bits != b.bits; }
};

/// The float nearest a double (ties to even), on its bits: the same in every FPU mode.
inline float narrow_to_float(double value) noexcept { return detail::float_of(detail::narrow_to_binary32(value, 24)); }

/// bfloat16: the upper 16 bits of a binary32. Conversions work on bits, so FTZ / DAZ change nothing, and give MegDNN's
/// bits.
struct bfloat16 {
    std::uint16_t bits = 0;

    /// Rounds to nearest even; a NaN keeps its top payload bits, setting the last when only lower ones were (MegDNN's
    /// float2bfloat16).
    static bfloat16 from_float(float value) noexcept;

    /// Rounds a double once (not through float).
    static bfloat16 from_double(double value) noexcept;

    /// The same for a long double.
    static bfloat16 from_long_double(long double value) noexcept;

    /// Rounds an integer once.
    template <class Integer>
    static bfloat16 from_integer(Integer value) noexcept;

    /// Exact: bfloat16 is a prefix of binary32.
    float to_float() const noexcept { return detail::float_of(static_cast<std::uint32_t>(bits) << 16); }
    /// Exact in every FPU mode.
    double to_double() const noexcept { return detail::widen_exactly(to_float()); }

    friend constexpr bool operator==(bfloat16 a, bfloat16 b) noexcept { return a.bits == b.bits; }
    friend constexpr bool operator!=(bfloat16 a, bfloat16 b) noexcept { return a.bits != b.bits; }

private:
    /// A double NaN as the CPU narrows it: quieted, top 22 payload bits kept.
    static float float_nan(double value) noexcept { return detail::float_of(detail::narrow_to_binary32(value, 24)); }
};

/// Example: float32 into bfloat16 and float16, rounded to nearest even in any FPU mode.
/// ```cpp
/// #include <npybridge/core/scalar_types.hpp>
///
/// bool one_third_rounds() {
///     const float third = 1.0f / 3;
///     return npybridge::bfloat16::from_float(third).to_float() == 0.333984375f &&
///            npybridge::half::from_float(third).to_float() == 0.333251953125f;
/// }
/// ```

// ---- Definitions

inline float half::to_float() const noexcept {
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
    } else {  // subnormal
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

inline half half::from_float(float value) noexcept {
    std::uint32_t u;
    std::memcpy(&u, &value, sizeof u);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t magnitude = u & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return half{static_cast<std::uint16_t>(sign | 0x7E00u)};
    if (magnitude >= 0x477FF000u) return half{static_cast<std::uint16_t>(sign | 0x7C00u)};  // >= 65520: inf
    if (magnitude < 0x38800000u) {                                                          // subnormal or zero
        if (magnitude < 0x33000000u) return half{sign};                                     // rounds to zero
        const std::uint32_t exponent = magnitude >> 23;
        const std::uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
        const std::uint32_t shift = 126 - exponent;  // to a half subnormal
        std::uint32_t result = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
        const std::uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
        return half{static_cast<std::uint16_t>(sign | result)};
    }
    std::uint32_t result = magnitude - 0x38000000u;  // rebias 127 -> 15
    const std::uint32_t rest = result & 0x1FFFu;
    result >>= 13;
    if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;
    return half{static_cast<std::uint16_t>(sign | result)};
}

inline bfloat16 bfloat16::from_float(float value) noexcept {
    std::uint32_t u = detail::bits_of(value);
    if ((u & 0x7f800000u) == 0x7f800000u) {  // inf or NaN: no rounding
        if ((u & 0xffffu) != 0) u |= 0x10000u;
        return bfloat16{static_cast<std::uint16_t>(u >> 16)};
    }
    const std::uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return bfloat16{static_cast<std::uint16_t>(u >> 16)};
}

inline bfloat16 bfloat16::from_double(double value) noexcept {
    if (value != value) return from_float(float_nan(value));
    return bfloat16{static_cast<std::uint16_t>(detail::narrow_to_binary32(value, 8) >> 16)};
}

inline bfloat16 bfloat16::from_long_double(long double value) noexcept {
    if (value != value) return from_double(static_cast<double>(value));
    const bool negative = std::signbit(value);
    if (value == 0) return bfloat16{static_cast<std::uint16_t>(negative ? 0x8000u : 0u)};
    if (std::isinf(value)) return bfloat16{static_cast<std::uint16_t>(negative ? 0xFF80u : 0x7F80u)};
    int exponent = 0;
    const long double fraction = std::frexp(std::fabs(value), &exponent);  // x87 / soft, no MXCSR
    const long double scaled = std::ldexp(fraction, 62);
    auto m = static_cast<std::uint64_t>(scaled);
    if (static_cast<long double>(m) != scaled) m |= 1u;  // sticky bit
    return bfloat16{static_cast<std::uint16_t>(detail::round_to_binary32(negative, m, exponent - 62, 8) >> 16)};
}

template <class Integer>
bfloat16 bfloat16::from_integer(Integer value) noexcept {
    if (value == 0) return bfloat16{0};
    const bool negative = value < 0;
    const std::uint64_t m =
        negative ? std::uint64_t{0} - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
    return bfloat16{static_cast<std::uint16_t>(detail::round_to_binary32(negative, m, 0, 8) >> 16)};
}

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2,
              "npybridge: half and bfloat16 must be exactly 2 bytes on this compiler");

}  // namespace npybridge
