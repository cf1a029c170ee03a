// npybridge/detail/spellings.hpp — an enum value from a Python str among its spellings, for policies.hpp.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/messages_arguments.hpp>
#include <npybridge/python.hpp>

#include <cstddef>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

template <class Enum>
struct spelling {
    const char* text;
    Enum value;
};

/// The value spelled by `obj` (nullptr: the first, the default); conversion_error naming `what` and the value
/// otherwise (for a str, with the spellings).
template <class Enum, std::size_t N>
Enum spelled(PyObject* obj, const char* what, const spelling<Enum> (&spellings)[N]) {
    if (obj == nullptr) return spellings[0].value;
    if (!PyUnicode_Check(obj)) throw_not_a_str(what, obj);
    for (const spelling<Enum>& s : spellings) {
        if (PyUnicode_CompareWithASCIIString(obj, s.text) == 0) return s.value;
    }
    std::string allowed;
    for (const spelling<Enum>& s : spellings) allowed += (allowed.empty() ? "'" : ", '") + std::string(s.text) + "'";
    throw_not_a_spelling(what, allowed, obj);
}

}  // namespace detail
}  // namespace npybridge
