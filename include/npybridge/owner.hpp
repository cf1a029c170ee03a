// Written by tools/upgrading.py (docs/upgrading.md).
#error "npybridge: <npybridge/owner.hpp> was removed in 0.6.0: include <npybridge/core/owner.hpp>"
