// npybridge/core/detail/half_kernels.hpp — float32 <-> float16 with NumPy's bits, F16C when present.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/bfloat16_kernels.hpp>
#include <npybridge/core/detail/simd.hpp>
#include <npybridge/core/scalar_types.hpp>

#if defined(NPYBRIDGE_X86)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// A float's half bits as NumPy's cast gives them (nearest even, overflow to infinity, NaN's top payload kept).
inline std::uint16_t half_bits_like_numpy(float value) noexcept {
    const std::uint32_t u = bits_of(value);
    const std::uint32_t magnitude = u & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) {
        auto bits = static_cast<std::uint16_t>(0x7C00u | ((magnitude & 0x7FFFFFu) >> 13));
        if (bits == 0x7C00u) bits |= 1u;
        return static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | bits);
    }
    return half::from_float(value).bits;
}

/// A double's half bits rounded once from the double, as NumPy gives them.
inline std::uint16_t half_bits_of_double(double value) noexcept {
    std::uint64_t u;
    std::memcpy(&u, &value, sizeof u);
    const auto sign = static_cast<std::uint16_t>((u >> 48) & 0x8000u);
    const std::uint64_t magnitude = u & 0x7FFFFFFFFFFFFFFFu;
    const auto exponent = static_cast<int>(magnitude >> 52);
    if (exponent == 0x7FF) {
        if ((magnitude & 0xFFFFFFFFFFFFFu) == 0) return static_cast<std::uint16_t>(sign | 0x7C00u);
        auto bits = static_cast<std::uint16_t>(0x7C00u | ((magnitude & 0xFFFFFFFFFFFFFu) >> 42));
        if (bits == 0x7C00u) bits |= 1u;
        return static_cast<std::uint16_t>(sign | bits);
    }
    if (exponent >= 1023 - 14) {  // normal, or infinity once rounding carries
        const std::uint64_t rounded = (magnitude + 0x1FFFFFFFFFFu + ((magnitude >> 42) & 1u)) >> 42;
        const std::uint64_t bits = rounded - (std::uint64_t{1023 - 15} << 10);
        return static_cast<std::uint16_t>(sign | (bits >= 0x7C00u ? 0x7C00u : bits));
    }
    if (exponent == 0) return sign;  // far below half a half subnormal
    const std::uint64_t mantissa = (magnitude & 0xFFFFFFFFFFFFFu) | (std::uint64_t{1} << 52);
    return static_cast<std::uint16_t>(sign | shift_rounded(mantissa, 1051 - exponent));  // units of 2^-24
}

/// n doubles rounded once to half bits; with `check`, the first overflow's index, else n.
inline std::size_t doubles_to_half(const double* in, std::size_t n, std::uint16_t* out, bool check = false) noexcept {
    return doubles_to_16_bit_floats<10, 15>(in, n, out, half_bits_of_double, check);
}

/// Whether a float's half is infinite or NaN: NaN, or at least 65520 in magnitude.
inline bool half_is_special(float value) noexcept { return !(std::fabs(value) < 65520.0f); }

/// Whether a half came out infinite or NaN.
using floats_to_half_fn = bool (*)(const float*, std::size_t, std::uint16_t*);
using half_to_floats_fn = void (*)(const std::uint16_t*, std::size_t, float*);

inline bool floats_to_half_portable(const float* in, std::size_t n, std::uint16_t* out) noexcept {
    bool special = false;
    for (std::size_t i = 0; i < n; ++i) {
        const float value = in[i];
        out[i] = half_bits_like_numpy(value);
        special |= half_is_special(value);
    }
    return special;
}

/// Exact (a NaN's payload moved up, as NumPy).
inline void half_to_floats_portable(const std::uint16_t* in, std::size_t n, float* out) noexcept {
    for (std::size_t i = 0; i < n; ++i) out[i] = half{in[i]}.to_float();
}

#if defined(NPYBRIDGE_X86)
/// F16C's vcvtps2ph, eight a step; eight with a special half go the portable way (keeps signalling NaNs).
__attribute__((target("avx,f16c"))) inline bool floats_to_half_f16c(const float* in, std::size_t n,
                                                                    std::uint16_t* out) noexcept {
    const npybridge_v8f high = npybridge_v8f{} + 65520.0f, low = -high;
    std::size_t i = 0;
    bool special = false;
    for (; i + 8 <= n; i += 8) {
        npybridge_v8f x;
        std::memcpy(&x, in + i, sizeof x);
        x = held_wide(x);
        const npybridge_v8hi h = __builtin_ia32_vcvtps2ph256(x, 0);
        std::memcpy(out + i, &h, sizeof h);
        // 5: not less, 10: not greater (NaN: true)
        if ((__builtin_ia32_movmskps256(__builtin_ia32_cmpps256(x, high, 5)) |
             __builtin_ia32_movmskps256(__builtin_ia32_cmpps256(x, low, 10))) != 0) {
            special |= floats_to_half_portable(in + i, 8, out + i);
        }
    }
    return floats_to_half_portable(in + i, n - i, out + i) || special;
}

/// F16C's vcvtph2ps, exact; NaN blocks the portable way (payload kept).
__attribute__((target("avx,f16c"))) inline void half_to_floats_f16c(const std::uint16_t* in, std::size_t n,
                                                                    float* out) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        npybridge_v8hi h;
        std::memcpy(&h, in + i, sizeof h);
        const npybridge_v8f x = __builtin_ia32_vcvtph2ps256(h);
        std::memcpy(out + i, &x, sizeof x);
        if (__builtin_ia32_movmskps256(__builtin_ia32_cmpps256(x, x, 3)) != 0) {
            half_to_floats_portable(in + i, 8, out + i);
        }
    }
    half_to_floats_portable(in + i, n - i, out + i);
}
#endif

/// The float <-> half kernels this CPU runs.
struct half_kernels {
    floats_to_half_fn to_half;
    half_to_floats_fn to_float;
    const char* name;
};

#if defined(NPYBRIDGE_X86)
/// Whether the CPU has F16C (CPUID 1, ECX bit 29), asked directly.
inline bool cpu_has_f16c() noexcept {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
}
#endif

inline half_kernels choose_half_kernels() noexcept {
#if defined(NPYBRIDGE_X86)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx") && cpu_has_f16c() && !simd_baseline_only()) {  // avx: the OS keeps YMM
        return {floats_to_half_f16c, half_to_floats_f16c, "f16c"};
    }
#endif
    return {floats_to_half_portable, half_to_floats_portable, "portable"};
}

inline const half_kernels& active_half_kernels() noexcept {
    static const half_kernels kernels = choose_half_kernels();
    return kernels;
}

/// Whether a bfloat16 holds the integer exactly: at most eight significant bits.
template <class Int>
bool bfloat16_holds(Int value) noexcept {
    auto magnitude = static_cast<std::uint64_t>(value);
    if constexpr (std::is_signed_v<Int>) {
        if (value < 0) magnitude = std::uint64_t{0} - magnitude;
    }
    return magnitude == 0 || (magnitude >> __builtin_ctzll(magnitude)) < 256;
}

/// A block of integers widened and checked by loops the compiler vectorizes (a whole block: a constant trip count).
template <class Int, std::size_t Block>
struct integer_block {
    /// The integers as floats, each read once; whether all are exact: in [-2^24, 2^24), or below 2^24 unsigned.
    template <std::size_t M = Block>
    static bool widen_exact(const Int* in, float* out, std::size_t m = M) noexcept {
        using Bits = std::make_unsigned_t<Int>;
        constexpr Bits offset = std::is_signed_v<Int> && sizeof(Int) > 2 ? Bits{1} << 24 : 0;
        constexpr int shift = std::is_signed_v<Int> ? 25 : 24;
        Bits seen = 0;
        for (std::size_t i = 0; i < m; ++i) {
            const Int value = in[i];
            out[i] = static_cast<float>(value);
            if constexpr (sizeof(Int) > 2) seen |= static_cast<Bits>(static_cast<Bits>(value) + offset);
        }
        if constexpr (sizeof(Int) <= 2) return true;
        return (seen >> shift) == 0;
    }
    template <std::size_t M = Block, class Real>
    static void widen(const Int* values, Real* out, std::size_t m = M) noexcept {
        for (std::size_t i = 0; i < m; ++i) out[i] = static_cast<Real>(values[i]);
    }
    /// Whether every float (a whole number) is exact in float16 (13 low bits clear, at most 65504) or bfloat16.
    template <std::size_t M = Block>
    static bool all_held(const float* values, bool to_half, std::size_t m = M) noexcept {
        const std::uint32_t low = to_half ? 0x1FFFu : 0xFFFFu;
        const std::uint32_t largest = to_half ? 0x477FE000u : 0x7F7F0000u;  // 65504, bfloat16's largest
        std::uint32_t lost = 0, past = 0;
        for (std::size_t i = 0; i < m; ++i) {
            std::uint32_t bits;
            std::memcpy(&bits, values + i, 4);
            lost |= bits & low;
            past |= static_cast<std::uint32_t>((bits & 0x7FFFFFFFu) > largest);
        }
        return (lost | past) == 0;
    }
};

#if defined(NPYBRIDGE_SSE2)
/// Eight integers of up to 32 bits as two vectors of int32, sign- or zero-extended.
template <class Int>
inline void load_eight_as_int32(const Int* in, __m128i& a, __m128i& b) noexcept {
    if constexpr (sizeof(Int) == 4) {
        a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
        b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4));
        return;
    } else {
        __m128i v;
        if constexpr (sizeof(Int) == 2) {
            v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
        } else {
            const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in));
            v = std::is_signed_v<Int> ? _mm_srai_epi16(_mm_unpacklo_epi8(bytes, bytes), 8)
                                      : _mm_unpacklo_epi8(bytes, _mm_setzero_si128());
        }
        const bool zero_extend = !std::is_signed_v<Int> && sizeof(Int) == 2;
        a = zero_extend ? _mm_unpacklo_epi16(v, _mm_setzero_si128()) : _mm_srai_epi32(_mm_unpacklo_epi16(v, v), 16);
        b = zero_extend ? _mm_unpackhi_epi16(v, _mm_setzero_si128()) : _mm_srai_epi32(_mm_unpackhi_epi16(v, v), 16);
    }
}

/// Integers into bfloat16 bits, eight a step, while every value is exact in float32 (and, with `exact`, in
/// bfloat16): how many it did. The caller does the rest.
template <class Int>
std::size_t integers_to_bfloat16_sse2(const Int* in, std::size_t n, std::uint16_t* out, bool exact) noexcept {
    const __m128i lo = _mm_set1_epi32(-(1 << 24)), hi = _mm_set1_epi32(1 << 24);
    const __m128i low_half = _mm_set1_epi32(0xFFFF), bias = _mm_set1_epi32(0x7FFF), one = _mm_set1_epi32(1);
    const auto rounded = [&](__m128i f) {  // nearest even, as bfloat16::from_float (no NaN here)
        return _mm_add_epi32(f, _mm_add_epi32(bias, _mm_and_si128(_mm_srli_epi32(f, 16), one)));
    };
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i a, b;
        load_eight_as_int32(in + i, a, b);
        if constexpr (sizeof(Int) == 4) {  // narrower integers are all below 2^24
            const __m128i big = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi32(a, lo), _mm_cmpgt_epi32(a, hi)),
                                             _mm_or_si128(_mm_cmplt_epi32(b, lo), _mm_cmpgt_epi32(b, hi)));
            if (_mm_movemask_epi8(big) != 0) break;
        }
        __m128i fa = _mm_castps_si128(_mm_cvtepi32_ps(a)), fb = _mm_castps_si128(_mm_cvtepi32_ps(b));
        if (exact) {
            const __m128i lost = _mm_or_si128(_mm_and_si128(fa, low_half), _mm_and_si128(fb, low_half));
            if (_mm_movemask_epi8(_mm_cmpeq_epi32(lost, _mm_setzero_si128())) != 0xFFFF) break;
        } else {
            fa = rounded(fa);
            fb = rounded(fb);
        }
        // The top halves, sign-extended, fit int16: the signed pack keeps their bits.
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                         _mm_packs_epi32(_mm_srai_epi32(fa, 16), _mm_srai_epi32(fb, 16)));
    }
    return i;
}
#endif

#if defined(NPYBRIDGE_X86)
/// integers_to_bfloat16_sse2 for AVX2, 16 a step.
template <class Int>
__attribute__((target("avx2"))) std::size_t integers_to_bfloat16_avx2(const Int* in, std::size_t n, std::uint16_t* out,
                                                                      bool exact) noexcept {
    typedef Int lanes __attribute__((vector_size(8 * sizeof(Int))));
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        lanes a, b;
        std::memcpy(&a, in + i, sizeof a);
        std::memcpy(&b, in + i + 8, sizeof b);
        if constexpr (sizeof(Int) == 4) {  // narrower integers are all below 2^24
            a = held_wide(a);
            b = held_wide(b);
            const auto big = (a < -(1 << 24)) | (a > (1 << 24)) | (b < -(1 << 24)) | (b > (1 << 24));
            if (!__builtin_ia32_ptestz256(reinterpret_cast<npybridge_v4q>(big), reinterpret_cast<npybridge_v4q>(big)))
                break;
        }
        const npybridge_v8f float_a = __builtin_convertvector(a, npybridge_v8f),
                            float_b = __builtin_convertvector(b, npybridge_v8f);
        npybridge_v8u bits_a, bits_b;
        std::memcpy(&bits_a, &float_a, sizeof bits_a);
        std::memcpy(&bits_b, &float_b, sizeof bits_b);
        if (exact) {
            const npybridge_v8u lost = (bits_a | bits_b) & 0xFFFFu;
            if (!__builtin_ia32_ptestz256(reinterpret_cast<npybridge_v4q>(lost), reinterpret_cast<npybridge_v4q>(lost)))
                break;
        } else {  // nearest even, as bfloat16::from_float (no NaN here)
            bits_a += 0x7FFFu + ((bits_a >> 16) & 1u);
            bits_b += 0x7FFFu + ((bits_b >> 16) & 1u);
        }
        const auto words = __builtin_ia32_packusdw256(reinterpret_cast<npybridge_v8i>(bits_a >> 16),
                                                      reinterpret_cast<npybridge_v8i>(bits_b >> 16));
        const npybridge_v4q ordered = __builtin_ia32_permdi256(reinterpret_cast<npybridge_v4q>(words), 0xD8);
        std::memcpy(out + i, &ordered, sizeof ordered);
    }
    return i;
}

/// Integers of up to 16 bits, or int32, into float16 bits, eight a step (AVX2 and F16C): widened to float (exact below
/// 2^24), rounded once. With `exact`, stops before eight holding a value float16 does not (low mantissa bits set, or
/// past 65504): how many it did.
template <class Int>
__attribute__((target("avx2,f16c"))) std::size_t integers_to_half_avx2(const Int* in, std::size_t n, std::uint16_t* out,
                                                                       bool exact) noexcept {
    typedef Int lanes __attribute__((vector_size(8 * sizeof(Int))));
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        lanes values;
        std::memcpy(&values, in + i, sizeof values);
        const npybridge_v8f floats = __builtin_convertvector(values, npybridge_v8f);
        if (exact) {
            npybridge_v8i bits;
            std::memcpy(&bits, &floats, sizeof bits);
            const npybridge_v8i unheld = (bits & 0x1FFF) | ((bits & 0x7FFFFFFF) > 0x477FE000);
            if (!__builtin_ia32_ptestz256(reinterpret_cast<npybridge_v4q>(unheld),
                                          reinterpret_cast<npybridge_v4q>(unheld)))
                break;
        }
        const npybridge_v8hi half = __builtin_ia32_vcvtps2ph256(floats, 0);
        std::memcpy(out + i, &half, sizeof half);
    }
    return i;
}
#endif

/// One block of integers into float16 / bfloat16 bits: from `narrow` (the block as floats) when `small`, else through
/// `wide` doubles; bfloat16 rounds the integer itself past 2^53.
template <class Int, std::size_t Block>
void block_to_16_bit_floats(const Int* values, std::size_t m, std::uint16_t* bits, bool to_half, bool small,
                            float* narrow, double* wide) noexcept {
    using blocks = integer_block<Int, Block>;
    if (small) {
        if (to_half) {
            active_half_kernels().to_half(narrow, m, bits);
        } else {
            floats_to_bfloat16(narrow, m, bits);
        }
        return;
    }
    blocks::widen(values, wide, m);
    if (to_half) {
        doubles_to_half(wide, m, bits);
    } else {
        doubles_to_bfloat16(wide, m, bits);
    }
    if constexpr (sizeof(Int) == 8) {
        for (std::size_t i = 0; i < m; ++i) {
            if (!to_half && !(std::fabs(wide[i]) < 9007199254740992.0))
                bits[i] = bfloat16::from_integer(values[i]).bits;
        }
    }
}

/// The first of a block's values its bits do not hold (an overflow included), else m.
template <class Int>
std::size_t first_changed(const Int* values, std::size_t m, const std::uint16_t* bits, bool to_half, bool small,
                          const float* narrow, const double* wide, float* back) noexcept {
    if (to_half) {
        active_half_kernels().to_float(bits, m, back);
    } else {
        bfloat16_to_floats(bits, m, back);
    }
    for (std::size_t i = 0; i < m; ++i) {
        const bool beyond = sizeof(Int) == 8 && !small && !(std::fabs(wide[i]) < 9007199254740992.0);  // 2^53
        const bool held =
            small ? back[i] == narrow[i]
                  : static_cast<double>(back[i]) == wide[i] && !(beyond && (to_half || !bfloat16_holds(values[i])));
        if (!held) return i;
    }
    return m;
}

/// Integers into float16 (`to_half`) or bfloat16 bits, rounded once to nearest even, a block at a time. With `exact`,
/// the index of the first value that changes (overflow included), else n.
template <class Int>
std::size_t integers_to_16_bit_floats(const Int* in, std::size_t n, std::uint16_t* out, bool to_half,
                                      bool exact) noexcept {
    constexpr std::size_t block = 512;
    using blocks = integer_block<Int, block>;
    float narrow[block], back[block];
    double wide[block];
    std::size_t start = 0;
#if defined(NPYBRIDGE_SSE2)
    if constexpr (sizeof(Int) < 4 || std::is_same_v<Int, std::int32_t>) {
        if (!to_half)
            start = cpu_has_avx2() ? integers_to_bfloat16_avx2(in, n, out, exact)
                                   : integers_to_bfloat16_sse2(in, n, out, exact);
        if (to_half && cpu_has_avx2() && active_half_kernels().to_half == floats_to_half_f16c)
            start = integers_to_half_avx2(in, n, out, exact);
    }
#endif
    Int values[block];  // a block past float32, read once
    for (std::size_t at = start; at < n; at += block) {
        const std::size_t m = std::min(block, n - at);
        const bool small = m == block ? blocks::widen_exact(in + at, narrow) : blocks::widen_exact(in + at, narrow, m);
        if (!small) std::memcpy(values, in + at, m * sizeof(Int));
        const Int* copied = small ? nullptr : values;  // read only when not small
        block_to_16_bit_floats<Int, block>(copied, m, out + at, to_half, small, narrow, wide);
        if (!exact ||
            (small && (m == block ? blocks::all_held(narrow, to_half) : blocks::all_held(narrow, to_half, m)))) {
            continue;
        }
        const std::size_t changed = first_changed(copied, m, out + at, to_half, small, narrow, wide, back);
        if (changed != m) return at + changed;
    }
    return n;
}

}  // namespace detail
}  // namespace npybridge
