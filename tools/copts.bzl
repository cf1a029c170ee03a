"""Compiler flags for npybridge's own tests, tools and examples (never for the library)."""

NPYBRIDGE_WARNINGS = [
    "-Wall",
    "-Wextra",
    "-Werror",
]
