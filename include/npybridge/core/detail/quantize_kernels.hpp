// npybridge/core/detail/quantize_kernels.hpp — whole arrays quantized and dequantized, as the scalar functions do.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/simd.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// MegDNN's quantization: q = clamp(round_half_away(x / scale) + zero_point, lo, hi), NaN -> lo, in float
/// (QuantizedS32's hi: 2147483520).
struct quantize_rule {
    float scale;
    float zero_point;
    float lo;
    float hi;

    std::int32_t operator()(float value) const noexcept {
        float q = std::round(value / scale) + zero_point;
        if (std::isnan(q)) q = lo;
        q = q < lo ? lo : (q > hi ? hi : q);
        return static_cast<std::int32_t>(q);
    }
};

#if defined(NPYBRIDGE_SSE2)
/// quantize_rule on four values; the quotient clamped to [-2^31, 2147483520] (NaN to -2^31, then lo) to fit int32.
inline __m128i quantize_four(__m128 x, const quantize_rule& rule) noexcept {
    const __m128 sign = _mm_set1_ps(-0.0f);
    __m128 v = _mm_div_ps(x, _mm_set1_ps(rule.scale));
    v = _mm_min_ps(_mm_max_ps(v, _mm_set1_ps(-2147483648.0f)), _mm_set1_ps(2147483520.0f));
    __m128 t = _mm_cvtepi32_ps(_mm_cvttps_epi32(v));
    const __m128 away = _mm_cmpge_ps(_mm_andnot_ps(sign, _mm_sub_ps(v, t)), _mm_set1_ps(0.5f));
    t = _mm_add_ps(t, _mm_and_ps(away, _mm_or_ps(_mm_and_ps(v, sign), _mm_set1_ps(1.0f))));
    __m128 q = _mm_add_ps(t, _mm_set1_ps(rule.zero_point));
    q = _mm_min_ps(_mm_max_ps(q, _mm_set1_ps(rule.lo)), _mm_set1_ps(rule.hi));
    return _mm_cvttps_epi32(q);
}

/// Sixteen codes from four int32 vectors, stored as Code (already in range).
template <class Code>
__attribute__((always_inline)) inline void store_codes(__m128i q0, __m128i q1, __m128i q2, __m128i q3,
                                                       Code* out) noexcept {
    auto* to = reinterpret_cast<__m128i*>(out);
    if constexpr (sizeof(Code) == 4) {
        _mm_storeu_si128(to, q0);
        _mm_storeu_si128(to + 1, q1);
        _mm_storeu_si128(to + 2, q2);
        _mm_storeu_si128(to + 3, q3);
    } else if constexpr (sizeof(Code) == 2) {
        _mm_storeu_si128(to, _mm_packs_epi32(q0, q1));
        _mm_storeu_si128(to + 1, _mm_packs_epi32(q2, q3));
    } else if constexpr (std::is_signed_v<Code>) {
        _mm_storeu_si128(to, _mm_packs_epi16(_mm_packs_epi32(q0, q1), _mm_packs_epi32(q2, q3)));
    } else {
        _mm_storeu_si128(to, _mm_packus_epi16(_mm_packs_epi32(q0, q1), _mm_packs_epi32(q2, q3)));
    }
}

/// Sixteen codes from sixteen floats.
template <class Code>
void store_sixteen(const float* in, const quantize_rule& rule, Code* out) noexcept {
    store_codes(quantize_four(_mm_loadu_ps(in), rule), quantize_four(_mm_loadu_ps(in + 4), rule),
                quantize_four(_mm_loadu_ps(in + 8), rule), quantize_four(_mm_loadu_ps(in + 12), rule), out);
}
#endif

#if defined(NPYBRIDGE_X86)
/// A quantize_rule in eight lanes.
struct quantize_lanes {
    npybridge_v8f scale, zero_point, lo, hi;
};

/// quantize_four on eight lanes (AVX2).
__attribute__((target("avx2"), always_inline)) inline npybridge_v8i quantize_eight(
    npybridge_v8f x, const quantize_lanes& rule) noexcept {
    const npybridge_v8f zero{}, lowest = zero - 2147483648.0f, highest = zero + 2147483520.0f;
    npybridge_v8f v = x / rule.scale;
    v = __builtin_ia32_minps256(__builtin_ia32_maxps256(v, lowest), highest);
    npybridge_v8f t = __builtin_ia32_roundps256(v, 0xB);  // truncated
    const npybridge_v8i rest = reinterpret_cast<npybridge_v8i>(v - t) & 0x7FFFFFFF;
    const npybridge_v8i away = reinterpret_cast<npybridge_v8f>(rest) >= zero + 0.5f;
    const npybridge_v8i step = (reinterpret_cast<npybridge_v8i>(v) & static_cast<std::int32_t>(0x80000000u)) |
                               reinterpret_cast<npybridge_v8i>(zero + 1.0f);
    t = t + reinterpret_cast<npybridge_v8f>(away & step);
    const npybridge_v8f q = __builtin_ia32_minps256(__builtin_ia32_maxps256(t + rule.zero_point, rule.lo), rule.hi);
    return __builtin_convertvector(q, npybridge_v8i);
}

/// The low (Half 0) or high (Half 1) four lanes.
template <int Half>
__attribute__((target("avx2"), always_inline)) inline __m128i half_lanes(npybridge_v8i lanes) noexcept {
    typedef long long v4q __attribute__((vector_size(32)));
    return reinterpret_cast<__m128i>(__builtin_ia32_extract128i256(reinterpret_cast<v4q>(lanes), Half));
}

/// quantize_floats for AVX2.
template <class Code>
__attribute__((target("avx2"))) void quantize_floats_avx2(const float* in, std::size_t n, const quantize_rule& rule,
                                                          Code* out) noexcept {
    const npybridge_v8f zero{};
    const quantize_lanes lanes{zero + rule.scale, zero + rule.zero_point, zero + rule.lo, zero + rule.hi};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        npybridge_v8f low, high;  // one load each
        std::memcpy(&low, in + i, sizeof low);
        std::memcpy(&high, in + i + 8, sizeof high);
        const npybridge_v8i low_codes = quantize_eight(low, lanes), high_codes = quantize_eight(high, lanes);
        store_codes(half_lanes<0>(low_codes), half_lanes<1>(low_codes), half_lanes<0>(high_codes),
                    half_lanes<1>(high_codes), out + i);
    }
    for (; i < n; ++i) out[i] = static_cast<Code>(rule(in[i]));
}
#endif

/// quantize_floats for SSE2.
template <class Code>
void quantize_floats_sse2(const float* in, std::size_t n, const quantize_rule& rule, Code* out) noexcept {
    std::size_t i = 0;
#if defined(NPYBRIDGE_SSE2)
    for (; i + 16 <= n; i += 16) store_sixteen(in + i, rule, out + i);
#endif
    for (; i < n; ++i) out[i] = static_cast<Code>(rule(in[i]));
}

/// n floats into codes as `rule` makes one (AVX2 when present).
template <class Code>
void quantize_floats(const float* in, std::size_t n, const quantize_rule& rule, Code* out) noexcept {
#if defined(NPYBRIDGE_X86)
    if (cpu_has_avx2()) return quantize_floats_avx2(in, n, rule, out);
#endif
    quantize_floats_sse2(in, n, rule, out);
}

/// (code - zero_point) * scale in float, for n codes.
template <class Code>
void dequantize_codes(const Code* in, std::size_t n, std::int32_t zero_point, float scale, float* out) noexcept {
    std::size_t i = 0;
#if defined(NPYBRIDGE_SSE2)
    const __m128i zero = _mm_set1_epi32(zero_point);
    const __m128 factor = _mm_set1_ps(scale);
    const auto four = [&](__m128i codes, float* to) {
        _mm_storeu_ps(to, _mm_mul_ps(_mm_cvtepi32_ps(_mm_sub_epi32(codes, zero)), factor));
    };
    if constexpr (sizeof(Code) == 1) {
        for (; i + 16 <= n; i += 16) {
            const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
            const __m128i low = std::is_signed_v<Code> ? _mm_srai_epi16(_mm_unpacklo_epi8(bytes, bytes), 8)
                                                       : _mm_unpacklo_epi8(bytes, _mm_setzero_si128());
            const __m128i high = std::is_signed_v<Code> ? _mm_srai_epi16(_mm_unpackhi_epi8(bytes, bytes), 8)
                                                        : _mm_unpackhi_epi8(bytes, _mm_setzero_si128());
            four(_mm_srai_epi32(_mm_unpacklo_epi16(low, low), 16), out + i);
            four(_mm_srai_epi32(_mm_unpackhi_epi16(low, low), 16), out + i + 4);
            four(_mm_srai_epi32(_mm_unpacklo_epi16(high, high), 16), out + i + 8);
            four(_mm_srai_epi32(_mm_unpackhi_epi16(high, high), 16), out + i + 12);
        }
    } else if constexpr (sizeof(Code) == 2) {
        for (; i + 8 <= n; i += 8) {
            const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
            four(_mm_srai_epi32(_mm_unpacklo_epi16(halves, halves), 16), out + i);
            four(_mm_srai_epi32(_mm_unpackhi_epi16(halves, halves), 16), out + i + 4);
        }
    } else {
        for (; i + 4 <= n; i += 4) four(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)), out + i);
    }
#endif
    for (; i < n; ++i) out[i] = static_cast<float>(static_cast<std::int32_t>(in[i]) - zero_point) * scale;
}

}  // namespace detail
}  // namespace npybridge
