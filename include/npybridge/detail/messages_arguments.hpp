// npybridge/detail/messages_arguments.hpp — errors about a caller's keyword arguments, without NumPy.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/python.hpp>

#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// An argument that is no str: its name, what was given.
[[noreturn]] inline void throw_not_a_str(const char* what, PyObject* given) {
    throw conversion_error(std::string(what) + " must be a str, got " + safe_repr(given));
}

/// A str none of an argument's spellings: the argument, its spellings ('a', 'b'), what was given.
[[noreturn]] inline void throw_not_a_spelling(const char* what, const std::string& spellings, PyObject* given) {
    throw conversion_error(std::string(what) + " must be one of " + spellings + ", got " + safe_repr(given));
}

}  // namespace detail
}  // namespace npybridge
