// npybridge/scalar_types.hpp: removed in 0.6.0 (docs/upgrading.md); written by tools/upgrading.py.
#error "npybridge: <npybridge/scalar_types.hpp> was removed in 0.6.0: include <npybridge/core/scalar_types.hpp>"
