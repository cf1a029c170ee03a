// expect: npybridge: two policy_is<> constraints on one argument
#include <npybridge/arg.hpp>

namespace npb = npybridge;
using both =
    npb::arg<npb::tensor, npb::policy_is<npb::borrow_policy::must_borrow>, npb::policy_is<npb::borrow_policy::copy>>;
static_assert(both::spec.has_dtype == false);
