// npybridge/npybridge.hpp — the umbrella: everything npybridge offers, in one include: the Python-free core
// (npybridge/core.hpp) and the Python-facing headers. Not included: the binding-library casters of
// npybridge/bind/ (they need their library), npybridge/megbrain*.hpp (they need MegBrain's headers) and the
// migration shim npybridge/megengine_compat.hpp.
#pragma once

#include <npybridge/core.hpp>

#include <npybridge/arg.hpp>
#include <npybridge/array_quantization.hpp>
#include <npybridge/buffer.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/dlpack.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/policies.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/python_owner.hpp>
#include <npybridge/tracker.hpp>
#include <npybridge/user_dtypes.hpp>
