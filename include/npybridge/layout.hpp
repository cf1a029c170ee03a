// npybridge/layout.hpp — moved to npybridge/core/layout.hpp with the rest of the Python-free core; this forwarding header
// stays for one release (CHANGELOG.md). Define NPYBRIDGE_ALLOW_MOVED_HEADERS to silence its message.
#pragma once

#ifndef NPYBRIDGE_ALLOW_MOVED_HEADERS
#pragma message( \
    "npybridge: <npybridge/layout.hpp> moved to <npybridge/core/layout.hpp>; include that one (the old path goes in the next release)")
#endif
#include <npybridge/core/layout.hpp>
