// npybridge/core.hpp — the Python-free core in one include: C++17 and Boost.PFR, no CPython or NumPy.
#pragma once

#include <npybridge/core/adapter.hpp>
#include <npybridge/core/config.hpp>
#include <npybridge/core/dlpack_abi.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/layout.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/core/owner.hpp>
#include <npybridge/core/quantization.hpp>
#include <npybridge/core/reflect.hpp>
#include <npybridge/core/scalar_types.hpp>
#include <npybridge/core/tensor.hpp>
#include <npybridge/core/version.hpp>
#include <npybridge/core/vocabulary.hpp>
