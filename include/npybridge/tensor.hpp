// npybridge/tensor.hpp: removed in 0.6.0 (docs/upgrading.md); written by tools/upgrading.py.
#error "npybridge: <npybridge/tensor.hpp> was removed in 0.6.0: include <npybridge/core/tensor.hpp>"
