"""Compiler flags for npybridge's own tests, tools and examples (never for the library)."""

NPYBRIDGE_WARNINGS = [
    "-Wall",
    "-Wextra",
    "-Werror",
]

NPYBRIDGE_COPTS = NPYBRIDGE_WARNINGS + [
    # As every Python extension should be built (and as npybridge's own
    # namespace is, see NPYBRIDGE_NAMESPACE_ATTRIBUTES in config.hpp).
    "-fvisibility=hidden",
]
