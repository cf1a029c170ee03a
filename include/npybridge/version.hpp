// Written by tools/upgrading.py (docs/upgrading.md).
#error "npybridge: <npybridge/version.hpp> was removed in 0.6.0: include <npybridge/core/version.hpp>"
