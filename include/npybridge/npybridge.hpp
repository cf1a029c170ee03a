// npybridge/npybridge.hpp — the core and the Python-facing headers (not bind/, megbrain*, megengine_compat).
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
