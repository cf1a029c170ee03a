// npybridge/core/detail/bfloat16_kernels.hpp — whole arrays into and out of bfloat16, on the bits.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/simd.hpp>
#include <npybridge/core/scalar_types.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// A bfloat16 as a builtin real, by bits.
template <class Real>
Real widen_bfloat16(bfloat16 value) noexcept {
    if constexpr (std::is_same_v<Real, float>) {
        return value.to_float();
    } else {
        return static_cast<Real>(value.to_double());  // x87's: no MXCSR mode
    }
}

/// A builtin real rounded once to bfloat16.
template <class Real>
bfloat16 round_to_bfloat16(Real value) noexcept {
    if constexpr (std::is_same_v<Real, float>) {
        return bfloat16::from_float(value);
    } else if constexpr (std::is_same_v<Real, double>) {
        return bfloat16::from_double(value);
    } else if constexpr (std::is_floating_point_v<Real>) {
        return bfloat16::from_long_double(static_cast<long double>(value));
    } else {
        return bfloat16::from_integer(value);
    }
}

#if defined(NPYBRIDGE_SSE2)
/// Eight floats' bits rounded to bfloat16 as from_float does.
inline __m128i bfloat16_bits_of_eight(__m128i a, __m128i b) noexcept {
    const auto four = [](__m128i u) {
        const __m128i one = _mm_set1_epi32(1);
        const __m128i rounded = _mm_srli_epi32(
            _mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32(0x7fff)), _mm_and_si128(_mm_srli_epi32(u, 16), one)), 16);
        const __m128i special =
            _mm_cmpeq_epi32(_mm_and_si128(u, _mm_set1_epi32(0x7f800000)), _mm_set1_epi32(0x7f800000));
        const __m128i low_set =
            _mm_andnot_si128(_mm_cmpeq_epi32(_mm_and_si128(u, _mm_set1_epi32(0xffff)), _mm_setzero_si128()), one);
        const __m128i kept = _mm_or_si128(_mm_srli_epi32(u, 16), low_set);
        const __m128i bits = _mm_or_si128(_mm_and_si128(special, kept), _mm_andnot_si128(special, rounded));
        return _mm_sub_epi32(bits, _mm_set1_epi32(0x8000));  // into int16's range for the signed pack
    };
    return _mm_xor_si128(_mm_packs_epi32(four(a), four(b)), _mm_set1_epi16(static_cast<short>(0x8000)));
}
#endif

/// Whether bfloat16 `bits` are the overflow of a finite `value`.
inline bool overflowed(float value, std::uint16_t bits) noexcept {
    return (bits & 0x7FFFu) == 0x7F80u && (bits_of(value) & 0x7F800000u) != 0x7F800000u;
}

#if defined(NPYBRIDGE_SSE2)
/// floats_to_bfloat16's SSE2 loop; `done` says where it stopped.
inline std::size_t floats_to_bfloat16_sse2(const float* in, std::size_t n, std::uint16_t* out, bool check,
                                           std::size_t& done) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i a = held(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
        const __m128i b = held(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 4)));
        const __m128i bits = bfloat16_bits_of_eight(a, b);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bits);
        if (!check) continue;
        const __m128i infinite = _mm_cmpeq_epi16(_mm_and_si128(bits, _mm_set1_epi16(0x7FFF)), _mm_set1_epi16(0x7F80));
        if (_mm_movemask_epi8(infinite) == 0) continue;
        float read[8];  // the eight again from one private reading, tested as rounded
        std::memcpy(read, in + i, sizeof read);
        for (std::size_t k = 0; k < 8; ++k) {
            out[i + k] = bfloat16::from_float(read[k]).bits;
            if (overflowed(read[k], out[i + k])) {
                done = i;
                return i + k;
            }
        }
    }
    done = i;
    return n;
}
#endif

/// One block as bfloat16_bits_of_eight; branch-free, vectorized for the caller's target. True when `check` finds an
/// overflow.
__attribute__((always_inline)) inline bool floats_to_bfloat16_block(const float* __restrict in,
                                                                    std::uint16_t* __restrict out, std::size_t count,
                                                                    bool check) noexcept {
    std::uint32_t overflow = 0;
    for (std::size_t i = 0; i < count; ++i) {
        std::uint32_t u;
        std::memcpy(&u, in + i, sizeof u);
        const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
        const bool special = (u & 0x7F800000u) == 0x7F800000u;
        const std::uint32_t kept = (u >> 16) | static_cast<std::uint32_t>((u & 0xFFFFu) != 0);
        const std::uint32_t bits = special ? kept : rounded;
        overflow |= static_cast<std::uint32_t>(check & !special & ((bits & 0x7FFFu) == 0x7F80u));
        out[i] = static_cast<std::uint16_t>(bits);
    }
    return overflow != 0;
}

#if defined(NPYBRIDGE_X86)
/// Eight finite floats rounded to bfloat16 (low halves); `special` gains NaN / infinity lanes.
__attribute__((target("avx2"), always_inline)) inline npybridge_v8u round_eight_to_bfloat16(
    const float* in, npybridge_v8u& special) noexcept {
    npybridge_v8u u;
    std::memcpy(&u, in, sizeof u);
    special |= reinterpret_cast<npybridge_v8u>((u & 0x7F800000u) == 0x7F800000u);
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

/// floats_to_bfloat16 for AVX2: finite values rounded 16 a step and packed; a block with a NaN, an infinity or (with
/// `check`) an overflow is redone by floats_to_bfloat16_block.
__attribute__((target("avx2"))) inline std::size_t floats_to_bfloat16_avx2(const float* in, std::size_t n,
                                                                           std::uint16_t* out, bool check) noexcept {
    constexpr std::size_t block = 256;
    const npybridge_v16h zero{}, magnitude = zero + 0x7FFF, infinity = zero + 0x7F80;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t count = n - start < block ? n - start : block;
        bool suspect = true;
        if (count == block) {
            npybridge_v8u special{};
            npybridge_v16h infinite{};
            for (std::size_t i = start; i < start + block; i += 16) {
                const npybridge_v8u a = round_eight_to_bfloat16(in + i, special),
                                    b = round_eight_to_bfloat16(in + i + 8, special);
                const auto words =
                    __builtin_ia32_packusdw256(reinterpret_cast<npybridge_v8i>(a), reinterpret_cast<npybridge_v8i>(b));
                const npybridge_v4q bits = __builtin_ia32_permdi256(reinterpret_cast<npybridge_v4q>(words), 0xD8);
                std::memcpy(out + i, &bits, sizeof bits);
                infinite |= (reinterpret_cast<npybridge_v16h>(bits) & magnitude) == infinity;
            }
            if (!check) infinite = zero;
            const npybridge_v4q seen =
                reinterpret_cast<npybridge_v4q>(special) | reinterpret_cast<npybridge_v4q>(infinite);
            suspect = !__builtin_ia32_ptestz256(seen, seen);
        }
        if (!suspect) continue;
        float read[block];  // the block again from one private reading, tested as rounded
        std::memcpy(read, in + start, count * sizeof(float));
        if (!floats_to_bfloat16_block(read, out + start, count, check)) continue;
        for (std::size_t k = 0; k < count; ++k) {
            if (overflowed(read[k], out[start + k])) return start + k;
        }
    }
    return n;
}
#endif

/// n floats rounded once to bfloat16 bits; with `check`, the first overflow's index, else n.
inline std::size_t floats_to_bfloat16(const float* in, std::size_t n, std::uint16_t* out, bool check = false) noexcept {
    std::size_t i = 0;
#if defined(NPYBRIDGE_X86)
    if (cpu_has_avx2()) return floats_to_bfloat16_avx2(in, n, out, check);
#endif
#if defined(NPYBRIDGE_SSE2)
    const std::size_t bad = floats_to_bfloat16_sse2(in, n, out, check, i);
    if (bad != n) return bad;
#endif
    for (; i < n; ++i) {
        const float value = in[i];
        out[i] = bfloat16::from_float(value).bits;
        if (check && overflowed(value, out[i])) return i;
    }
    return n;
}

/// A double's bfloat16 bits rounded once: on the bits when the result is normal or overflows, else from_double.
inline std::uint16_t bfloat16_bits_of_double(double value) noexcept {
    std::uint64_t u;
    std::memcpy(&u, &value, sizeof u);
    const std::uint64_t magnitude = u & 0x7FFFFFFFFFFFFFFFu;
    const auto exponent = static_cast<unsigned>(magnitude >> 52);
    if (exponent >= 1023 - 126 && exponent <= 1023 + 127) {
        const std::uint64_t rounded = (magnitude + 0xFFFFFFFFFFFu + ((magnitude >> 45) & 1u)) >> 45;
        const std::uint64_t bits = rounded - (std::uint64_t{1023 - 127} << 7);
        return static_cast<std::uint16_t>((bits > 0x7F80u ? 0x7F80u : bits) | ((u >> 48) & 0x8000u));
    }
    return bfloat16::from_double(value).bits;
}

/// Whether 16-bit float `bits` are the overflow of a finite `value`.
inline bool overflowed(double value, std::uint16_t bits, std::uint16_t infinity) noexcept {
    std::uint64_t u;
    std::memcpy(&u, &value, sizeof u);
    return (bits & 0x7FFFu) == infinity && ((u >> 52) & 0x7FFu) != 0x7FFu;
}

#if defined(NPYBRIDGE_SSE2)
/// Two doubles rounded once on their bits to a 16-bit float (`Kept` mantissa bits, `Bias`), in each lane's low 16 bits;
/// `outside` marks lanes for the scalar path (zeros, subnormals, NaN).
template <int Kept, int Bias>
__m128i round_two_doubles(__m128i u, __m128i& outside) noexcept {
    constexpr int shift = 52 - Kept;
    const __m128i magnitude = _mm_and_si128(u, _mm_set1_epi64x(0x7FFFFFFFFFFFFFFF));
    const __m128i exponent = _mm_srli_epi64(magnitude, 52);  // < 2048: fits each lane's low half
    outside = _mm_or_si128(_mm_cmplt_epi32(exponent, _mm_set1_epi64x(1023 - Bias + 1)),
                           _mm_cmpgt_epi32(exponent, _mm_set1_epi64x(1023 + Bias)));
    const __m128i lsb = _mm_and_si128(_mm_srli_epi64(magnitude, shift), _mm_set1_epi64x(1));
    const __m128i half_unit = _mm_set1_epi64x((std::int64_t{1} << (shift - 1)) - 1);
    const __m128i rounded = _mm_srli_epi64(_mm_add_epi64(_mm_add_epi64(magnitude, half_unit), lsb), shift);
    const __m128i bits = _mm_sub_epi64(rounded, _mm_set1_epi64x(std::int64_t{1023 - Bias} << Kept));
    return _mm_or_si128(bits, _mm_and_si128(_mm_srli_epi64(u, 48), _mm_set1_epi64x(0x8000)));
}

/// The low 32 bits of each 64-bit lane of a and b.
inline __m128i low_halves(__m128i a, __m128i b) noexcept {
    return _mm_unpacklo_epi64(_mm_shuffle_epi32(a, 0x08), _mm_shuffle_epi32(b, 0x08));
}

/// doubles_to_16_bit_floats' SSE2 loop; `scalar` redoes a suspect block. The first overflow (with `check`), else n.
template <int Kept, int Bias, class Scalar>
std::size_t doubles_to_16_bits_sse2(const double* in, std::size_t n, std::uint16_t* out, Scalar scalar, bool check,
                                    std::size_t& done) noexcept {
    constexpr auto infinity = static_cast<std::uint16_t>(((1u << (15 - Kept)) - 1u) << Kept);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const auto two = [&](std::size_t k, __m128i& outside) {  // not an array: GCC keeps one in memory
            return round_two_doubles<Kept, Bias>(held(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + k))),
                                                 outside);
        };
        __m128i outside0, outside1, outside2, outside3;
        const __m128i two0 = two(0, outside0), two1 = two(2, outside1), two2 = two(4, outside2),
                      two3 = two(6, outside3);
        const __m128i bias = _mm_set1_epi32(0x8000);
        const __m128i low = _mm_sub_epi32(low_halves(two0, two1), bias);
        const __m128i high = _mm_sub_epi32(low_halves(two2, two3), bias);
        const __m128i bits = _mm_xor_si128(_mm_packs_epi32(low, high), _mm_set1_epi16(static_cast<short>(0x8000)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bits);
        __m128i suspect = _mm_or_si128(_mm_or_si128(outside0, outside1), _mm_or_si128(outside2, outside3));
        if (check) {
            const __m128i magnitude = _mm_and_si128(bits, _mm_set1_epi16(0x7FFF));
            suspect = _mm_or_si128(suspect, _mm_cmpeq_epi16(magnitude, _mm_set1_epi16(static_cast<short>(infinity))));
        }
        if (_mm_movemask_epi8(suspect) != 0) {
            for (std::size_t k = i; k < i + 8; ++k) {
                const double value = in[k];
                out[k] = scalar(value);
                if (check && overflowed(value, out[k], infinity)) {
                    done = i;
                    return k;
                }
            }
        }
    }
    done = i;
    return n;
}
#endif

/// One block as round_two_doubles; branch-free. True when a lane leaves the fast path or overflows.
template <int Kept, int Bias>
__attribute__((always_inline)) inline bool doubles_to_16_bits_block(const double* __restrict in,
                                                                    std::uint16_t* __restrict out, std::size_t count,
                                                                    bool check) noexcept {
    constexpr int shift = 52 - Kept;
    constexpr std::uint64_t infinity = ((std::uint64_t{1} << (15 - Kept)) - 1) << Kept;
    std::uint64_t suspect = 0;
    for (std::size_t i = 0; i < count; ++i) {
        std::uint64_t u;
        std::memcpy(&u, in + i, sizeof u);
        const std::uint64_t magnitude = u & 0x7FFFFFFFFFFFFFFFu;
        const std::uint64_t exponent = magnitude >> 52;
        suspect |= static_cast<std::uint64_t>(exponent - (1024 - Bias) > 2 * Bias - 1);
        const std::uint64_t rounded =
            (magnitude + ((std::uint64_t{1} << (shift - 1)) - 1) + ((magnitude >> shift) & 1)) >> shift;
        const std::uint64_t bits = rounded - (std::uint64_t{1023 - Bias} << Kept);
        suspect |= static_cast<std::uint64_t>(check) & static_cast<std::uint64_t>(bits == infinity);
        out[i] = static_cast<std::uint16_t>(bits | ((u >> 48) & 0x8000u));
    }
    return suspect != 0;
}

#if defined(NPYBRIDGE_X86)
/// doubles_to_16_bit_floats for AVX2.
template <int Kept, int Bias, class Scalar>
__attribute__((target("avx2"))) std::size_t doubles_to_16_bits_avx2(const double* in, std::size_t n, std::uint16_t* out,
                                                                    Scalar scalar, bool check) noexcept {
    constexpr auto infinity = static_cast<std::uint16_t>(((1u << (15 - Kept)) - 1u) << Kept);
    constexpr std::size_t block = 256;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t count = n - start < block ? n - start : block;
        const bool suspect = count == block
                                 ? doubles_to_16_bits_block<Kept, Bias>(in + start, out + start, block, check)
                                 : doubles_to_16_bits_block<Kept, Bias>(in + start, out + start, count, check);
        if (!suspect) continue;
        for (std::size_t k = start; k < start + count; ++k) {
            const double value = in[k];
            out[k] = scalar(value);
            if (check && overflowed(value, out[k], infinity)) return k;
        }
    }
    return n;
}
#endif

/// n doubles rounded once into 16-bit floats; with `check`, the first overflow's index, else n.
template <int Kept, int Bias, class Scalar>
std::size_t doubles_to_16_bit_floats(const double* in, std::size_t n, std::uint16_t* out, Scalar scalar,
                                     bool check) noexcept {
    constexpr auto infinity = static_cast<std::uint16_t>(((1u << (15 - Kept)) - 1u) << Kept);
    std::size_t i = 0;
#if defined(NPYBRIDGE_X86)
    if (cpu_has_avx2()) return doubles_to_16_bits_avx2<Kept, Bias>(in, n, out, scalar, check);
#endif
#if defined(NPYBRIDGE_SSE2)
    const std::size_t bad = doubles_to_16_bits_sse2<Kept, Bias>(in, n, out, scalar, check, i);
    if (bad != n) return bad;
#endif
    for (; i < n; ++i) {
        const double value = in[i];
        out[i] = scalar(value);
        if (check && overflowed(value, out[i], infinity)) return i;
    }
    return n;
}

/// n doubles rounded once to bfloat16 bits; with `check`, the first overflow's index, else n.
inline std::size_t doubles_to_bfloat16(const double* in, std::size_t n, std::uint16_t* out,
                                       bool check = false) noexcept {
    return doubles_to_16_bit_floats<7, 127>(in, n, out, bfloat16_bits_of_double, check);
}

/// n bfloat16 values widened to floats, exactly.
inline void bfloat16_to_floats(const std::uint16_t* in, std::size_t n, float* out) noexcept {
    std::size_t i = 0;
#if defined(NPYBRIDGE_SSE2)
    for (; i + 8 <= n; i += 8) {
        const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_unpacklo_epi16(_mm_setzero_si128(), bits));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 4), _mm_unpackhi_epi16(_mm_setzero_si128(), bits));
    }
#endif
    for (; i < n; ++i) out[i] = bfloat16{in[i]}.to_float();
}

}  // namespace detail
}  // namespace npybridge
