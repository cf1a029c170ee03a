// npybridge/detail/numpy_api.hpp — NumPy's C-API tables, and each row's built-in type number. Included by numpy.hpp.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>

#include <array>
#include <string_view>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// NumPy's C-API table `capsule_name` of _multiarray_umath; nullptr with a Python error when unavailable.
inline void** numpy_api_table(const char* capsule_name) noexcept {
    PyObject* module = PyImport_ImportModule("numpy._core._multiarray_umath");
    if (module == nullptr && PyErr_ExceptionMatches(PyExc_ModuleNotFoundError)) {
        PyErr_Clear();
        module = PyImport_ImportModule("numpy.core._multiarray_umath");  // NumPy 1.x
    }
    if (module == nullptr) return nullptr;
    PyObject* capsule = PyObject_GetAttrString(module, capsule_name);
    Py_DECREF(module);
    if (capsule == nullptr) return nullptr;
    void** table =
        PyCapsule_CheckExact(capsule) ? static_cast<void**>(PyCapsule_GetPointer(capsule, nullptr)) : nullptr;
    Py_DECREF(capsule);
    if (table == nullptr && !PyErr_Occurred()) {
        PyErr_Format(PyExc_ImportError, "npybridge: numpy's %s is not a capsule", capsule_name);
    }
    return table;
}

/// NumPy's type number of each built-in dtype name.
inline constexpr std::pair<std::string_view, int> numpy_type_numbers[] = {
    {"bool", NPY_BOOL},           {"int8", NPY_INT8},
    {"int16", NPY_INT16},         {"int32", NPY_INT32},
    {"int64", NPY_INT64},         {"uint8", NPY_UINT8},
    {"uint16", NPY_UINT16},       {"uint32", NPY_UINT32},
    {"uint64", NPY_UINT64},       {"float16", NPY_HALF},
    {"float32", NPY_FLOAT32},     {"float64", NPY_FLOAT64},
    {"complex64", NPY_COMPLEX64}, {"complex128", NPY_COMPLEX128},
};

/// NumPy type number of a C++ element type, or -1.
template <class Element>
constexpr int numpy_type_num_of() noexcept {
    for (const auto& [name, number] : numpy_type_numbers) {
        if (name == facts_of<Element>().numpy_name) return number;
    }
    return -1;
}

template <std::size_t... I>
constexpr std::array<int, sizeof...(I)> make_numpy_type_nums(std::index_sequence<I...>) {
    return {
        (dtype_table[I].form == numpy_form::builtin ? numpy_type_num_of<typename row_t<I>::element_type>() : -1)...};
}

/// Built-in NumPy type number per row; -1 without a built-in form.
inline constexpr std::array<int, dtype_count> numpy_type_nums =
    make_numpy_type_nums(std::make_index_sequence<dtype_count>{});

}  // namespace detail
}  // namespace npybridge
