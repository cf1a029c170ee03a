// Written by tools/upgrading.py (docs/upgrading.md).
#error "npybridge: <npybridge/reflect.hpp> was removed in 0.6.0: include <npybridge/core/reflect.hpp>"
