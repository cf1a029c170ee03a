// npybridge/dlpack_abi.hpp: removed in 0.6.0 (docs/upgrading.md); written by tools/upgrading.py.
#error "npybridge: <npybridge/dlpack_abi.hpp> was removed in 0.6.0: include <npybridge/core/dlpack_abi.hpp>"
