// npybridge/core/detail/lowbit_kernels.hpp — pack / unpack loops for 1-, 2- and 4-bit dtypes: portable and SSSE3.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/simd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// One form for every coding (docs/lowbit.md): t = (uint8)(v + bias) is valid when (t & invalid) == 0, its code ((t >>
/// shift) ^ flip) & code_mask; decode[code] decodes.
struct lowbit_codec {
    unsigned bits;  ///< 1, 2 or 4
    std::uint8_t bias;
    std::uint8_t invalid;
    std::uint8_t shift;
    std::uint8_t flip;
    std::uint8_t code_mask;
    std::array<std::int8_t, 16> decode;  ///< each code's value
};

/// Packs `count` elements as one stream from bit 0 of dst (unused last bits 0); false on an invalid value (dst partly
/// written). No access past the ends.
using pack_fn = bool (*)(const lowbit_codec&, const std::uint8_t* src, std::size_t count, std::uint8_t* dst);
using unpack_fn = void (*)(const lowbit_codec&, const std::uint8_t* src, std::size_t count, std::uint8_t* dst);

inline std::uint8_t encode(const lowbit_codec& c, std::uint8_t value, std::uint8_t& bad) noexcept {
    const auto t = static_cast<std::uint8_t>(value + c.bias);
    bad |= static_cast<std::uint8_t>(t & c.invalid);
    return static_cast<std::uint8_t>(((t >> c.shift) ^ c.flip) & c.code_mask);
}

/// Scalar packing from element `first` of a byte-aligned run.
inline bool pack_scalar(const lowbit_codec& c, const std::uint8_t* src, std::size_t count, std::uint8_t* dst) {
    const unsigned per_byte = 8 / c.bits;
    std::uint8_t bad = 0;
    std::size_t i = 0;
    for (; i + per_byte <= count; i += per_byte) {
        unsigned byte = 0;
        for (unsigned k = 0; k < per_byte; ++k)
            byte |= static_cast<unsigned>(encode(c, src[i + k], bad)) << (k * c.bits);
        *dst++ = static_cast<std::uint8_t>(byte);
    }
    if (i < count) {
        unsigned byte = 0;
        for (unsigned k = 0; i + k < count; ++k)
            byte |= static_cast<unsigned>(encode(c, src[i + k], bad)) << (k * c.bits);
        *dst = static_cast<std::uint8_t>(byte);
    }
    return bad == 0;
}

inline void unpack_scalar(const lowbit_codec& c, const std::uint8_t* src, std::size_t count, std::uint8_t* dst) {
    const unsigned per_byte = 8 / c.bits;
    const unsigned mask = (1u << c.bits) - 1u;
    std::size_t i = 0;
    for (; i + per_byte <= count; i += per_byte) {
        const unsigned byte = *src++;
        for (unsigned k = 0; k < per_byte; ++k)
            dst[i + k] = static_cast<std::uint8_t>(c.decode[(byte >> (k * c.bits)) & mask]);
    }
    if (i < count) {
        const unsigned byte = *src;
        for (unsigned k = 0; i + k < count; ++k)
            dst[i + k] = static_cast<std::uint8_t>(c.decode[(byte >> (k * c.bits)) & mask]);
    }
}

#if defined(NPYBRIDGE_X86)

// SSSE3: packing is a tree of pmaddubsw + packuswb doubling field width per level; unpacking halves and interleaves,
// then pshufb maps codes.

struct ssse3_codec {
    __m128i bias, invalid, flip, code_mask, decode;
    __m128i shift;
};

__attribute__((target("ssse3"))) inline ssse3_codec make_ssse3_codec(const lowbit_codec& c) {
    ssse3_codec v;
    v.bias = _mm_set1_epi8(static_cast<char>(c.bias));
    v.invalid = _mm_set1_epi8(static_cast<char>(c.invalid));
    v.flip = _mm_set1_epi8(static_cast<char>(c.flip));
    v.code_mask = _mm_set1_epi8(static_cast<char>(c.code_mask));
    v.decode = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c.decode.data()));
    v.shift = _mm_cvtsi32_si128(c.shift);
    return v;
}

/// 16 << Level source bytes -> 16 bytes of bits << Level wide fields.
template <unsigned Bits, unsigned Level>
__attribute__((target("ssse3"), always_inline)) inline __m128i pack_tree(const ssse3_codec& v, const std::uint8_t* src,
                                                                         __m128i& bad) {
    if constexpr (Level == 0) {
        const __m128i t = _mm_add_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), v.bias);
        bad = _mm_or_si128(bad, _mm_and_si128(t, v.invalid));
        return _mm_and_si128(_mm_xor_si128(_mm_srl_epi16(t, v.shift), v.flip), v.code_mask);
    } else {
        constexpr unsigned half = 16u << (Level - 1);
        constexpr int weight = 1 << (Bits << (Level - 1));  // odd neighbour above the even
        const __m128i weights = _mm_set1_epi16(static_cast<short>(0x0001 | (weight << 8)));
        const __m128i lo = _mm_maddubs_epi16(pack_tree<Bits, Level - 1>(v, src, bad), weights);
        const __m128i hi = _mm_maddubs_epi16(pack_tree<Bits, Level - 1>(v, src + half, bad), weights);
        return _mm_packus_epi16(lo, hi);
    }
}

/// Stores 16 bytes, streaming for large outputs.
template <bool Stream>
__attribute__((target("ssse3"), always_inline)) inline void store16(std::uint8_t* dst, __m128i value) {
    if constexpr (Stream) {
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst), value);
    } else {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), value);
    }
}

inline bool use_streaming_stores(const void* dst, std::size_t bytes) noexcept {
    return bytes >= NPYBRIDGE_STREAMING_STORE_BYTES && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
}

template <unsigned Bits, bool Stream>
__attribute__((target("ssse3"))) bool pack_ssse3_loop(const lowbit_codec& c, const std::uint8_t* src, std::size_t count,
                                                      std::uint8_t* dst) {
    constexpr unsigned levels = Bits == 4 ? 1 : Bits == 2 ? 2 : 3;
    constexpr std::size_t step = 16u << levels;  // elements per 16 output bytes
    const ssse3_codec v = make_ssse3_codec(c);
    __m128i bad = _mm_setzero_si128();
    std::size_t i = 0;
    for (; i + step <= count; i += step, dst += 16) store16<Stream>(dst, pack_tree<Bits, levels>(v, src + i, bad));
    if constexpr (Stream) _mm_sfence();
    const bool tail_ok = pack_scalar(c, src + i, count - i, dst);
    return tail_ok && _mm_movemask_epi8(_mm_cmpeq_epi8(bad, _mm_setzero_si128())) == 0xFFFF;
}

template <unsigned Bits>
bool pack_ssse3(const lowbit_codec& c, const std::uint8_t* src, std::size_t count, std::uint8_t* dst) {
    return use_streaming_stores(dst, count * Bits / 8) ? pack_ssse3_loop<Bits, true>(c, src, count, dst)
                                                       : pack_ssse3_loop<Bits, false>(c, src, count, dst);
}

/// 16 bytes of bits << Level wide fields -> 16 << Level decoded bytes.
template <unsigned Bits, unsigned Level, bool Stream>
__attribute__((target("ssse3"), always_inline)) inline void unpack_tree(const ssse3_codec& v, __m128i x,
                                                                        std::uint8_t* dst) {
    if constexpr (Level == 0) {
        store16<Stream>(dst, _mm_shuffle_epi8(v.decode, x));
    } else {
        constexpr unsigned half_bits = Bits << (Level - 1);
        const __m128i mask = _mm_set1_epi8(static_cast<char>((1u << half_bits) - 1u));
        const __m128i lo = _mm_and_si128(x, mask);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(x, half_bits), mask);
        unpack_tree<Bits, Level - 1, Stream>(v, _mm_unpacklo_epi8(lo, hi), dst);
        unpack_tree<Bits, Level - 1, Stream>(v, _mm_unpackhi_epi8(lo, hi), dst + (16u << (Level - 1)));
    }
}

template <unsigned Bits, bool Stream>
__attribute__((target("ssse3"))) void unpack_ssse3_loop(const lowbit_codec& c, const std::uint8_t* src,
                                                        std::size_t count, std::uint8_t* dst) {
    constexpr unsigned levels = Bits == 4 ? 1 : Bits == 2 ? 2 : 3;
    constexpr std::size_t step = 16u << levels;
    const ssse3_codec v = make_ssse3_codec(c);
    std::size_t i = 0;
    for (; i + step <= count; i += step, src += 16) {
        unpack_tree<Bits, levels, Stream>(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), dst + i);
    }
    if constexpr (Stream) _mm_sfence();
    unpack_scalar(c, src, count - i, dst + i);
}

template <unsigned Bits>
void unpack_ssse3(const lowbit_codec& c, const std::uint8_t* src, std::size_t count, std::uint8_t* dst) {
    if (use_streaming_stores(dst, count)) {
        unpack_ssse3_loop<Bits, true>(c, src, count, dst);
    } else {
        unpack_ssse3_loop<Bits, false>(c, src, count, dst);
    }
}

#endif  // NPYBRIDGE_X86

/// The kernels this machine runs, chosen at first use.
struct lowbit_kernels {
    pack_fn pack[3];  ///< by bits: 1, 2, 4
    unpack_fn unpack[3];
    const char* name;

    static constexpr std::size_t slot(unsigned bits) noexcept { return bits == 1 ? 0 : bits == 2 ? 1 : 2; }
};

inline lowbit_kernels choose_lowbit_kernels() noexcept {
#if defined(NPYBRIDGE_X86)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("ssse3") && !simd_baseline_only()) {
        return {{pack_ssse3<1>, pack_ssse3<2>, pack_ssse3<4>},
                {unpack_ssse3<1>, unpack_ssse3<2>, unpack_ssse3<4>},
                "ssse3"};
    }
#endif
    return {{pack_scalar, pack_scalar, pack_scalar}, {unpack_scalar, unpack_scalar, unpack_scalar}, "portable"};
}

inline const lowbit_kernels& active_lowbit_kernels() noexcept {
    static const lowbit_kernels kernels = choose_lowbit_kernels();
    return kernels;
}

inline const lowbit_kernels& portable_lowbit_kernels() noexcept {
    static const lowbit_kernels kernels{
        {pack_scalar, pack_scalar, pack_scalar}, {unpack_scalar, unpack_scalar, unpack_scalar}, "portable"};
    return kernels;
}

}  // namespace detail
}  // namespace npybridge
