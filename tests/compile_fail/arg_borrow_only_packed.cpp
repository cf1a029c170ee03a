// expect: npybridge: borrow_only with a packed dtype can never succeed
// A borrowed IntB4 argument: NumPy holds one byte per value, the tensor four bits.
#include <npybridge/arg.hpp>

using packed_borrow = npybridge::arg<npybridge::tensor, npybridge::dtype_is<npybridge::dtype_enum::IntB4>, npybridge::borrow_only>;
static_assert(packed_borrow::spec.has_dtype);
