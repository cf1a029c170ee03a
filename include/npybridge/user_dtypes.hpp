// npybridge/user_dtypes.hpp — NumPy user dtypes bfloat16 and intb1 / intb2 / intb4, registered once per interpreter.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/user_dtype_registry.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/python.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Registers bfloat16 and intb1/2/4 with NumPy once per interpreter (reusing another npybridge module's, and ml_dtypes'
/// bfloat16), adding the scalar types to `module`. GIL required; false with a Python error. A template, compiled only
/// where called.
template <class = void>
bool register_user_dtypes(PyObject* module);

/// This interpreter's user dtypes (after register_user_dtypes()).
inline const user_dtype_set& user_dtypes() noexcept;

/// Example: a module's init adds npybridge's scalar types and checks bfloat16 has a type number.
/// ```cpp
/// #include <npybridge/user_dtypes.hpp>
///
/// int add_npybridge_dtypes(PyObject* module) {
///     if (!npybridge::register_user_dtypes(module)) return -1;  // a Python error is set
///     return npybridge::user_dtypes().bfloat16 >= 0 ? 0 : -1;
/// }
/// ```

// ---- Definitions

template <class>
bool register_user_dtypes(PyObject* module) {
    if (!import_numpy() || !import_numpy_ufuncs()) return false;
    detail::found_user_dtypes& found = detail::user_dtypes_found();
    PyObject* sys_modules = PyImport_GetModuleDict();
    PyObject* registry = PyDict_GetItemString(sys_modules, detail::registry_module);
    const bool known = found[0].type != nullptr;  // registered or found before
    if (!known && registry != nullptr) {
        for (std::size_t slot = 0; slot < detail::user_dtype_count; ++slot) {
            if (!detail::adopt_type(registry, detail::user_dtype_name(slot), found[slot])) return false;
        }
    } else if (!known && !detail::find_or_register(module, found)) {
        return false;
    }
    // Remake the registry if it was removed.
    if (registry == nullptr && !detail::make_registry(sys_modules, found)) return false;
    return detail::publish_user_dtypes(module, found, detail::user_dtypes_state());
}

inline const user_dtype_set& user_dtypes() noexcept { return detail::user_dtypes_state(); }

}  // namespace npybridge
