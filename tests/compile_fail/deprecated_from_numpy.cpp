// expect: npybridge: from_numpy converts a dtype: call from_numpy_dtype (from_numpy goes in the next release)
// The dtype conversion's name of before 0.6 still compiles, with a deprecation that names its replacement (an
// error here only because this file asks for one).
#pragma GCC diagnostic error "-Wdeprecated-declarations"
#include <npybridge/numpy_dtype.hpp>

npybridge::dtype read(PyObject* dtype_like) { return npybridge::from_numpy(dtype_like).type; }
