// npybridge/core/detail/float_bits.hpp — floats rounded and widened by integer arithmetic on their bits.
#pragma once

#include <npybridge/core/config.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Integer arithmetic on floats' bits, so no result depends on the FPU mode (`import megengine` turns on FTZ and DAZ
/// for the process).

inline std::uint32_t bits_of(float value) noexcept {
    std::uint32_t u;
    std::memcpy(&u, &value, sizeof u);
    return u;
}
inline float float_of(std::uint32_t u) noexcept {
    float value;
    std::memcpy(&value, &u, sizeof value);
    return value;
}

/// `m >> shift` rounded to nearest even (shift <= 0: exact).
inline std::uint64_t shift_rounded(std::uint64_t m, int shift) noexcept {
    if (shift <= 0) return m << -shift;
    if (shift > 64) return 0;  // below a quarter of the last place
    const std::uint64_t q = shift == 64 ? 0 : m >> shift;
    const std::uint64_t rest = shift == 64 ? m : m & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    return q + (rest > half || (rest == half && (q & 1u)));
}

/// The binary32 bits of sign * m * 2^e (m > 0) rounded once to `digits` bits (24: float32, 8: bfloat16), subnormals
/// kept, overflow to infinity.
inline std::uint32_t round_to_binary32(bool negative, std::uint64_t m, int e, int digits) noexcept {
    int top = 63;
    while ((m >> top) == 0) --top;
    const int exponent = top + e;  // of the leading bit
    const int unused = 24 - digits;
    const std::uint32_t sign = negative ? 0x80000000u : 0u;
    if (exponent > 127) return sign | 0x7F800000u;
    std::uint64_t bits;
    if (exponent >= -126) {
        const std::uint64_t q = shift_rounded(m, top - (digits - 1));  // digits bits, or 2^digits on a carry
        bits =
            (static_cast<std::uint64_t>(exponent + 127) << 23) + ((q - (std::uint64_t{1} << (digits - 1))) << unused);
    } else {  // subnormal: in units of the smallest
        bits = shift_rounded(m, -(e + 126 + digits - 1)) << unused;
    }
    if (bits >= 0x7F800000u) return sign | 0x7F800000u;
    return sign | static_cast<std::uint32_t>(bits);
}

/// The float as a double, exactly, in every FPU mode.
inline double widen_exactly(float value) noexcept {
    const std::uint32_t u = bits_of(value);
    const std::uint64_t sign = static_cast<std::uint64_t>(u >> 31) << 63;
    const std::uint32_t exponent = (u >> 23) & 0xFFu;
    std::uint64_t mantissa = u & 0x7FFFFFu;
    std::uint64_t out;
    if (exponent == 0xFF) {
        out = sign | 0x7FF0000000000000u | (mantissa << 29);
    } else if (exponent != 0) {
        out = sign | (static_cast<std::uint64_t>(exponent + 896) << 52) | (mantissa << 29);
    } else if (mantissa == 0) {
        out = sign;
    } else {  // subnormal: mantissa * 2^-149
        int top = 22;
        while ((mantissa >> top) == 0) --top;
        out = sign | (static_cast<std::uint64_t>(874 + top) << 52) | ((mantissa << (52 - top)) & 0xFFFFFFFFFFFFFu);
    }
    double result;
    std::memcpy(&result, &out, sizeof result);
    return result;
}

/// A double's binary32 bits rounded once to `digits` bits (NaN: quieted, top payload kept).
inline std::uint32_t narrow_to_binary32(double value, int digits) noexcept {
    std::uint64_t u;
    std::memcpy(&u, &value, sizeof u);
    const bool negative = (u >> 63) != 0;
    const std::uint32_t sign = negative ? 0x80000000u : 0u;
    const auto exponent = static_cast<int>((u >> 52) & 0x7FFu);
    const std::uint64_t mantissa = u & 0xFFFFFFFFFFFFFu;
    if (exponent == 0x7FF) {
        return sign | 0x7F800000u | (mantissa == 0 ? 0u : 0x400000u | static_cast<std::uint32_t>(mantissa >> 29));
    }
    if (exponent == 0) return mantissa == 0 ? sign : round_to_binary32(negative, mantissa, -1074, digits);
    return round_to_binary32(negative, mantissa | (std::uint64_t{1} << 52), exponent - 1075, digits);
}

}  // namespace detail
}  // namespace npybridge
