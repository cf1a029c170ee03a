// npybridge/core/config.hpp — every compile-time knob of npybridge, each with its default.
#pragma once

// Before anything else (Boost.PFR's own #error, then screens of template errors, follow a pre-C++17 compile):
// Bazel 4 compiles with -std=c++0x unless told otherwise.
#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 201703L
#error \
    "npybridge: needs C++17 or newer: compile with -std=c++17 (Bazel: `build --cxxopt=-std=c++17 --host_cxxopt=-std=c++17` in .bazelrc; CMake: target_compile_features(<target> PRIVATE cxx_std_17), which npybridge::npybridge carries)"
#endif

#include <cstddef>

/// Most dimensions npybridge's reference tensor holds (MegBrain's TensorShape
/// holds 7). An adapter for another tensor type declares its own limit.
#ifndef NPYBRIDGE_MAX_NDIM
#define NPYBRIDGE_MAX_NDIM 7
#endif

/// Name of the one NumPy C-API table pointer shared by every translation unit
/// that includes npybridge (NumPy's PY_ARRAY_UNIQUE_SYMBOL). Change it only if
/// another library in the same binary already uses this name.
#ifndef NPYBRIDGE_NUMPY_API_SYMBOL
#define NPYBRIDGE_NUMPY_API_SYMBOL npybridge_numpy_api
#endif

/// Low-bit kernels write outputs of at least this many bytes with streaming
/// (cache-bypassing) stores, as memcpy does for large copies: the lines are
/// overwritten whole, so reading them first only costs bandwidth.
#ifndef NPYBRIDGE_STREAMING_STORE_BYTES
#define NPYBRIDGE_STREAMING_STORE_BYTES (std::size_t{4} << 20)
#endif

/// pack() into an existing tensor packs into a per-thread temporary first (so
/// the tensor stays untouched when a value is invalid). Each thread keeps a
/// temporary of up to this many bytes between calls; larger ones are freed.
#ifndef NPYBRIDGE_PACK_SCRATCH_KEEP_BYTES
#define NPYBRIDGE_PACK_SCRATCH_KEEP_BYTES (std::size_t{64} << 20)
#endif

/// npybridge::tensor asks for transparent huge pages (Linux) for buffers of at
/// least this many bytes, as NumPy does.
#ifndef NPYBRIDGE_HUGE_PAGE_BYTES
#define NPYBRIDGE_HUGE_PAGE_BYTES (std::size_t{4} << 20)
#endif

/// Attributes of every `namespace npybridge`. Hidden visibility by default,
/// as pybind11 and nanobind do: each extension module keeps its own copy of
/// npybridge's functions and state (owner free list, dtype caches, registered
/// types and exception classes), so modules built with different npybridge
/// versions or settings cannot mix their copies in one process (GCC otherwise
/// merges such state process-wide, even for modules loaded RTLD_LOCAL). Build
/// your extension with -fvisibility=hidden too: GCC warns when a type of
/// yours with default visibility holds an npybridge type.
#ifndef NPYBRIDGE_NAMESPACE_ATTRIBUTES
#if defined(__GNUC__) || defined(__clang__)
#define NPYBRIDGE_NAMESPACE_ATTRIBUTES __attribute__((visibility("hidden")))
#else
#define NPYBRIDGE_NAMESPACE_ATTRIBUTES
#endif
#endif
