// npybridge/dtype.hpp — moved to npybridge/core/dtype.hpp with the rest of the Python-free core; this forwarding header
// stays for one release (CHANGELOG.md). Define NPYBRIDGE_ALLOW_MOVED_HEADERS to silence its message.
#pragma once

#ifndef NPYBRIDGE_ALLOW_MOVED_HEADERS
#pragma message( \
    "npybridge: <npybridge/dtype.hpp> moved to <npybridge/core/dtype.hpp>; include that one (the old path goes in the next release)")
#endif
#include <npybridge/core/dtype.hpp>
