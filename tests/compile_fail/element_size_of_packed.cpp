// expect: npybridge: a packed low-bit dtype has no per-element byte size
#include <npybridge/dtype.hpp>
constexpr auto size = npybridge::element_size<npybridge::dtype_enum::IntB4>();
