// expect: npybridge: this C++ type has no MegDNN dtype
#include <npybridge/core/dtype.hpp>
constexpr auto id = npybridge::dtype_of_v<float*>;
