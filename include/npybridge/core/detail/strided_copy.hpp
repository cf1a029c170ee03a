// npybridge/core/detail/strided_copy.hpp — copies between two strided layouts of one shape, tiled (docs/copies.md).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/simd.hpp>
#include <npybridge/core/detail/narrowing_kernels.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Most dimensions a copy plan holds.
inline constexpr std::size_t copy_max_ndim = NPYBRIDGE_MAX_NDIM + 1;

/// One copy: a shape with the byte strides of source and destination.
struct copy_plan {
    std::size_t ndim = 0;
    std::size_t shape[copy_max_ndim];
    std::ptrdiff_t src[copy_max_ndim];
    std::ptrdiff_t dst[copy_max_ndim];

    std::size_t count() const noexcept {
        std::size_t n = 1;
        for (std::size_t i = 0; i < ndim; ++i) n *= shape[i];
        return n;
    }

    /// Drops size-1 dimensions and merges neighbours that are one run in both layouts; false when there is nothing to
    /// copy.
    bool simplify() noexcept {
        std::size_t out = 0;
        for (std::size_t i = 0; i < ndim; ++i) {
            if (shape[i] == 0) return false;
            if (shape[i] == 1) continue;
            if (out > 0 && src[out - 1] == src[i] * static_cast<std::ptrdiff_t>(shape[i]) &&
                dst[out - 1] == dst[i] * static_cast<std::ptrdiff_t>(shape[i])) {
                shape[out - 1] *= shape[i];
                src[out - 1] = src[i];
                dst[out - 1] = dst[i];
                continue;
            }
            shape[out] = shape[i];
            src[out] = src[i];
            dst[out] = dst[i];
            ++out;
        }
        ndim = out;
        return true;
    }
};

// ------------------------------------------------- element ops: one source element into one destination element,
// saying whether it fits; In / Out are the sizes.

template <std::size_t Size>
struct copy_op {
    static constexpr std::size_t in = Size, out = Size;
    static constexpr bool checks = false, swapped = false;
    static bool apply(const unsigned char* s, unsigned char* d) noexcept {
        std::memcpy(d, s, Size);
        return true;
    }
};

template <class Word>
inline Word byte_swapped(Word w) noexcept {
    if constexpr (sizeof(Word) == 2) return static_cast<Word>(__builtin_bswap16(w));
    if constexpr (sizeof(Word) == 4) return static_cast<Word>(__builtin_bswap32(w));
    if constexpr (sizeof(Word) == 8) return static_cast<Word>(__builtin_bswap64(w));
}

template <std::size_t Unit>
using swap_word =
    std::conditional_t<Unit == 2, std::uint16_t, std::conditional_t<Unit == 4, std::uint32_t, std::uint64_t>>;

/// Reverses the bytes of each Unit-byte part of a Size-byte element.
template <std::size_t Size, std::size_t Unit>
struct swap_op {
    static_assert(Size % Unit == 0 && (Unit == 2 || Unit == 4 || Unit == 8),
                  "npybridge: swap units are 2, 4 or 8 bytes");
    static constexpr std::size_t in = Size, out = Size;
    static constexpr bool checks = false, swapped = true;
    static bool apply(const unsigned char* s, unsigned char* d) noexcept {
        for (std::size_t k = 0; k < Size; k += Unit) {
            swap_word<Unit> w;
            std::memcpy(&w, s + k, Unit);
            w = byte_swapped(w);
            std::memcpy(d + k, &w, Unit);
        }
        return true;
    }
};

/// int64 -> int32 / float64 -> float32, optionally byte-swapped.
template <class Source, class Target, bool Swap>
struct narrow_op {
    using source = Source;
    using target = Target;
    static constexpr std::size_t in = sizeof(Source), out = sizeof(Target), parts = 1;
    static constexpr bool checks = true, swapped = Swap;
    static Source load(const unsigned char* s) noexcept {
        Source value;
        if constexpr (Swap) {
            std::uint64_t w;
            std::memcpy(&w, s, 8);
            w = byte_swapped(w);
            std::memcpy(&value, &w, 8);
        } else {
            std::memcpy(&value, s, sizeof(Source));
        }
        return value;
    }
    static bool apply(const unsigned char* s, unsigned char* d) noexcept {
        const Source value = load(s);
        const auto narrowed = static_cast<Target>(value);
        std::memcpy(d, &narrowed, sizeof(Target));
        return fits<Target>(value);
    }
};

/// complex128 -> complex64: both parts as narrow_op narrows one.
template <bool Swap>
struct narrow_pair_op : narrow_op<double, float, Swap> {
    static constexpr std::size_t in = 16, out = 8, parts = 2;
    static bool apply(const unsigned char* s, unsigned char* d) noexcept {
        const bool real = narrow_op<double, float, Swap>::apply(s, d);
        return narrow_op<double, float, Swap>::apply(s + 8, d + 4) && real;
    }
};

template <class T>
inline bool aligned(const void* p) noexcept {
    return reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0;
}

// ------------------------------------------------- SIMD tiles: i along the source's unit stride, j along the
// destination's; they return how far they got in i and j, and the scalar loop does the rest.

template <class Op>
struct simd_tile {
    static constexpr std::size_t edge = 0;  // none
    static bool run(const unsigned char*, std::ptrdiff_t, unsigned char*, std::ptrdiff_t, std::size_t,
                    std::size_t) noexcept {
        return true;
    }
};

#if defined(NPYBRIDGE_SSE2)
/// Calls block(source, destination row) for each whole Edge x Edge block of an ni x nj tile.
template <std::size_t Edge, std::size_t In, std::size_t Out, class Block>
inline void for_each_block(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst, std::ptrdiff_t di,
                           std::size_t ni, std::size_t nj, Block&& block) noexcept {
    for (std::size_t j = 0; j + Edge <= nj; j += Edge) {
        const unsigned char* s = src + static_cast<std::ptrdiff_t>(j) * sj;
        unsigned char* d = dst + j * Out;
        for (std::size_t i = 0; i + Edge <= ni; i += Edge) block(s + i * In, d + static_cast<std::ptrdiff_t>(i) * di);
    }
}

/// Four rows of four floats stored transposed, `di` bytes apart (named values: no array for GCC to keep in memory).
inline void store_transposed(__m128 r0, __m128 r1, __m128 r2, __m128 r3, unsigned char* row,
                             std::ptrdiff_t di) noexcept {
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_ps(reinterpret_cast<float*>(row), r0);
    _mm_storeu_ps(reinterpret_cast<float*>(row + di), r1);
    _mm_storeu_ps(reinterpret_cast<float*>(row + 2 * di), r2);
    _mm_storeu_ps(reinterpret_cast<float*>(row + 3 * di), r3);
}

template <>
struct simd_tile<copy_op<4>> {
    static constexpr std::size_t edge = 4;
    static bool run(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst, std::ptrdiff_t di, std::size_t ni,
                    std::size_t nj) noexcept {
        for_each_block<4, 4, 4>(src, sj, dst, di, ni, nj, [sj, di](const unsigned char* s, unsigned char* row) {
            const auto load = [&](int k) { return _mm_loadu_ps(reinterpret_cast<const float*>(s + k * sj)); };
            store_transposed(load(0), load(1), load(2), load(3), row, di);
        });
        return true;
    }
};

/// Byte p of _mm_unpacklo / hi_epi8 .. epi64 (w-byte units) on n-byte vectors; n and up: the second.
constexpr int zip_index(std::size_t n, std::size_t w, bool high, std::size_t p) noexcept {
    const std::size_t lane = p / 16, unit = p % 16 / w;
    const std::size_t from = lane * 16 + ((high ? 8 / w : 0) + unit / 2) * w + p % w;
    return static_cast<int>(from + (unit % 2 != 0 ? n : 0));
}

template <std::size_t W, bool High, class V, std::size_t... P>
__attribute__((always_inline)) inline void zip(const V& a, const V& b, V& out, std::index_sequence<P...>) noexcept {
    out = __builtin_shufflevector(a, b, zip_index(sizeof(V), W, High, P)...);
}

/// 16 rows `sj` apart, a 16 x 16 byte block per lane, transposed by interleaving 8-, 16-, 32- and 64-bit pairs (after
/// width w each vector holds 2w / 8 rows' values of 16 / (2w / 8) columns); lane L of rows[t]: destination row 16L + t.
template <class V>
__attribute__((always_inline)) inline void transpose_bytes(const unsigned char* s, std::ptrdiff_t sj,
                                                           V (&rows)[16]) noexcept {
    constexpr auto all = std::make_index_sequence<sizeof(V)>();
    V a[16];
    _Pragma("GCC unroll 16") for (int k = 0; k < 16; ++k) std::memcpy(&a[k], s + k * sj, sizeof(V));
    _Pragma("GCC unroll 16") for (int k = 0; k < 16; k += 2) {
        zip<1, false>(a[k], a[k + 1], rows[k], all);
        zip<1, true>(a[k], a[k + 1], rows[k + 1], all);
    }
    _Pragma("GCC unroll 16") for (int g = 0; g < 16; g += 4) {
        zip<2, false>(rows[g], rows[g + 2], a[g], all);
        zip<2, true>(rows[g], rows[g + 2], a[g + 1], all);
        zip<2, false>(rows[g + 1], rows[g + 3], a[g + 2], all);
        zip<2, true>(rows[g + 1], rows[g + 3], a[g + 3], all);
    }
    V b[16];
    _Pragma("GCC unroll 16") for (int h = 0; h < 16; h += 8) {
        _Pragma("GCC unroll 4") for (int q = 0; q < 4; ++q) {
            zip<4, false>(a[h + q], a[h + 4 + q], b[h + 2 * q], all);
            zip<4, true>(a[h + q], a[h + 4 + q], b[h + 2 * q + 1], all);
        }
    }
    _Pragma("GCC unroll 16") for (int t = 0; t < 8; ++t) {
        zip<8, false>(b[t], b[8 + t], rows[2 * t], all);
        zip<8, true>(b[t], b[8 + t], rows[2 * t + 1], all);
    }
}

/// A 16 x 16 byte block.
inline void copy_bytes_16(const unsigned char* s, std::ptrdiff_t sj, unsigned char* row, std::ptrdiff_t di) noexcept {
    npybridge_v16b rows[16];
    transpose_bytes(s, sj, rows);
    _Pragma("GCC unroll 16") for (int t = 0; t < 16; ++t) std::memcpy(row + t * di, &rows[t], 16);
}

/// Blocks of 32 source bytes by 16 rows, a 16 x 16 one per lane (ni a multiple of 32).
__attribute__((target("avx2"))) inline void copy_bytes_32(const unsigned char* src, std::ptrdiff_t sj,
                                                          unsigned char* dst, std::ptrdiff_t di, std::size_t ni,
                                                          std::size_t nj) noexcept {
    for (std::size_t j = 0; j + 16 <= nj; j += 16) {
        const unsigned char* s = src + static_cast<std::ptrdiff_t>(j) * sj;
        for (std::size_t i = 0; i < ni; i += 32) {
            unsigned char* row = dst + j + static_cast<std::ptrdiff_t>(i) * di;
            npybridge_v32b rows[16];
            transpose_bytes(s + i, sj, rows);
            _Pragma("GCC unroll 16") for (int t = 0; t < 16; ++t) {
                std::memcpy(row + t * di, &rows[t], 16);
                std::memcpy(row + (16 + t) * di, reinterpret_cast<const unsigned char*>(&rows[t]) + 16, 16);
            }
        }
    }
}

template <>
struct simd_tile<copy_op<1>> {
    static constexpr std::size_t edge = 16;
    static bool run(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst, std::ptrdiff_t di, std::size_t ni,
                    std::size_t nj) noexcept {
        std::size_t from = 0;
        if (cpu_has_avx2()) {
            from = ni / 32 * 32;
            copy_bytes_32(src, sj, dst, di, from, nj);
        }
        for_each_block<16, 1, 1>(
            src + from, sj, dst + static_cast<std::ptrdiff_t>(from) * di, di, ni - from, nj,
            [sj, di](const unsigned char* s, unsigned char* row) { copy_bytes_16(s, sj, row, di); });
        return true;
    }
};

template <>
struct simd_tile<copy_op<2>> {
    static constexpr std::size_t edge = 8;
    static bool run(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst, std::ptrdiff_t di, std::size_t ni,
                    std::size_t nj) noexcept {
        for_each_block<8, 2, 2>(src, sj, dst, di, ni, nj, [sj, di](const unsigned char* s, unsigned char* row) {
            const auto load = [&](int k) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k * sj)); };
            const auto store = [&](int k, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(row + k * di), v); };
            // Interleaving 16-, 32- and 64-bit pairs, written out so that every value stays in a register.
            const __m128i a0 = load(0), a1 = load(1), a2 = load(2), a3 = load(3);
            const __m128i a4 = load(4), a5 = load(5), a6 = load(6), a7 = load(7);
            const __m128i t0 = _mm_unpacklo_epi16(a0, a1), t1 = _mm_unpackhi_epi16(a0, a1);
            const __m128i t2 = _mm_unpacklo_epi16(a2, a3), t3 = _mm_unpackhi_epi16(a2, a3);
            const __m128i t4 = _mm_unpacklo_epi16(a4, a5), t5 = _mm_unpackhi_epi16(a4, a5);
            const __m128i t6 = _mm_unpacklo_epi16(a6, a7), t7 = _mm_unpackhi_epi16(a6, a7);
            const __m128i u0 = _mm_unpacklo_epi32(t0, t2), u1 = _mm_unpackhi_epi32(t0, t2);
            const __m128i u2 = _mm_unpacklo_epi32(t1, t3), u3 = _mm_unpackhi_epi32(t1, t3);
            const __m128i u4 = _mm_unpacklo_epi32(t4, t6), u5 = _mm_unpackhi_epi32(t4, t6);
            const __m128i u6 = _mm_unpacklo_epi32(t5, t7), u7 = _mm_unpackhi_epi32(t5, t7);
            store(0, _mm_unpacklo_epi64(u0, u4));
            store(1, _mm_unpackhi_epi64(u0, u4));
            store(2, _mm_unpacklo_epi64(u1, u5));
            store(3, _mm_unpackhi_epi64(u1, u5));
            store(4, _mm_unpacklo_epi64(u2, u6));
            store(5, _mm_unpackhi_epi64(u2, u6));
            store(6, _mm_unpacklo_epi64(u3, u7));
            store(7, _mm_unpackhi_epi64(u3, u7));
        });
        return true;
    }
};

template <>
struct simd_tile<copy_op<8>> {
    static constexpr std::size_t edge = 2;
    static bool run(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst, std::ptrdiff_t di, std::size_t ni,
                    std::size_t nj) noexcept {
        for_each_block<2, 8, 8>(src, sj, dst, di, ni, nj, [&](const unsigned char* s, unsigned char* row) {
            const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
            const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + sj));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(row), _mm_unpacklo_epi64(a, b));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(row + di), _mm_unpackhi_epi64(a, b));
        });
        return true;
    }
};

/// float64 -> float32 while transposing, looking for overflow on the way.
template <>
struct simd_tile<narrow_op<double, float, false>> {
    static constexpr std::size_t edge = 4;
    static bool run(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst, std::ptrdiff_t di, std::size_t ni,
                    std::size_t nj) noexcept {
        __m128d overflow = _mm_setzero_pd();
        for_each_block<4, 8, 4>(src, sj, dst, di, ni, nj, [&](const unsigned char* s, unsigned char* row) {
            const auto narrowed = [&](int k) {
                const double* p = reinterpret_cast<const double*>(s + k * sj);
                const __m128d lo = held(_mm_loadu_pd(p)), hi = held(_mm_loadu_pd(p + 2));
                overflow = _mm_or_pd(overflow, _mm_or_pd(float32_overflow_lanes(lo), float32_overflow_lanes(hi)));
                return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
            };
            store_transposed(narrowed(0), narrowed(1), narrowed(2), narrowed(3), row, di);
        });
        return _mm_movemask_pd(overflow) == 0;
    }
};

/// complex128 -> complex64 while transposing, 2 x 2 values a block, looking for overflow on the way.
template <>
struct simd_tile<narrow_pair_op<false>> {
    static constexpr std::size_t edge = 2;
    static bool run(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst, std::ptrdiff_t di, std::size_t ni,
                    std::size_t nj) noexcept {
        __m128d overflow = _mm_setzero_pd();
        for_each_block<2, 16, 8>(src, sj, dst, di, ni, nj, [&](const unsigned char* s, unsigned char* row) {
            const auto narrowed = [&](const unsigned char* p) {  // one complex value: both parts, as two floats
                const __m128d value = held(_mm_loadu_pd(reinterpret_cast<const double*>(p)));
                overflow = _mm_or_pd(overflow, float32_overflow_lanes(value));
                return _mm_cvtpd_ps(value);
            };
            const __m128 a0 = narrowed(s), a1 = narrowed(s + 16), b0 = narrowed(s + sj), b1 = narrowed(s + sj + 16);
            _mm_storeu_ps(reinterpret_cast<float*>(row), _mm_movelh_ps(a0, b0));
            _mm_storeu_ps(reinterpret_cast<float*>(row + di), _mm_movelh_ps(a1, b1));
        });
        return _mm_movemask_pd(overflow) == 0;
    }
};

/// int64 -> int32 while transposing: the low dwords, transposed as floats; a value fits when (x + 2^31) >> 32 == 0.
template <>
struct simd_tile<narrow_op<std::int64_t, std::int32_t, false>> {
    static constexpr std::size_t edge = 4;
    static bool run(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst, std::ptrdiff_t di, std::size_t ni,
                    std::size_t nj) noexcept {
        const __m128i bias = _mm_set1_epi64x(0x80000000LL);
        __m128i high = _mm_setzero_si128();
        for_each_block<4, 8, 4>(src, sj, dst, di, ni, nj, [&](const unsigned char* s, unsigned char* row) {
            const auto low_dwords = [&](int k) {
                const unsigned char* p = s + k * sj;
                const __m128i a = held(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
                const __m128i b = held(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
                high = _mm_or_si128(high, _mm_srli_epi64(_mm_add_epi64(a, bias), 32));
                high = _mm_or_si128(high, _mm_srli_epi64(_mm_add_epi64(b, bias), 32));
                return _mm_castsi128_ps(_mm_unpacklo_epi64(_mm_shuffle_epi32(a, _MM_SHUFFLE(3, 1, 2, 0)),
                                                           _mm_shuffle_epi32(b, _MM_SHUFFLE(3, 1, 2, 0))));
            };
            store_transposed(low_dwords(0), low_dwords(1), low_dwords(2), low_dwords(3), row, di);
        });
        return _mm_movemask_epi8(_mm_cmpeq_epi32(high, _mm_setzero_si128())) == 0xFFFF;
    }
};
#endif

// ------------------------------------------------- the copier

/// A tile's extent: 256 source bytes along i, one 64-byte destination line along j, so every line is written whole.
template <class Op>
inline constexpr std::size_t tile_i = std::max<std::size_t>(8, 256 / Op::in);
template <class Op>
inline constexpr std::size_t tile_j = std::max<std::size_t>(8, 64 / Op::out);

/// A whole tile through a buffer, then out a row at a time: written straight, destination rows a power of two apart
/// evict each other's lines. The tile loops start on a cache line (docs/performance.md: their placement matters).
template <class Op>
[[gnu::aligned(64)]] bool copy_tile_staged(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst,
                                           std::ptrdiff_t di) noexcept {
    constexpr std::size_t rows = tile_i<Op>;
    constexpr std::size_t row = tile_j<Op> * Op::out;
    static_assert(rows % simd_tile<Op>::edge == 0 && tile_j<Op> % simd_tile<Op>::edge == 0,
                  "the SIMD tile must cover the whole staged tile: nothing else writes the buffer");
    alignas(64) unsigned char staged[rows * row];
    const bool fits = simd_tile<Op>::run(src, sj, staged, static_cast<std::ptrdiff_t>(row), rows, tile_j<Op>);
    for (std::size_t i = 0; i < rows; ++i)
        std::memcpy(dst + static_cast<std::ptrdiff_t>(i) * di, staged + i * row, row);
    return fits;
}

/// One 2-D block (i along the source's contiguous dimension, j the destination's); a scalar loop for what the SIMD tile
/// leaves.
template <class Op>
[[gnu::aligned(64)]] bool copy_block(const unsigned char* src, std::ptrdiff_t si, std::ptrdiff_t sj, unsigned char* dst,
                                     std::ptrdiff_t di, std::ptrdiff_t dj, std::size_t ni, std::size_t nj) noexcept {
    bool ok = true;
    std::size_t done_i = 0, done_j = 0;
    if constexpr (simd_tile<Op>::edge != 0) {
        const bool unit = si == static_cast<std::ptrdiff_t>(Op::in) && dj == static_cast<std::ptrdiff_t>(Op::out);
        if (unit && ni == tile_i<Op> && nj == tile_j<Op>) return copy_tile_staged<Op>(src, sj, dst, di);
        if (unit) {
            constexpr std::size_t e = simd_tile<Op>::edge;
            ok = simd_tile<Op>::run(src, sj, dst, di, ni, nj);
            done_i = ni / e * e;
            done_j = nj / e * e;
        }
    }
    // The SIMD tile's remainder: columns past done_j, and rows past done_i of the first done_j.
    for (std::size_t j = 0; j < nj; ++j) {
        const std::size_t from = j < done_j ? done_i : 0;
        const unsigned char* s = src + static_cast<std::ptrdiff_t>(j) * sj;
        unsigned char* d = dst + static_cast<std::ptrdiff_t>(j) * dj;
        for (std::size_t i = from; i < ni; ++i) {
            ok &= Op::apply(s + static_cast<std::ptrdiff_t>(i) * si, d + static_cast<std::ptrdiff_t>(i) * di);
        }
    }
    return ok;
}

#if defined(NPYBRIDGE_SSE2)
/// A large copy (aligned destination rows): tiles of 32 source bytes (16 of int16) by 512 destination bytes, the
/// destination's blocks outermost, written by streaming stores. 4-byte copies from rows over 8 KiB apart keep the
/// plain tiles (1.1x the time on a float32 4096^2 .T).
template <class Op>
inline constexpr std::size_t stream_tile_i = std::max<std::size_t>(simd_tile<Op>::edge,
                                                                   (Op::in == 2 ? 16 : 32) / Op::in);
template <class Op>
inline constexpr std::size_t stream_tile_j = 512 / Op::out;
inline constexpr std::size_t stream_from_bytes = std::size_t{4} << 20;

template <class Op>
[[gnu::aligned(64)]] bool copy_tile_streamed(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst,
                                             std::ptrdiff_t di) noexcept {
    constexpr std::size_t rows = stream_tile_i<Op>;
    constexpr std::size_t row = stream_tile_j<Op> * Op::out;
    static_assert(rows % simd_tile<Op>::edge == 0 && stream_tile_j<Op> % simd_tile<Op>::edge == 0 && row % 16 == 0,
                  "the SIMD tile covers the staged tile, in rows of 16-byte stores");
    alignas(64) unsigned char staged[rows * row];
    const bool fits = simd_tile<Op>::run(src, sj, staged, static_cast<std::ptrdiff_t>(row), rows, stream_tile_j<Op>);
    for (std::size_t i = 0; i < rows; ++i) {
        unsigned char* to = dst + static_cast<std::ptrdiff_t>(i) * di;
        for (std::size_t k = 0; k < row; k += 16) {
            _mm_stream_si128(reinterpret_cast<__m128i*>(to + k),
                             _mm_load_si128(reinterpret_cast<const __m128i*>(staged + i * row + k)));
        }
    }
    return fits;
}

/// Values (`in` bytes, `rows` a tile) copied before the streamed tiles so that, rows alike, no tile's chunk of a row
/// straddles two lines (NumPy's data starts 16 bytes in).
inline std::size_t stream_head(const unsigned char* src, std::ptrdiff_t sj, std::size_t ni, std::size_t in,
                               std::size_t rows) noexcept {
    const std::size_t chunk = rows * in;
    if (sj % static_cast<std::ptrdiff_t>(chunk) != 0) return 0;
    const std::size_t skew = reinterpret_cast<std::uintptr_t>(src) % chunk;
    const std::size_t head = skew % in == 0 ? (chunk - skew) % chunk / in : 0;
    return head + rows <= ni ? head : 0;
}

/// A 2-D plane by streamed tiles (unit strides, destination rows 16-byte aligned), its ragged edges by copy_block.
template <class Op>
[[gnu::aligned(64)]] bool copy_plane_streamed(const unsigned char* src, std::ptrdiff_t sj, unsigned char* dst,
                                              std::ptrdiff_t di, std::size_t ni, std::size_t nj) noexcept {
    constexpr std::size_t ti = stream_tile_i<Op>, tj = stream_tile_j<Op>;
    constexpr auto in = static_cast<std::ptrdiff_t>(Op::in), out = static_cast<std::ptrdiff_t>(Op::out);
    const std::size_t whole_i = ni / ti * ti, whole_j = nj / tj * tj;
    bool ok = true;
    for (std::size_t j0 = 0; j0 < whole_j; j0 += tj) {
        for (std::size_t i0 = 0; i0 < whole_i; i0 += ti) {
            ok &= copy_tile_streamed<Op>(
                src + static_cast<std::ptrdiff_t>(i0) * in + static_cast<std::ptrdiff_t>(j0) * sj, sj,
                dst + static_cast<std::ptrdiff_t>(i0) * di + static_cast<std::ptrdiff_t>(j0) * out, di);
        }
    }
    _mm_sfence();  // streamed lines are ordered before later stores
    if (whole_i < ni) {
        ok &= copy_block<Op>(src + static_cast<std::ptrdiff_t>(whole_i) * in, in, sj,
                             dst + static_cast<std::ptrdiff_t>(whole_i) * di, di, out, ni - whole_i, nj);
    }
    if (whole_j < nj) {
        ok &= copy_block<Op>(src + static_cast<std::ptrdiff_t>(whole_j) * sj, in, sj,
                             dst + static_cast<std::ptrdiff_t>(whole_j) * out, di, out, whole_i, nj - whole_j);
    }
    return ok;
}
#endif

/// A run along one dimension.
template <class Op>
bool copy_run(const unsigned char* src, std::ptrdiff_t ss, unsigned char* dst, std::ptrdiff_t ds,
              std::size_t n) noexcept {
    if constexpr (std::is_same_v<Op, copy_op<Op::in>>) {
        if (ss == static_cast<std::ptrdiff_t>(Op::in) && ds == static_cast<std::ptrdiff_t>(Op::out)) {
            std::memcpy(dst, src, n * Op::in);
            return true;
        }
    }
    if constexpr (Op::checks && !Op::swapped) {
        if (ss == static_cast<std::ptrdiff_t>(Op::in) && ds == static_cast<std::ptrdiff_t>(Op::out) &&
            aligned<typename Op::source>(src) && aligned<typename Op::target>(dst)) {
            using Source = typename Op::source;
            using Target = typename Op::target;
            const auto* in = reinterpret_cast<const Source*>(src);
            auto* out = reinterpret_cast<Target*>(dst);
            const std::size_t count = n * Op::parts;
            const std::size_t bad = narrow_values(in, out, count, true);  // stops at the first bad value
            if (bad == count) return true;
            narrow_values(in + bad, out + bad, count - bad, false);  // the rest, written all the same
            return false;
        }
    }
    bool ok = true;
    for (std::size_t i = 0; i < n; ++i) {
        ok &= Op::apply(src + static_cast<std::ptrdiff_t>(i) * ss, dst + static_cast<std::ptrdiff_t>(i) * ds);
    }
    return ok;
}

/// One plane of a tiled copy (s, d: the source's and destination's fastest dimensions).
template <class Op>
bool copy_plane(const copy_plan& plan, std::size_t s, std::size_t d, const unsigned char* src,
                unsigned char* dst) noexcept {
    const std::size_t ni = plan.shape[s], nj = plan.shape[d];
#if defined(NPYBRIDGE_SSE2)
    if constexpr (simd_tile<Op>::edge != 0) {
        if (plan.src[s] == static_cast<std::ptrdiff_t>(Op::in) && plan.dst[d] == static_cast<std::ptrdiff_t>(Op::out) &&
            plan.count() * Op::out >= stream_from_bytes && plan.dst[s] % 16 == 0 &&
            reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 && ni >= stream_tile_i<Op> && nj >= stream_tile_j<Op> &&
            !(Op::in == 4 && Op::out == 4 && std::abs(plan.src[d]) > 8192)) {
            const std::size_t head = stream_head(src, plan.src[d], ni, Op::in, stream_tile_i<Op>);
            const bool ok =
                head == 0 || copy_block<Op>(src, plan.src[s], plan.src[d], dst, plan.dst[s], plan.dst[d], head, nj);
            return copy_plane_streamed<Op>(src + static_cast<std::ptrdiff_t>(head) * plan.src[s], plan.src[d],
                                           dst + static_cast<std::ptrdiff_t>(head) * plan.dst[s], plan.dst[s],
                                           ni - head, nj) &&
                   ok;
        }
    }
#endif
    bool ok = true;
    for (std::size_t i0 = 0; i0 < ni; i0 += tile_i<Op>) {
        for (std::size_t j0 = 0; j0 < nj; j0 += tile_j<Op>) {
            ok &= copy_block<Op>(
                src + static_cast<std::ptrdiff_t>(i0) * plan.src[s] + static_cast<std::ptrdiff_t>(j0) * plan.src[d],
                plan.src[s], plan.src[d],
                dst + static_cast<std::ptrdiff_t>(i0) * plan.dst[s] + static_cast<std::ptrdiff_t>(j0) * plan.dst[d],
                plan.dst[s], plan.dst[d], std::min(tile_i<Op>, ni - i0), std::min(tile_j<Op>, nj - j0));
        }
    }
    return ok;
}

/// Copies `plan` (byte strides) from src to dst with Op; whether every value fit. No overlap.
template <class Op>
[[gnu::aligned(64)]] bool copy_strided_with(copy_plan plan, const void* source, void* destination) noexcept {
    const auto* src = static_cast<const unsigned char*>(source);
    auto* dst = static_cast<unsigned char*>(destination);
    if (!plan.simplify()) return true;
    if (plan.ndim == 0) return Op::apply(src, dst);
    // d: the destination's fastest dimension; s: the source's.
    std::size_t d = 0, s = 0;
    for (std::size_t k = 1; k < plan.ndim; ++k) {
        if (std::abs(plan.dst[k]) < std::abs(plan.dst[d])) d = k;
        if (std::abs(plan.src[k]) < std::abs(plan.src[s])) s = k;
    }
    const bool tiled = s != d && std::abs(plan.src[s]) < std::abs(plan.src[d]);
    // The others, by an odometer in index order.
    std::size_t outer[copy_max_ndim], index[copy_max_ndim] = {};
    std::size_t n_outer = 0;
    for (std::size_t k = 0; k < plan.ndim; ++k) {
        if (k != d && (!tiled || k != s)) outer[n_outer++] = k;
    }
    bool ok = true;
    const unsigned char* s_base = src;
    unsigned char* d_base = dst;
    for (;;) {
        if (tiled) {
            ok &= copy_plane<Op>(plan, s, d, s_base, d_base);
        } else {
            ok &= copy_run<Op>(s_base, plan.src[d], d_base, plan.dst[d], plan.shape[d]);
        }
        std::size_t k = n_outer;
        for (; k-- > 0;) {
            const std::size_t dim = outer[k];
            s_base += plan.src[dim];
            d_base += plan.dst[dim];
            if (++index[k] < plan.shape[dim]) break;
            s_base -= plan.src[dim] * static_cast<std::ptrdiff_t>(plan.shape[dim]);
            d_base -= plan.dst[dim] * static_cast<std::ptrdiff_t>(plan.shape[dim]);
            index[k] = 0;
        }
        if (k == static_cast<std::size_t>(-1)) break;
    }
    return ok;
}

/// A plain copy of `itemsize`-byte elements; swap_unit 2 / 4 / 8 reverses each part of that size.
inline void copy_strided(const copy_plan& plan, const void* src, void* dst, std::size_t itemsize,
                         std::size_t swap_unit = 0) noexcept {
    switch (swap_unit == 0 ? itemsize : itemsize * 100 + swap_unit) {
        case 1: copy_strided_with<copy_op<1>>(plan, src, dst); return;
        case 2: copy_strided_with<copy_op<2>>(plan, src, dst); return;
        case 4: copy_strided_with<copy_op<4>>(plan, src, dst); return;
        case 8: copy_strided_with<copy_op<8>>(plan, src, dst); return;
        case 16: copy_strided_with<copy_op<16>>(plan, src, dst); return;
        case 202: copy_strided_with<swap_op<2, 2>>(plan, src, dst); return;
        case 404: copy_strided_with<swap_op<4, 4>>(plan, src, dst); return;
        case 804: copy_strided_with<swap_op<8, 4>>(plan, src, dst); return;
        case 808: copy_strided_with<swap_op<8, 8>>(plan, src, dst); return;
        case 1608: copy_strided_with<swap_op<16, 8>>(plan, src, dst); return;
        default: break;
    }
    // Other sizes (strings, records): a memcpy per element, tiled.
    copy_plan bytes = plan;  // the element's bytes as an innermost dimension
    if (bytes.ndim + 1 > copy_max_ndim || swap_unit != 0) {
        // No room for the byte dimension: element by element.
        std::size_t index[copy_max_ndim] = {};
        const auto* s = static_cast<const unsigned char*>(src);
        auto* d = static_cast<unsigned char*>(dst);
        if (plan.count() == 0) return;
        for (;;) {
            std::ptrdiff_t so = 0, doff = 0;
            for (std::size_t k = 0; k < plan.ndim; ++k) {
                so += static_cast<std::ptrdiff_t>(index[k]) * plan.src[k];
                doff += static_cast<std::ptrdiff_t>(index[k]) * plan.dst[k];
            }
            std::memcpy(d + doff, s + so, itemsize);
            if (swap_unit != 0) {
                for (std::size_t a = 0; a < itemsize; a += swap_unit)
                    std::reverse(d + doff + a, d + doff + a + swap_unit);
            }
            std::size_t k = plan.ndim;
            for (; k-- > 0;) {
                if (++index[k] < plan.shape[k]) break;
                index[k] = 0;
            }
            if (k == static_cast<std::size_t>(-1)) return;
        }
    }
    bytes.shape[bytes.ndim] = itemsize;
    bytes.src[bytes.ndim] = 1;
    bytes.dst[bytes.ndim] = 1;
    ++bytes.ndim;
    copy_strided_with<copy_op<1>>(bytes, src, dst);
}

/// int64 -> int32 / float64 -> float32 (swap: other byte order); writes every value, returns whether all fit.
template <class Source, class Target>
bool narrow_strided(const copy_plan& plan, const void* src, void* dst, bool swap) noexcept {
    return swap ? copy_strided_with<narrow_op<Source, Target, true>>(plan, src, dst)
                : copy_strided_with<narrow_op<Source, Target, false>>(plan, src, dst);
}

/// complex128 -> complex64 (swap: other byte order); writes every value, returns whether every part fit.
inline bool narrow_pairs_strided(const copy_plan& plan, const void* src, void* dst, bool swap) noexcept {
    return swap ? copy_strided_with<narrow_pair_op<true>>(plan, src, dst)
                : copy_strided_with<narrow_pair_op<false>>(plan, src, dst);
}

/// Flat C-order index of the first value that does not fit Target, or plan.count(): a memory-order pass, then an
/// index-order one to find it.
template <class Source, class Target>
std::size_t first_unfit_strided(const copy_plan& plan, const void* source, bool swap) noexcept {
    const auto* src = static_cast<const unsigned char*>(source);
    const std::size_t n = plan.count();
    if (n == 0) return 0;
    auto fits_at = [&](const unsigned char* p) {
        return swap ? fits<Target>(narrow_op<Source, Target, true>::load(p))
                    : fits<Target>(narrow_op<Source, Target, false>::load(p));
    };
    // Memory order: by |stride|, smallest innermost.
    copy_plan sorted = plan;
    for (std::size_t a = 0; a < sorted.ndim; ++a) {
        for (std::size_t b = a + 1; b < sorted.ndim; ++b) {
            if (std::abs(sorted.src[b]) > std::abs(sorted.src[a])) {
                std::swap(sorted.src[a], sorted.src[b]);
                std::swap(sorted.shape[a], sorted.shape[b]);
            }
        }
    }
    bool all_fit = true;
    {
        std::size_t index[copy_max_ndim] = {};
        const unsigned char* base = src;
        const std::size_t inner = sorted.ndim == 0 ? 1 : sorted.shape[sorted.ndim - 1];
        const std::ptrdiff_t step = sorted.ndim == 0 ? 0 : sorted.src[sorted.ndim - 1];
        for (;;) {
            if (!swap && step == static_cast<std::ptrdiff_t>(sizeof(Source)) && aligned<Source>(base)) {
                all_fit &= first_unfit<Source, Target>(reinterpret_cast<const Source*>(base), inner) == inner;
            } else {
                for (std::size_t i = 0; i < inner; ++i)
                    all_fit &= fits_at(base + static_cast<std::ptrdiff_t>(i) * step);
            }
            if (!all_fit || sorted.ndim <= 1) break;
            std::size_t k = sorted.ndim - 1;
            for (; k-- > 0;) {
                base += sorted.src[k];
                if (++index[k] < sorted.shape[k]) break;
                base -= sorted.src[k] * static_cast<std::ptrdiff_t>(sorted.shape[k]);
                index[k] = 0;
            }
            if (k == static_cast<std::size_t>(-1)) break;
        }
    }
    if (all_fit) return n;
    std::size_t index[copy_max_ndim] = {};
    for (std::size_t flat = 0; flat < n; ++flat) {
        std::ptrdiff_t offset = 0;
        for (std::size_t k = 0; k < plan.ndim; ++k) offset += static_cast<std::ptrdiff_t>(index[k]) * plan.src[k];
        if (!fits_at(src + offset)) return flat;
        for (std::size_t k = plan.ndim; k-- > 0;) {
            if (++index[k] < plan.shape[k]) break;
            index[k] = 0;
        }
    }
    return n;
}

}  // namespace detail
}  // namespace npybridge
