// Written by tools/upgrading.py (docs/upgrading.md).
#error "npybridge: <npybridge/quantization.hpp> was removed in 0.6.0: include <npybridge/core/quantization.hpp>"
