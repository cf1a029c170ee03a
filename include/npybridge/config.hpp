// npybridge/config.hpp — every compile-time knob of npybridge, each with its default.
#pragma once

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
