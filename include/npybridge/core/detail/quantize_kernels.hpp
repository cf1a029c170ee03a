// npybridge/core/detail/quantize_kernels.hpp — whole arrays quantized and dequantized with MegDNN's arithmetic,
// bit for bit the scalar quantize / dequantize. Python-free.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/simd.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// MegDNN's quantization of one dtype: q = clamp(round_half_away(x / scale) + zero_point, lo, hi), NaN -> lo,
/// all in float (QuantizedS32's hi is 2147483520, the largest float below 2^31).
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
/// Four values at once, the same operations as quantize_rule: x / scale, rounded half away from zero
/// (truncated, then one step away when the rest is at least 0.5), + zero_point, clamped, NaN -> lo. The
/// quotient is clamped to [-2^31, 2147483520] first so that truncation fits an int32; rounding is monotonic,
/// so the clamp after it gives what it gives for the unclamped quotient.
inline __m128i quantize_four(__m128 x, const quantize_rule& rule) noexcept {
    const __m128 sign = _mm_set1_ps(-0.0f);
    __m128 v = _mm_div_ps(x, _mm_set1_ps(rule.scale));
    const __m128 nan = _mm_cmpunord_ps(v, v);
    v = _mm_min_ps(_mm_max_ps(v, _mm_set1_ps(-2147483648.0f)), _mm_set1_ps(2147483520.0f));
    __m128 t = _mm_cvtepi32_ps(_mm_cvttps_epi32(v));
    const __m128 away = _mm_cmpge_ps(_mm_andnot_ps(sign, _mm_sub_ps(v, t)), _mm_set1_ps(0.5f));
    t = _mm_add_ps(t, _mm_and_ps(away, _mm_or_ps(_mm_and_ps(v, sign), _mm_set1_ps(1.0f))));
    __m128 q = _mm_add_ps(t, _mm_set1_ps(rule.zero_point));
    q = _mm_min_ps(_mm_max_ps(q, _mm_set1_ps(rule.lo)), _mm_set1_ps(rule.hi));
    q = _mm_or_ps(_mm_and_ps(nan, _mm_set1_ps(rule.lo)), _mm_andnot_ps(nan, q));
    return _mm_cvttps_epi32(q);
}

/// Sixteen codes from sixteen floats, stored as Code (values already in Code's range: saturation changes none).
template <class Code>
void store_sixteen(const float* in, const quantize_rule& rule, Code* out) noexcept {
    const __m128i a = quantize_four(_mm_loadu_ps(in), rule), b = quantize_four(_mm_loadu_ps(in + 4), rule);
    const __m128i c = quantize_four(_mm_loadu_ps(in + 8), rule), d = quantize_four(_mm_loadu_ps(in + 12), rule);
    auto* to = reinterpret_cast<__m128i*>(out);
    if constexpr (sizeof(Code) == 4) {
        _mm_storeu_si128(to, a);
        _mm_storeu_si128(to + 1, b);
        _mm_storeu_si128(to + 2, c);
        _mm_storeu_si128(to + 3, d);
    } else if constexpr (sizeof(Code) == 2) {
        _mm_storeu_si128(to, _mm_packs_epi32(a, b));
        _mm_storeu_si128(to + 1, _mm_packs_epi32(c, d));
    } else if constexpr (std::is_signed_v<Code>) {
        _mm_storeu_si128(to, _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d)));
    } else {
        _mm_storeu_si128(to, _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d)));
    }
}
#endif

/// n floats quantized into codes of type Code (int8 / uint8 / int16 / int32), as `rule` does one.
template <class Code>
void quantize_floats(const float* in, std::size_t n, const quantize_rule& rule, Code* out) noexcept {
    std::size_t i = 0;
#if defined(NPYBRIDGE_SSE2)
    for (; i + 16 <= n; i += 16) store_sixteen(in + i, rule, out + i);
#endif
    for (; i < n; ++i) out[i] = static_cast<Code>(rule(in[i]));
}

/// (code - zero_point) * scale in float, MegDNN's dequantization, for n codes.
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
