// expect: npybridge: borrow_only and copy_always contradict each other
#include <npybridge/arg.hpp>

using both = npybridge::arg<npybridge::tensor, npybridge::borrow_only, npybridge::copy_always>;
static_assert(both::spec.has_dtype == false);
