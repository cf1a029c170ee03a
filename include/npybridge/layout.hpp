// Written by tools/upgrading.py (docs/upgrading.md).
#error "npybridge: <npybridge/layout.hpp> was removed in 0.6.0: include <npybridge/core/layout.hpp>"
