// npybridge/core/config.hpp — npybridge's compile-time knobs, each with its default.
#pragma once

// First, before PFR's #error and screens of template errors: Bazel 4 compiles with -std=c++0x unless told.
#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 201703L
#error \
    "npybridge: needs C++17 or newer: compile with -std=c++17 (Bazel: `build --cxxopt=-std=c++17 --host_cxxopt=-std=c++17` in .bazelrc; CMake: target_compile_features(<target> PRIVATE cxx_std_17), which npybridge::npybridge carries)"
#endif

#include <cstddef>

/// Most dimensions npybridge's tensor holds (MegBrain's holds 7); other adapters declare their own.
#ifndef NPYBRIDGE_MAX_NDIM
#define NPYBRIDGE_MAX_NDIM 7
#endif

/// The NumPy C-API table pointer's name (PY_ARRAY_UNIQUE_SYMBOL); change it only on a clash in one binary.
#ifndef NPYBRIDGE_NUMPY_API_SYMBOL
#define NPYBRIDGE_NUMPY_API_SYMBOL npybridge_numpy_api
#endif

/// Low-bit kernels write outputs from this size with streaming stores (lines overwritten whole need no read).
#ifndef NPYBRIDGE_STREAMING_STORE_BYTES
#define NPYBRIDGE_STREAMING_STORE_BYTES (std::size_t{4} << 20)
#endif

/// Per-thread scratch pack() keeps between calls (it packs there first, so a tensor stays untouched on a bad value).
#ifndef NPYBRIDGE_PACK_SCRATCH_KEEP_BYTES
#define NPYBRIDGE_PACK_SCRATCH_KEEP_BYTES (std::size_t{64} << 20)
#endif

/// npybridge::tensor asks for transparent huge pages from this size, as NumPy does.
#ifndef NPYBRIDGE_HUGE_PAGE_BYTES
#define NPYBRIDGE_HUGE_PAGE_BYTES (std::size_t{4} << 20)
#endif

/// Attributes of every `namespace npybridge`: hidden, as in pybind11 and nanobind, so each module keeps its own state.
/// Build extensions with -fvisibility=hidden too.
#ifndef NPYBRIDGE_NAMESPACE_ATTRIBUTES
#if defined(__GNUC__) || defined(__clang__)
#define NPYBRIDGE_NAMESPACE_ATTRIBUTES __attribute__((visibility("hidden")))
#else
#define NPYBRIDGE_NAMESPACE_ATTRIBUTES
#endif
#endif

/// Example: a knob is set for the whole build, with -D on every compile line (or before each npybridge include).
/// ```cpp
/// #define NPYBRIDGE_MAX_NDIM 4
/// #include <npybridge/core/config.hpp>
///
/// static_assert(NPYBRIDGE_MAX_NDIM == 4, "tensors of up to 4 dimensions");
/// ```
