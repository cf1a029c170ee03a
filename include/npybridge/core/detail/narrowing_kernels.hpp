// npybridge/core/detail/narrowing_kernels.hpp — checked narrowing's loops: values tested as stored, and the scans.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/simd.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Whether `value` survives the cast to Target (no wrap, no finite value made infinite).
template <class Target, class Source>
bool fits(Source value) noexcept {
    if constexpr (std::is_integral_v<Source>) {
        return static_cast<Source>(static_cast<Target>(value)) == value;
    } else {
        const Source magnitude = std::fabs(value);
        return !(magnitude >= Source(3.4028235677973366e38) && magnitude < Source(HUGE_VAL));
    }
}

/// The portable narrowing loop (Write: store too): the first unfit index, else n; a block that stored one always
/// stops it.
template <bool Write, class Source, class Target>
std::size_t narrow_portable(const Source* in, Target* out, std::size_t n, bool check) noexcept {
    constexpr std::size_t block = 4096;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t end = std::min(n, start + block);
        bool bad = false;
        for (std::size_t i = start; i < end; ++i) {
            const Source value = in[i];
            if constexpr (Write) out[i] = static_cast<Target>(value);
            bad |= !fits<Target>(value);
        }
        if (!bad || !check) continue;
        for (std::size_t i = start; i < end; ++i) {
            if (!fits<Target>(in[i])) return i;
        }
        if constexpr (Write) return start;
    }
    return n;
}

inline constexpr std::size_t go_on = ~std::size_t{0};

/// After [start, end) read unfit: the index a second reading finds, else `start` if written (it stops), else go_on.
template <bool Write, class Source, class Target>
std::size_t unfit_in_block(const Source* in, Target* out, std::size_t start, std::size_t end) noexcept {
    const std::size_t found = narrow_portable<false>(in + start, out, end - start, true);
    if (found != end - start) return start + found;
    return Write ? start : go_on;
}

/// [start, end) narrowed again from one private reading, tested as narrowed: the first unfit index, else end. Out of
/// line, keeping its buffer out of the loops' frames.
template <class Source, class Target>
[[gnu::noinline, gnu::cold]] std::size_t narrow_from_one_reading(const Source* in, Target* out, std::size_t start,
                                                                 std::size_t end) noexcept {
    constexpr std::size_t part = 512;
    Source read[part];
    for (std::size_t at = start; at < end; at += part) {
        const std::size_t m = std::min(part, end - at);
        std::memcpy(read, in + at, m * sizeof(Source));
        const std::size_t found = narrow_portable<true>(read, out + at, m, true);
        if (found != m) return at + found;
    }
    return end;
}

#if defined(NPYBRIDGE_SSE2)
/// The lanes of `value` that `fits` finds unfit for float32.
inline __m128d float32_overflow_lanes(__m128d value) noexcept {
    const __m128d magnitude = _mm_andnot_pd(_mm_set1_pd(-0.0), value);
    return _mm_and_pd(_mm_cmpge_pd(magnitude, _mm_set1_pd(3.4028235677973366e38)),
                      _mm_cmplt_pd(magnitude, _mm_set1_pd(HUGE_VAL)));
}

/// SSE2, four a step; int64 fits int32 when (x + 2^31) >> 32 == 0.
template <bool Write>
std::size_t narrow_sse2(const std::int64_t* in, std::int32_t* out, std::size_t n, bool check) noexcept {
    const __m128i bias = _mm_set1_epi64x(0x80000000LL);
    constexpr std::size_t block = 4096;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t end = std::min(n, start + block);
        __m128i high = _mm_setzero_si128();
        std::size_t i = start;
        for (; i + 4 <= end; i += 4) {
            const __m128i a = held(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
            const __m128i b = held(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 2)));
            if constexpr (Write) {
                const __m128i low = _mm_unpacklo_epi64(_mm_shuffle_epi32(a, _MM_SHUFFLE(3, 1, 2, 0)),
                                                       _mm_shuffle_epi32(b, _MM_SHUFFLE(3, 1, 2, 0)));
                _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), low);
            }
            high = _mm_or_si128(high, _mm_srli_epi64(_mm_add_epi64(a, bias), 32));
            high = _mm_or_si128(high, _mm_srli_epi64(_mm_add_epi64(b, bias), 32));
        }
        bool bad = _mm_movemask_epi8(_mm_cmpeq_epi32(high, _mm_setzero_si128())) != 0xFFFF;
        if (i < end) bad |= narrow_portable<Write>(in + i, out + (Write ? i : 0), end - i, true) != end - i;
        if (!bad || !check) continue;
        const std::size_t stop = unfit_in_block<Write>(in, out, start, end);
        if (stop != go_on) return stop;
    }
    return n;
}

/// float64 -> float32: a finite value overflows at |x| >= FLT_MAX + half an ulp.
template <bool Write>
std::size_t narrow_sse2(const double* in, float* out, std::size_t n, bool check) noexcept {
    constexpr std::size_t block = 4096;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t end = std::min(n, start + block);
        __m128d overflow = _mm_setzero_pd();
        __m128 largest = _mm_setzero_ps();  // infinity when one overflowed or was infinite
        std::size_t i = start;
        for (; i + 4 <= end; i += 4) {
            const __m128d a = held(_mm_loadu_pd(in + i)), b = held(_mm_loadu_pd(in + i + 2));
            if constexpr (Write) {
                const __m128 narrowed = _mm_movelh_ps(_mm_cvtpd_ps(a), _mm_cvtpd_ps(b));
                _mm_storeu_ps(out + i, narrowed);
                largest = _mm_max_ps(_mm_andnot_ps(_mm_set1_ps(-0.0f), narrowed), largest);  // NaN keeps largest
            } else {
                overflow = _mm_or_pd(overflow, _mm_or_pd(float32_overflow_lanes(a), float32_overflow_lanes(b)));
            }
        }
        bool bad = _mm_movemask_pd(overflow) != 0;
        if (Write && check && _mm_movemask_ps(_mm_cmpeq_ps(largest, _mm_set1_ps(HUGE_VALF))) != 0) {
            const std::size_t found = narrow_from_one_reading(in, out, start, i);  // an infinity written
            if (found != i) return found;
        }
        if (i < end) bad |= narrow_portable<Write>(in + i, out + (Write ? i : 0), end - i, true) != end - i;
        if (!bad || !check) continue;
        const std::size_t stop = unfit_in_block<Write>(in, out, start, end);
        if (stop != go_on) return stop;
    }
    return n;
}
#endif

/// int64 -> int32 or float64 -> float32; with `check`, where it stopped (at or before the first unfit value), else n.
template <class Source, class Target>
std::size_t narrow_values(const Source* in, Target* out, std::size_t n, bool check) noexcept {
#if defined(NPYBRIDGE_SSE2)
    return narrow_sse2<true>(in, out, n, check);
#else
    return narrow_portable<true>(in, out, n, check);
#endif
}

/// The first index that does not fit Target, else n.
template <class Source, class Target>
std::size_t first_unfit(const Source* in, std::size_t n) noexcept {
#if defined(NPYBRIDGE_SSE2)
    return narrow_sse2<false>(in, static_cast<Target*>(nullptr), n, true);
#else
    return narrow_portable<false>(in, static_cast<Target*>(nullptr), n, true);
#endif
}

/// The first integer a float of `digits` bits does not hold exactly, else n; blocks of 64 are OR-reduced first.
template <class T>
std::size_t first_inexact(const T* in, std::size_t n, unsigned digits) noexcept {
    const auto magnitude = [](T value) {
        return value < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
    };
    const auto exact_from = [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            const std::uint64_t m = magnitude(in[i]);
            if ((m >> digits) != 0 && ((m >> __builtin_ctzll(m)) >> digits) != 0) return i;
        }
        return end;
    };
    constexpr std::size_t block = 64;
    std::size_t i = 0;
    for (; i + block <= n; i += block) {
        std::uint64_t large = 0;
        for (std::size_t k = 0; k < block; ++k) large |= magnitude(in[i + k]) >> digits;
        if (large != 0) {
            const std::size_t found = exact_from(i, i + block);
            if (found != i + block) return found;
        }
    }
    const std::size_t found = exact_from(i, n);
    return found == n ? n : found;
}

/// Integers into float32, checked exact as written (fresh memory): the first inexact index, else n.
template <class T>
std::size_t convert_exact_to_float32(const T* in, float* out, std::size_t n) noexcept {
    using U = std::make_unsigned_t<T>;  // the integers' width: the loop vectorizes
    const auto large_bits = [](T value) {
        const U magnitude = value < 0 ? static_cast<U>(U{0} - static_cast<U>(value)) : static_cast<U>(value);
        return static_cast<U>(magnitude >> 24);
    };
    constexpr std::size_t block = 64;  // a constant trip count vectorizes
    T read[block];
    std::size_t start = 0;
    for (; start + block <= n; start += block) {
        U large = 0;
        for (std::size_t k = 0; k < block; ++k) {
            const T value = in[start + k];
            out[start + k] = static_cast<float>(value);
            large |= large_bits(value);
        }
        if (large != 0) {  // one private reading, stored and searched
            std::memcpy(read, in + start, sizeof read);
            for (std::size_t k = 0; k < block; ++k) out[start + k] = static_cast<float>(read[k]);
            const std::size_t found = first_inexact(read, block, 24);
            if (found != block) return start + found;
        }
    }
    const std::size_t m = n - start;
    std::memcpy(read, in + start, m * sizeof(T));
    for (std::size_t k = 0; k < m; ++k) out[start + k] = static_cast<float>(read[k]);
    const std::size_t found = first_inexact(read, m, 24);
    return found == m ? n : start + found;
}

/// The first index outside [lo, hi] (NaN is), else n.
template <class T>
std::size_t first_outside(const T* in, std::size_t n, T lo, T hi) noexcept {
    constexpr std::size_t block = 4096;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t end = std::min(n, start + block);
        bool bad = false;
        for (std::size_t i = start; i < end; ++i) bad |= !(in[i] >= lo && in[i] <= hi);
        if (!bad) continue;
        for (std::size_t i = start; i < end; ++i) {
            if (!(in[i] >= lo && in[i] <= hi)) return i;
        }
    }
    return n;
}

/// Whether any value is finite with magnitude >= `overflow`; branch-free.
template <class T>
bool any_overflow(const T* in, std::size_t n, T overflow) noexcept {
    std::size_t i = 0;
    bool bad = false;
#if defined(NPYBRIDGE_SSE2)
    if constexpr (std::is_same_v<T, float>) {
        const __m128 sign = _mm_set1_ps(-0.0f), limit = _mm_set1_ps(overflow);
        const __m128 infinity = _mm_set1_ps(std::numeric_limits<float>::infinity());
        __m128 any = _mm_setzero_ps();
        for (; i + 4 <= n; i += 4) {
            const __m128 magnitude = _mm_andnot_ps(sign, _mm_loadu_ps(in + i));
            any = _mm_or_ps(any, _mm_and_ps(_mm_cmpge_ps(magnitude, limit), _mm_cmplt_ps(magnitude, infinity)));
        }
        bad = _mm_movemask_ps(any) != 0;
    } else if constexpr (std::is_same_v<T, double>) {
        const __m128d sign = _mm_set1_pd(-0.0), limit = _mm_set1_pd(overflow);
        const __m128d infinity = _mm_set1_pd(std::numeric_limits<double>::infinity());
        __m128d any = _mm_setzero_pd();
        for (; i + 2 <= n; i += 2) {
            const __m128d magnitude = _mm_andnot_pd(sign, _mm_loadu_pd(in + i));
            any = _mm_or_pd(any, _mm_and_pd(_mm_cmpge_pd(magnitude, limit), _mm_cmplt_pd(magnitude, infinity)));
        }
        bad = _mm_movemask_pd(any) != 0;
    }
#endif
    for (; i < n; ++i) {
        const T magnitude = std::fabs(in[i]);
        bad |= (magnitude >= overflow) & (magnitude < std::numeric_limits<T>::infinity());
    }
    return bad;
}

/// The first finite value with magnitude >= `overflow`, else n.
template <class T>
std::size_t first_overflow(const T* in, std::size_t n, T overflow) noexcept {
    const T infinity = std::numeric_limits<T>::infinity();
    auto overflows = [&](T value) {
        const T magnitude = value < 0 ? -value : value;
        return magnitude >= overflow && magnitude < infinity;
    };
    constexpr std::size_t block = 4096;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t end = std::min(n, start + block);
        if (!any_overflow(in + start, end - start, overflow)) continue;
        for (std::size_t i = start; i < end; ++i) {
            if (overflows(in[i])) return i;
        }
    }
    return n;
}

/// [start, end) converted again from one private reading and searched for overflow: the first, else end (out of line).
template <class T, class Out, class Convert>
[[gnu::noinline, gnu::cold]] std::size_t convert_from_one_reading(const T* in, Out* out, std::size_t start,
                                                                  std::size_t end, T overflow, Convert convert) {
    constexpr std::size_t part = 256;
    T read[part];
    for (std::size_t at = start; at < end; at += part) {
        const std::size_t m = std::min(part, end - at);
        std::memcpy(read, in + at, m * sizeof(T));
        convert(read, m, out + at);
        const std::size_t bad = first_overflow(read, m, overflow);
        if (bad != m) return at + bad;
    }
    return end;
}

/// Values converted a block at a time; with `check`, a block holding a made infinity or NaN is searched for
/// overflow: the first, else n.
template <class T, class Out, class Convert>
std::size_t convert_checking_overflow(const T* in, std::size_t n, Out* out, T overflow, bool check, Convert convert) {
    constexpr std::size_t block = 4096;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t count = std::min(block, n - start);
        if (!convert(in + start, count, out + start) || !check) continue;
        const std::size_t bad = convert_from_one_reading(in, out, start, start + count, overflow, convert);
        if (bad != start + count) return bad;  // an infinity or NaN was made
    }
    return n;
}

/// A store_checked block: values clamped to [lo, hi] (NaN to lo) and stored; true when clamp or cast changed one.
/// Floats clamp in Clamp, then pass through Wide. Inlined: vectorized for the caller's target.
template <class Wide, class Clamp, class Source, class Target>
__attribute__((always_inline)) inline bool store_checked_block(const Source* __restrict in, Target* __restrict out,
                                                               std::size_t count, Wide lo, Wide hi) noexcept {
    Wide changed = 0;  // reduced in the lanes' width
    for (std::size_t i = 0; i < count; ++i) {
        if constexpr (std::is_floating_point_v<Source>) {
            const Clamp value = static_cast<Clamp>(in[i]);
            const Clamp lowest = static_cast<Clamp>(lo), highest = static_cast<Clamp>(hi);
            const auto held = static_cast<Wide>(!(value >= lowest) ? lowest : value > highest ? highest : value);
            changed |= static_cast<Wide>(static_cast<Clamp>(held) != value);
            out[i] = static_cast<Target>(held);
        } else {
            const Source value = in[i];
            const Source held = std::min<Source>(std::max<Source>(value, lo), hi);  // vpmaxsd / vpminsd
            changed |= held ^ value;
            out[i] = static_cast<Target>(held);
        }
    }
    return changed != 0;
}

/// Blocks of 1024: the start of the first with a changed value, else n.
template <class Wide, class Clamp, class Source, class Target>
__attribute__((always_inline)) inline std::size_t store_checked_blocks(const Source* in, std::size_t n, Target* out,
                                                                       Wide lo, Wide hi) noexcept {
    constexpr std::size_t block = 1024;
    std::size_t start = 0;
    for (; start + block <= n; start += block) {
        if (store_checked_block<Wide, Clamp>(in + start, out + start, block, lo, hi)) return start;
    }
    return store_checked_block<Wide, Clamp>(in + start, out + start, n - start, lo, hi) ? start : n;
}

/// Values into integer storage, tested as stored: the start of the first block with an unfit value (fresh memory only),
/// else n.
template <class Wide, class Clamp = Wide, class Source, class Target>
std::size_t store_checked(const Source* in, std::size_t n, Target* out, Wide lo, Wide hi) noexcept {
    return store_checked_blocks<Wide, Clamp>(in, n, out, lo, hi);
}

#if defined(NPYBRIDGE_X86)
/// 16 int32 in range as 16-bit values, in order (the packs work in 128-bit halves).
__attribute__((target("avx2"), always_inline)) inline npybridge_v4q pack_words(npybridge_v8i a, npybridge_v8i b,
                                                                               bool unsigned_words) noexcept {
    const npybridge_v16h words = unsigned_words ? __builtin_ia32_packusdw256(a, b) : __builtin_ia32_packssdw256(a, b);
    return __builtin_ia32_permdi256(reinterpret_cast<npybridge_v4q>(words), 0xD8);
}

/// 32 int32 in range as bytes, in order.
__attribute__((target("avx2"), always_inline)) inline npybridge_v8i pack_bytes(npybridge_v8i a, npybridge_v8i b,
                                                                               npybridge_v8i c, npybridge_v8i d,
                                                                               bool signed_bytes) noexcept {
    const npybridge_v16h ab = __builtin_ia32_packssdw256(a, b), cd = __builtin_ia32_packssdw256(c, d);
    const auto bytes = signed_bytes ? __builtin_ia32_packsswb256(ab, cd) : __builtin_ia32_packuswb256(ab, cd);
    return __builtin_ia32_permvarsi256(reinterpret_cast<npybridge_v8i>(bytes), npybridge_v8i{0, 4, 1, 5, 2, 6, 3, 7});
}

/// vpminsd, vpmaxsd.
__attribute__((target("avx2"), always_inline)) inline npybridge_v8i lanes_min(npybridge_v8i a,
                                                                              npybridge_v8i b) noexcept {
    return a < b ? a : b;
}
__attribute__((target("avx2"), always_inline)) inline npybridge_v8i lanes_max(npybridge_v8i a,
                                                                              npybridge_v8i b) noexcept {
    return a > b ? a : b;
}

/// Eight values cut to int32; `changed` gains floats not whole (NaN, infinities too) and int64 past int32. Floats
/// past int32 cut to its lowest: a narrower range refuses them, `Exact` (int32 storage) compares cut and float.
template <bool Exact, class Source>
__attribute__((target("avx2"), always_inline)) inline npybridge_v8i truncate_eight(const Source* in,
                                                                                   npybridge_v8i& changed) noexcept {
    if constexpr (std::is_same_v<Source, float>) {
        npybridge_v8f value;
        std::memcpy(&value, in, sizeof value);
        value = held_wide(value);
        const npybridge_v8i cut = __builtin_ia32_cvttps2dq256(value);
        const npybridge_v8f whole = Exact ? __builtin_convertvector(cut, npybridge_v8f)
                                          : __builtin_ia32_roundps256(value, 0xB);  // truncated, no inexact flag
        changed |= whole != value;
        return cut;
    } else if constexpr (std::is_same_v<Source, double>) {
        npybridge_v4d first, second;
        std::memcpy(&first, in, sizeof first);
        std::memcpy(&second, in + 4, sizeof second);
        first = held_wide(first);
        second = held_wide(second);
        const npybridge_v4i low = __builtin_ia32_cvttpd2dq256(first), high = __builtin_ia32_cvttpd2dq256(second);
        if constexpr (Exact) {
#if defined(__clang__)
            changed |= reinterpret_cast<npybridge_v8i>((__builtin_convertvector(low, npybridge_v4d) != first) |
                                                       (__builtin_convertvector(high, npybridge_v4d) != second));
#else  // GCC splits convertvector's in two
            changed |= reinterpret_cast<npybridge_v8i>((__builtin_ia32_cvtdq2pd256(low) != first) |
                                                       (__builtin_ia32_cvtdq2pd256(high) != second));
#endif
        } else {
            changed |= reinterpret_cast<npybridge_v8i>((__builtin_ia32_roundpd256(first, 0xB) != first) |
                                                       (__builtin_ia32_roundpd256(second, 0xB) != second));
        }
        return __builtin_shufflevector(low, high, 0, 1, 2, 3, 4, 5, 6, 7);
    } else if constexpr (std::is_same_v<Source, std::int64_t>) {
        npybridge_v4q first, second;
        std::memcpy(&first, in, sizeof first);
        std::memcpy(&second, in + 4, sizeof second);
        first = held_wide(first);
        second = held_wide(second);
        const npybridge_v4q bias = npybridge_v4q{} + 0x80000000LL;  // fits int32 when (x + 2^31) >> 32 == 0
        changed |= reinterpret_cast<npybridge_v8i>(__builtin_ia32_psrlqi256(first + bias, 32) |
                                                   __builtin_ia32_psrlqi256(second + bias, 32));
        return __builtin_shufflevector(reinterpret_cast<npybridge_v8i>(first), reinterpret_cast<npybridge_v8i>(second),
                                       0, 2, 4, 6, 8, 10, 12, 14);
    } else {
        npybridge_v8i value;
        std::memcpy(&value, in, sizeof value);
        return value;
    }
}

/// store_checked for int32, int64, float32 or float64 into 8- to 32-bit storage, 32 a step (AVX2): cut to int32,
/// packed; a block's least and most tested at its end.
template <class Source, class Target>
__attribute__((target("avx2"))) std::size_t store_checked_packed_avx2(const Source* in, std::size_t n, Target* out,
                                                                      std::int32_t lo, std::int32_t hi) noexcept {
    constexpr std::size_t block = 1024;
    std::size_t start = 0;
    for (; start + block <= n; start += block) {
        const npybridge_v8i zero{};
        npybridge_v8i changed = zero, least = zero + lo, most = zero + hi;
        for (std::size_t i = start; i < start + block; i += 32) {
            constexpr bool exact = sizeof(Target) == 4;
            const npybridge_v8i a = truncate_eight<exact>(in + i, changed),
                                b = truncate_eight<exact>(in + i + 8, changed),
                                c = truncate_eight<exact>(in + i + 16, changed),
                                d = truncate_eight<exact>(in + i + 24, changed);
            least = lanes_min(least, lanes_min(lanes_min(a, b), lanes_min(c, d)));
            most = lanes_max(most, lanes_max(lanes_max(a, b), lanes_max(c, d)));
            if constexpr (sizeof(Target) == 4) {
                std::memcpy(out + i, &a, sizeof a);
                std::memcpy(out + i + 8, &b, sizeof b);
                std::memcpy(out + i + 16, &c, sizeof c);
                std::memcpy(out + i + 24, &d, sizeof d);
            } else if constexpr (sizeof(Target) == 2) {
                const npybridge_v4q first = pack_words(a, b, hi > 32767), second = pack_words(c, d, hi > 32767);
                std::memcpy(out + i, &first, sizeof first);
                std::memcpy(out + i + 16, &second, sizeof second);
            } else {
                const npybridge_v8i bytes = pack_bytes(a, b, c, d, lo < 0);
                std::memcpy(out + i, &bytes, sizeof bytes);
            }
        }
        changed |= (least < lo) | (most > hi);
        if (!__builtin_ia32_ptestz256(reinterpret_cast<npybridge_v4q>(changed),
                                      reinterpret_cast<npybridge_v4q>(changed)))
            return start;
    }
    using Wide = std::conditional_t<std::is_same_v<Source, std::int64_t>, std::int64_t, std::int32_t>;
    const std::size_t rest = store_checked<Wide, double>(in + start, n - start, out + start, lo, hi);
    return rest == n - start ? n : start + rest;
}

/// store_checked for integers, compiled for AVX2.
template <class Source, class Target>
__attribute__((target("avx2"))) std::size_t store_checked_avx2(const Source* in, std::size_t n, Target* out, Source lo,
                                                               Source hi) noexcept {
    return store_checked_blocks<Source, Source>(in, n, out, lo, hi);
}
#endif

/// store_checked for integers, AVX2 when present.
template <class Source, class Target>
std::size_t store_checked_integers(const Source* in, std::size_t n, Target* out, Source lo, Source hi) noexcept {
#if defined(NPYBRIDGE_X86)
    if constexpr (std::is_same_v<Source, std::int32_t> && sizeof(Target) <= 2) {
        if (cpu_has_avx2()) return store_checked_packed_avx2(in, n, out, lo, hi);
    }
    if constexpr (std::is_same_v<Source, std::int64_t> && sizeof(Target) <= 4) {
        constexpr std::int64_t least = std::numeric_limits<std::int32_t>::min(),
                               most = std::numeric_limits<std::int32_t>::max();
        if (lo >= least && hi <= most && cpu_has_avx2())
            return store_checked_packed_avx2(in, n, out, static_cast<std::int32_t>(lo), static_cast<std::int32_t>(hi));
    }
    if (cpu_has_avx2()) return store_checked_avx2(in, n, out, lo, hi);
#endif
    return store_checked(in, n, out, lo, hi);
}

#if defined(NPYBRIDGE_SSE2)
/// Four floats clamped to [lo, hi] (maxps gives NaN lo) and cut to int32; `changed` gains the changed lanes.
inline __m128i clamp_to_int32(const float* in, __m128 lo, __m128 hi, __m128& changed) noexcept {
    const __m128 value = held(_mm_loadu_ps(in));
    const __m128i clamped = _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(value, lo), hi));
    changed = _mm_or_ps(changed, _mm_cmpneq_ps(_mm_cvtepi32_ps(clamped), value));
    return clamped;
}

inline __m128i clamp_to_int32(const double* in, __m128d lo, __m128d hi, __m128d& changed) noexcept {
    const __m128d a = held(_mm_loadu_pd(in)), b = held(_mm_loadu_pd(in + 2));
    const __m128i clamped_a = _mm_cvttpd_epi32(_mm_min_pd(_mm_max_pd(a, lo), hi));
    const __m128i clamped_b = _mm_cvttpd_epi32(_mm_min_pd(_mm_max_pd(b, lo), hi));
    changed = _mm_or_pd(changed, _mm_cmpneq_pd(_mm_cvtepi32_pd(clamped_a), a));
    changed = _mm_or_pd(changed, _mm_cmpneq_pd(_mm_cvtepi32_pd(clamped_b), b));
    return _mm_unpacklo_epi64(clamped_a, clamped_b);
}

/// store_checked for floats with int32 bounds, 16 a step, narrowed by saturating packs (unsigned 16-bit biased by
/// 2^15).
template <class Source, class Target>
std::size_t store_checked_sse2(const Source* in, std::size_t n, Target* out, std::int32_t lo,
                               std::int32_t hi) noexcept {
    constexpr bool single = std::is_same_v<Source, float>;
    const auto splat = [](std::int32_t v) {
        if constexpr (single)
            return _mm_set1_ps(static_cast<float>(v));
        else
            return _mm_set1_pd(static_cast<double>(v));
    };
    using lanes = decltype(splat(0));
    const lanes low = splat(lo), high = splat(hi);
    const bool unsigned_16 = sizeof(Target) == 2 && hi > 32767;
    const __m128i bias = _mm_set1_epi32(unsigned_16 ? 32768 : 0), flip = _mm_set1_epi16(unsigned_16 ? -32768 : 0);
    constexpr std::size_t block = 1024;
    std::size_t start = 0;
    for (; start + block <= n; start += block) {
        lanes changed{};
        for (std::size_t i = start; i < start + block; i += 16) {
            const __m128i q0 = clamp_to_int32(in + i, low, high, changed);
            const __m128i q1 = clamp_to_int32(in + i + 4, low, high, changed);
            const __m128i q2 = clamp_to_int32(in + i + 8, low, high, changed);
            const __m128i q3 = clamp_to_int32(in + i + 12, low, high, changed);
            auto* to = reinterpret_cast<__m128i*>(out + i);
            if constexpr (sizeof(Target) == 4) {
                _mm_storeu_si128(to, q0);
                _mm_storeu_si128(to + 1, q1);
                _mm_storeu_si128(to + 2, q2);
                _mm_storeu_si128(to + 3, q3);
            } else if constexpr (sizeof(Target) == 2) {
                const auto packed = [&](__m128i a, __m128i b) {
                    return _mm_xor_si128(_mm_packs_epi32(_mm_sub_epi32(a, bias), _mm_sub_epi32(b, bias)), flip);
                };
                _mm_storeu_si128(to, packed(q0, q1));
                _mm_storeu_si128(to + 1, packed(q2, q3));
            } else {
                const __m128i a = _mm_packs_epi32(q0, q1), b = _mm_packs_epi32(q2, q3);
                _mm_storeu_si128(to, lo < 0 ? _mm_packs_epi16(a, b) : _mm_packus_epi16(a, b));
            }
        }
        int mask;
        if constexpr (single)
            mask = _mm_movemask_ps(changed);
        else
            mask = _mm_movemask_pd(changed);
        if (mask != 0) return start;
    }
    const std::size_t rest = store_checked<std::int32_t, double>(in + start, n - start, out + start, lo, hi);
    return rest == n - start ? n : start + rest;
}
#endif

/// store_checked for floats, AVX2 or SSE2 when the bounds fit int32.
template <class Source, class Target>
std::size_t store_checked_floats(const Source* in, std::size_t n, Target* out, std::int64_t lo,
                                 std::int64_t hi) noexcept {
    const bool fits_int32 = hi <= std::numeric_limits<std::int32_t>::max();
#if defined(NPYBRIDGE_X86)
    if (fits_int32 && cpu_has_avx2()) {
        return store_checked_packed_avx2(in, n, out, static_cast<std::int32_t>(lo), static_cast<std::int32_t>(hi));
    }
#endif
#if defined(NPYBRIDGE_SSE2)
    if (fits_int32) return store_checked_sse2(in, n, out, static_cast<std::int32_t>(lo), static_cast<std::int32_t>(hi));
#endif
    if (fits_int32)
        return store_checked<std::int32_t, double>(in, n, out, static_cast<std::int32_t>(lo),
                                                   static_cast<std::int32_t>(hi));
    return store_checked<std::int64_t, double>(in, n, out, lo, hi);
}

/// Whether a float is whole, from its bits (FTZ-proof); NaN and infinities are not.
template <class T>
bool is_whole(T value) noexcept {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        using bits_t = std::conditional_t<std::is_same_v<T, float>, std::uint32_t, std::uint64_t>;
        constexpr int mantissa = std::numeric_limits<T>::digits - 1;
        constexpr int bias = std::numeric_limits<T>::max_exponent - 1;
        bits_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        const int exponent = static_cast<int>((bits >> mantissa) & ((bits_t{1} << (sizeof(T) * 8 - 1 - mantissa)) - 1));
        const bits_t fraction = bits & ((bits_t{1} << mantissa) - 1);
        if (exponent == 2 * bias + 1) return false;                  // NaN, infinity
        if (exponent < bias) return exponent == 0 && fraction == 0;  // |value| < 1: only zero
        const int fraction_bits = mantissa - (exponent - bias);
        return fraction_bits <= 0 || (fraction & ((bits_t{1} << fraction_bits) - 1)) == 0;
    } else {
        return value == value && std::trunc(value) == value && value - value == 0;
    }
}

/// The first value not whole in [lo, hi], else n.
template <class T>
std::size_t first_not_whole(const T* in, std::size_t n, double lo, double hi) noexcept {
    const auto bad = [&](T value) {
        const auto wide = static_cast<std::conditional_t<(sizeof(T) > 8), long double, double>>(value);
        return !(wide >= lo && wide <= hi) || !is_whole(value);
    };
    constexpr std::size_t block = 4096;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t end = std::min(n, start + block);
        bool any = false;
        for (std::size_t i = start; i < end; ++i) any |= bad(in[i]);
        if (!any) continue;
        for (std::size_t i = start; i < end; ++i) {
            if (bad(in[i])) return i;
        }
    }
    return n;
}

/// `magnitude` rounded once to `digits` bits, ties to even.
inline double round_to_digits(std::uint64_t magnitude, unsigned digits) noexcept {
    if (magnitude == 0) return 0;
    const int width = 64 - __builtin_clzll(magnitude);
    if (width <= static_cast<int>(digits)) return static_cast<double>(magnitude);
    const int shift = width - static_cast<int>(digits);
    std::uint64_t kept = magnitude >> shift;
    const std::uint64_t rest = magnitude & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && (kept & 1) != 0)) ++kept;
    return std::ldexp(static_cast<double>(kept), shift);
}

/// The smallest magnitude rounding to infinity: halfway from `largest` to the next power of two.
inline double overflow_threshold(double largest) noexcept {
    return (largest + std::ldexp(1.0, std::ilogb(largest) + 1)) / 2;
}

/// Every other value of `in`, m of them, into `out`; nothing read past in[2 * (m - 1)].
template <class Source>
void gather_every_other(const Source* in, std::size_t m, Source* out) noexcept {
    std::size_t i = 0;
#if defined(NPYBRIDGE_SSE2)
    if constexpr (sizeof(Source) == 4) {  // a shuffle: bits, never arithmetic
        for (; i + 4 < m; i += 4) {
            const __m128 a = _mm_loadu_ps(reinterpret_cast<const float*>(in + 2 * i));
            const __m128 b = _mm_loadu_ps(reinterpret_cast<const float*>(in + 2 * i + 4));
            _mm_storeu_ps(reinterpret_cast<float*>(out + i), _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
        }
    } else if constexpr (sizeof(Source) == 8) {
        for (; i + 2 < m; i += 2) {
            const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
            const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i + 2));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_unpacklo_epi64(a, b));
        }
    }
#endif
    for (; i < m; ++i) out[i] = in[2 * i];
}

}  // namespace detail
}  // namespace npybridge
