// npybridge/npybridge.hpp — the umbrella: everything npybridge offers, in one include (but the binding-library
// casters of npybridge/bind/, which need their library).
#pragma once

#include <npybridge/config.hpp>
#include <npybridge/arg.hpp>
#include <npybridge/buffer.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/dlpack.hpp>
#include <npybridge/dtype.hpp>
#include <npybridge/errors.hpp>
#include <npybridge/lowbit.hpp>
#include <npybridge/megengine_compat.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/policies.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/python_owner.hpp>
#include <npybridge/quantization.hpp>
#include <npybridge/reflect.hpp>
#include <npybridge/scalar_types.hpp>
#include <npybridge/tensor.hpp>
#include <npybridge/tracker.hpp>
#include <npybridge/user_dtypes.hpp>
#include <npybridge/version.hpp>
