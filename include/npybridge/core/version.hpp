// npybridge/core/version.hpp — npybridge's version, written here only (pip and CMake read it).
#pragma once

#include <npybridge/core/config.hpp>

/// npybridge's version as text, "MAJOR.MINOR.PATCH".
#define NPYBRIDGE_VERSION "0.6.0"
/// The version's first number.
#define NPYBRIDGE_VERSION_MAJOR 0
/// The version's second number (0.x releases may break: docs/upgrading.md).
#define NPYBRIDGE_VERSION_MINOR 6
/// The version's third number (fixes).
#define NPYBRIDGE_VERSION_PATCH 0

/// Example: code that needs 0.6's names.
/// ```cpp
/// #include <npybridge/core/version.hpp>
///
/// static_assert(NPYBRIDGE_VERSION_MAJOR > 0 || NPYBRIDGE_VERSION_MINOR >= 6, "needs npybridge 0.6 or later");
/// ```

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {
/// Whether "M.m.p" reads as these numbers (the spellings cannot drift).
constexpr bool version_text_is(const char* text, int major, int minor, int patch) {
    const int parts[3] = {major, minor, patch};
    for (int part = 0; part < 3; ++part) {
        int value = 0;
        if (*text < '0' || *text > '9') return false;
        while (*text >= '0' && *text <= '9') value = value * 10 + (*text++ - '0');
        if (value != parts[part] || *text != (part < 2 ? '.' : '\0')) return false;
        if (part < 2) ++text;
    }
    return true;
}
}  // namespace detail
}  // namespace npybridge

static_assert(
    npybridge::detail::version_text_is(NPYBRIDGE_VERSION, NPYBRIDGE_VERSION_MAJOR, NPYBRIDGE_VERSION_MINOR,
                                       NPYBRIDGE_VERSION_PATCH),
    "npybridge: NPYBRIDGE_VERSION and NPYBRIDGE_VERSION_MAJOR / MINOR / PATCH disagree: change them together");
