// npybridge/dlpack_abi.hpp — moved to npybridge/core/dlpack_abi.hpp with the rest of the Python-free core; this forwarding header
// stays for one release (CHANGELOG.md). Define NPYBRIDGE_ALLOW_MOVED_HEADERS to silence its message.
#pragma once

#ifndef NPYBRIDGE_ALLOW_MOVED_HEADERS
#pragma message( \
    "npybridge: <npybridge/dlpack_abi.hpp> moved to <npybridge/core/dlpack_abi.hpp>; include that one (the old path goes in the next release)")
#endif
#include <npybridge/core/dlpack_abi.hpp>
