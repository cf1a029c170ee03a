// npybridge/policies.hpp — the policies and options (core/options.hpp), and their Python spellings.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/python.hpp>

#include <optional>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// A policy from its Python spelling, the enumerator's name ("try_borrow", "must_borrow", "copy"); nullptr gives the
/// default. conversion_error names the argument `what` and the value for anything else (not a str included). GIL
/// required.
inline borrow_policy borrow_policy_from(PyObject* spelling, const char* what = "policy");
/// The same for share_policy: "try_share", "must_share", "copy".
inline share_policy share_policy_from(PyObject* spelling, const char* what = "policy");
/// The same for narrowing: "checked", "wrap", "reject".
inline narrowing narrowing_from(PyObject* spelling, const char* what = "narrowing");
/// The same for lowbit_format: "int8", "ml_dtypes".
inline lowbit_format lowbit_format_from(PyObject* spelling, const char* what = "lowbit_format");
/// The same for lowbit_layout: "compact", "row_aligned"; nullptr and None give nullopt (MegBrain's layout).
inline std::optional<lowbit_layout> lowbit_layout_from(PyObject* spelling, const char* what = "layout");

/// Example: a conversion whose options come from a Python caller's keyword arguments.
/// ```cpp
/// #include <npybridge/convert.hpp>
/// #include <npybridge/policies.hpp>
///
/// npybridge::tensor from_python(PyObject* array, PyObject* policy, PyObject* narrowing) {
///     npybridge::to_tensor_options options;
///     options.policy = npybridge::borrow_policy_from(policy);  // "must_borrow" -> borrow_policy::must_borrow
///     options.narrow = npybridge::narrowing_from(narrowing);
///     return npybridge::to_tensor(array, options).tensor;
/// }
/// ```

// ---- Definitions

}  // namespace npybridge

#include <npybridge/detail/spellings.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

inline borrow_policy borrow_policy_from(PyObject* spelling, const char* what) {
    static const detail::spelling<borrow_policy> spellings[] = {{"try_borrow", borrow_policy::try_borrow},
                                                                {"must_borrow", borrow_policy::must_borrow},
                                                                {"copy", borrow_policy::copy}};
    return detail::spelled(spelling, what, spellings);
}

inline share_policy share_policy_from(PyObject* spelling, const char* what) {
    static const detail::spelling<share_policy> spellings[] = {
        {"try_share", share_policy::try_share}, {"must_share", share_policy::must_share}, {"copy", share_policy::copy}};
    return detail::spelled(spelling, what, spellings);
}

inline narrowing narrowing_from(PyObject* spelling, const char* what) {
    static const detail::spelling<narrowing> spellings[] = {
        {"checked", narrowing::checked}, {"wrap", narrowing::wrap}, {"reject", narrowing::reject}};
    return detail::spelled(spelling, what, spellings);
}

inline lowbit_format lowbit_format_from(PyObject* spelling, const char* what) {
    static const detail::spelling<lowbit_format> spellings[] = {{"int8", lowbit_format::int8},
                                                                {"ml_dtypes", lowbit_format::ml_dtypes}};
    return detail::spelled(spelling, what, spellings);
}

inline std::optional<lowbit_layout> lowbit_layout_from(PyObject* spelling, const char* what) {
    if (spelling == nullptr || spelling == Py_None) return std::nullopt;
    static const detail::spelling<lowbit_layout> spellings[] = {{"compact", lowbit_layout::compact},
                                                                {"row_aligned", lowbit_layout::row_aligned}};
    return detail::spelled(spelling, what, spellings);
}

}  // namespace npybridge
