// npybridge/core/detail/simd.hpp — the one place that says which SIMD instructions npybridge's kernels may use.
// Python-free. Every kernel header includes this and tests these macros only.
#pragma once

#include <npybridge/core/config.hpp>

// x86 with GCC or Clang: the SSSE3 low-bit kernels, compiled with a target attribute and chosen at run time
// (__builtin_cpu_supports), so a binary built for plain x86 still runs everywhere.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define NPYBRIDGE_X86 1
#include <tmmintrin.h>  // SSSE3 and below: all the kernels use (<immintrin.h> would cost a user ~0.45 s of parse)
#endif

// x86-64: SSE2 is part of the architecture, so the narrowing checks and the tile transposes use it
// unconditionally.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NPYBRIDGE_SSE2 1
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Whether this CPU runs AVX2: the kernels' widest level (each has a portable or SSE2 level with the same bits,
/// and the tests call every level this CPU runs directly). Asked once.
inline bool cpu_has_avx2() noexcept {
#if defined(NPYBRIDGE_X86)
    static const bool avx2 = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    }();
    return avx2;
#else
    return false;
#endif
}

}  // namespace detail
}  // namespace npybridge
