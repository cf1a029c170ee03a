// expect: npybridge: write policy_is<borrow_policy::must_borrow> (borrow_only goes in the next release)
// A tag name of before 0.6 still compiles, with a deprecation that names its replacement (an error here only
// because this file asks for one).
#pragma GCC diagnostic error "-Wdeprecated-declarations"
#include <npybridge/arg.hpp>

using old_spelling = npybridge::arg<npybridge::tensor, npybridge::borrow_only>;
static_assert(old_spelling::spec.policy == npybridge::borrow_policy::must_borrow);
