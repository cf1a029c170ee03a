// Written by tools/upgrading.py (docs/upgrading.md).
#error "npybridge: <npybridge/scalar_types.hpp> was removed in 0.6.0: include <npybridge/core/scalar_types.hpp>"
