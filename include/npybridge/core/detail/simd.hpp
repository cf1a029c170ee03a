// npybridge/core/detail/simd.hpp — which SIMD instructions npybridge's kernels may use; kernels test these macros only.
#pragma once

#include <npybridge/core/config.hpp>

// x86 with GCC or Clang: SSSE3 kernels by target attribute, chosen at run time, so plain x86 builds run anywhere.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define NPYBRIDGE_X86 1
#include <tmmintrin.h>  // not <immintrin.h>, which costs parse time
#endif

// x86-64: SSE2 is in the architecture, used unconditionally.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NPYBRIDGE_SSE2 1
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Whether NPYBRIDGE_SIMD's value asks for the baseline.
inline bool baseline_only(const char* setting) noexcept {
    return setting != nullptr && std::strcmp(setting, "baseline") == 0;
}

/// NPYBRIDGE_SIMD=baseline: no level chosen at run time (AVX2, F16C, SSSE3), for tests of the others. Read once.
inline bool simd_baseline_only() noexcept {
    static const bool baseline = baseline_only(std::getenv("NPYBRIDGE_SIMD"));
    return baseline;
}

/// Whether this CPU runs AVX2, the widest level (each kernel has a portable or SSE2 level with the same bits). Asked
/// once.
inline bool cpu_has_avx2() noexcept {
#if defined(NPYBRIDGE_X86)
    static const bool avx2 = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0 && !simd_baseline_only();
    }();
    return avx2;
#else
    return false;
#endif
}

#if defined(NPYBRIDGE_SSE2)
/// A loaded vector kept in a register: else the compiler may read memory again for a second use.
template <class V>
inline V held(V value) noexcept {
    asm("" : "+x"(value));
    return value;
}
#endif

#if defined(NPYBRIDGE_X86)
// Vectors for the AVX2 / F16C levels, in GCC's vector extensions (no <immintrin.h>).
typedef float npybridge_v8f __attribute__((vector_size(32)));
typedef std::int32_t npybridge_v8i __attribute__((vector_size(32)));
typedef std::uint32_t npybridge_v8u __attribute__((vector_size(32)));
typedef short npybridge_v8hi __attribute__((vector_size(16)));
typedef short npybridge_v16h __attribute__((vector_size(32)));
typedef long long npybridge_v4q __attribute__((vector_size(32)));
typedef double npybridge_v4d __attribute__((vector_size(32)));
typedef std::int32_t npybridge_v4i __attribute__((vector_size(16)));
typedef unsigned char npybridge_v16b __attribute__((vector_size(16)));
typedef unsigned char npybridge_v32b __attribute__((vector_size(32)));

/// held() for the AVX levels' vectors.
template <class V>
__attribute__((target("avx"), always_inline)) inline V held_wide(V value) noexcept {
    asm("" : "+x"(value));
    return value;
}
#endif

}  // namespace detail
}  // namespace npybridge
