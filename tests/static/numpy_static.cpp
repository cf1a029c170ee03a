// Compile-time facts of dtype -> NumPy type number (docs/dtypes.md): compiling this file is passing.
#include <npybridge/numpy.hpp>

namespace npb = npybridge;
using npb::dtype_enum;

static_assert(npb::numpy_type_num_v<dtype_enum::Float32> == NPY_FLOAT32);
static_assert(npb::numpy_type_num_v<dtype_enum::Float16> == NPY_HALF);
static_assert(npb::numpy_type_num_v<dtype_enum::Uint8> == NPY_UINT8);
static_assert(npb::numpy_type_num_v<dtype_enum::Int8> == NPY_INT8);
static_assert(npb::numpy_type_num_v<dtype_enum::Int16> == NPY_INT16);
static_assert(npb::numpy_type_num_v<dtype_enum::Int32> == NPY_INT32);
static_assert(npb::numpy_type_num_v<dtype_enum::Uint16> == NPY_UINT16);
static_assert(npb::numpy_type_num_v<dtype_enum::Bool> == NPY_BOOL);
static_assert(npb::numpy_type_num_v<dtype_enum::Complex64> == NPY_COMPLEX64);
// Quantized dtypes travel as their base numpy type (plus metadata).
static_assert(npb::numpy_type_num_v<dtype_enum::Quantized8Asymm> == NPY_UINT8);
static_assert(npb::numpy_type_num_v<dtype_enum::QuantizedS32> == NPY_INT32);
static_assert(npb::numpy_type_num_v<dtype_enum::QuantizedS16> == NPY_INT16);
static_assert(npb::numpy_type_num_v<dtype_enum::QuantizedS1> == NPY_INT8);
static_assert(npb::numpy_type_num_v<dtype_enum::QuantizedS4> == NPY_INT8);
static_assert(npb::numpy_type_num_v<dtype_enum::Quantized4Asymm> == NPY_UINT8);
// No built-in numpy form.
static_assert(npb::numpy_type_num(dtype_enum::Byte) == -1 && npb::numpy_type_num(dtype_enum::UintB4) == -1);
static_assert(npb::numpy_type_num(dtype_enum::BFloat16) == -1 && npb::numpy_type_num(dtype_enum::IntB4) == -1);
// C++ types, with the narrowing rule.
static_assert(npb::numpy_type_num_for_v<double> == NPY_FLOAT32);
static_assert(npb::numpy_type_num_for_v<long long> == NPY_INT32);
static_assert(npb::numpy_type_num_for_v<unsigned short> == NPY_UINT16);
