// expect: npybridge: a packed low-bit dtype has no per-element byte size
#include <npybridge/core/dtype.hpp>
constexpr auto size = npybridge::element_size<npybridge::dtype_enum::IntB4>();
