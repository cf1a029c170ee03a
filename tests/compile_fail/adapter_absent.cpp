// expect: npybridge: this tensor type has no tensor_adapter: specialize npybridge::tensor_adapter<T>
#include <npybridge/core/tensor.hpp>

struct my_tensor {};

static_assert(npybridge::check_adapter<my_tensor>());
