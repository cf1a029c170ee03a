// Written by tools/upgrading.py (docs/upgrading.md).
#error "npybridge: <npybridge/dlpack_abi.hpp> was removed in 0.6.0: include <npybridge/core/dlpack_abi.hpp>"
