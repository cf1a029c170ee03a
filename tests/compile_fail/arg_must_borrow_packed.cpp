// expect: npybridge: policy_is<must_borrow> with a packed dtype can never succeed
// A borrowed IntB4 argument: NumPy holds one byte per value, the tensor four bits.
#include <npybridge/arg.hpp>

namespace npb = npybridge;
using packed_borrow =
    npb::arg<npb::tensor, npb::dtype_is<npb::dtype_enum::IntB4>, npb::policy_is<npb::borrow_policy::must_borrow>>;
static_assert(packed_borrow::spec.has_dtype);
