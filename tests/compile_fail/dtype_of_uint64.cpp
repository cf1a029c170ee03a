// expect: npybridge: this C++ type has no MegDNN dtype
#include <npybridge/core/dtype.hpp>
#include <cstdint>
constexpr auto id = npybridge::dtype_of_v<std::uint64_t>;
