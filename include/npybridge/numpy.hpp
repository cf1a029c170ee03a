// npybridge/numpy.hpp — one NumPy C API for every translation unit, and dtype → NumPy type numbers.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>

#if defined(NUMPY_CORE_INCLUDE_NUMPY_NDARRAYOBJECT_H_) && !defined(NPYBRIDGE_NUMPY_API_INCLUDED)
#error \
    "npybridge: include npybridge headers before <numpy/arrayobject.h>: npybridge owns the NumPy C-API \
table of this binary (PY_ARRAY_UNIQUE_SYMBOL); after including npybridge, NumPy's API works in your code too"
#endif
/// Set once npybridge included NumPy's C API.
#define NPYBRIDGE_NUMPY_API_INCLUDED 1

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifndef NPY_NO_DEPRECATED_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#endif
// Every TU declares the table (NO_IMPORT_ARRAY); the inline variables below define it once.
#define PY_ARRAY_UNIQUE_SYMBOL NPYBRIDGE_NUMPY_API_SYMBOL
#define PY_UFUNC_UNIQUE_SYMBOL NPYBRIDGE_NUMPY_API_SYMBOL##_ufunc
#ifndef NO_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#ifndef NO_IMPORT_UFUNC
#define NO_IMPORT_UFUNC
#endif
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#include <npybridge/detail/numpy_api.hpp>
#include <npybridge/detail/numpy_compat.hpp>

#include <complex>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

// Per module (NumPy 1 does not hide them).
extern "C" {
NPYBRIDGE_NAMESPACE_ATTRIBUTES inline void** PyArray_API = nullptr;  // NPYBRIDGE_NUMPY_API_SYMBOL
NPYBRIDGE_NAMESPACE_ATTRIBUTES inline void** PyUFunc_API = nullptr;  // ..._ufunc
#if NPY_ABI_VERSION >= 0x02000000
NPYBRIDGE_NAMESPACE_ATTRIBUTES inline int PyArray_RUNTIME_VERSION = 0;
#endif
}

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Makes NumPy's C API usable in this binary (GIL held; again is cheap); false with a Python error when NumPy is
/// missing or too old.
inline bool import_numpy() noexcept;

/// Makes NumPy's ufunc C API usable (for user dtypes' loops); as import_numpy().
inline bool import_numpy_ufuncs() noexcept;

/// True once import_numpy() succeeded.
inline bool numpy_ready() noexcept { return PyArray_API != nullptr; }

/// Built-in NumPy type number of a dtype (quantized: its storage's); -1 without one.
constexpr int numpy_type_num(dtype_enum id) noexcept { return detail::numpy_type_nums[table_index(id)]; }

/// numpy_type_num at compile time: a dtype without a built-in form does not compile.
template <dtype_enum Id>
struct numpy_type_num_of {
    static_assert(info(Id).form == numpy_form::builtin,
                  "npybridge: this dtype has no built-in numpy type (Byte and UintB4 have no numpy form; "
                  "BFloat16 and IntB1/2/4 are numpy user dtypes registered at run time)");
    static constexpr int value = numpy_type_num(Id);
};

/// numpy_type_num_of<Id>::value.
template <dtype_enum Id>
inline constexpr int numpy_type_num_v = numpy_type_num_of<Id>::value;

/// NumPy type number of a C++ type (int64 -> NPY_INT32).
template <class T>
inline constexpr int numpy_type_num_for_v = numpy_type_num_v<dtype_of_v<T>>;

/// What a numpy dtype becomes, and whether its values narrow (int64 -> Int32, float64 -> Float32).
struct numpy_dtype_match {
    dtype type;
    bool narrowed = false;
};

/// Which numpy user dtype stands for BFloat16 / IntB1/2/4: `preferred` (MegEngine's when imported, else ml_dtypes',
/// else npybridge's) makes results, `own` (npybridge's) is cast through.
enum class user_dtype_choice { preferred, own };

/// The numpy descr of a user dtype (new reference or nullptr), set by register_user_dtypes(); unset: none.
inline PyArray_Descr* (*user_dtype_descr_hook)(dtype_enum, user_dtype_choice) = nullptr;
/// The dtype of a numpy user type number, set by register_user_dtypes().
inline std::optional<dtype_enum> (*user_dtype_lookup_hook)(int) = nullptr;

/// Example: NumPy's C API made usable, then an int32 array.
/// ```cpp
/// #include <npybridge/numpy.hpp>
///
/// PyObject* four_zeros() {
///     if (!npybridge::import_numpy()) return nullptr;  // ImportError set
///     npy_intp n = 4;
///     return PyArray_Zeros(1, &n, PyArray_DescrFromType(npybridge::numpy_type_num_for_v<std::int32_t>), 0);
/// }
/// ```

// ---- Definitions

inline bool import_numpy() noexcept {
    if (PyArray_API != nullptr) return true;
    void** table = detail::numpy_api_table("_ARRAY_API");
    if (table == nullptr) return false;
    PyArray_API = table;
    if (NPY_VERSION < PyArray_GetNDArrayCVersion()) {
        PyErr_Format(PyExc_ImportError,
                     "npybridge: this module was compiled with NumPy %d.x headers (ABI 0x%x) but runs under NumPy "
                     "%d.x (ABI 0x%x): rebuild it against the NumPy you run, whose headers are in "
                     "`python -c \"import numpy; print(numpy.get_include())\"` of this interpreter. The usual causes: "
                     "another NumPy's include folder came first on the compile line (Debian's python3-numpy, or a "
                     "-I from pybind11 / a system Python), or the build asked another Python for its NumPy "
                     "(set PYTHON_BIN_PATH / Python_EXECUTABLE to this one); `g++ -H` on the compile line lists the "
                     "numpy/arrayobject.h it read",
                     static_cast<int>(NPY_VERSION >> 24), static_cast<unsigned>(NPY_VERSION),
                     static_cast<int>(PyArray_GetNDArrayCVersion() >> 24), PyArray_GetNDArrayCVersion());
        PyArray_API = nullptr;
        return false;
    }
    const unsigned feature = PyArray_GetNDArrayCFeatureVersion();
    if (NPY_FEATURE_VERSION > feature) {
        PyErr_Format(PyExc_ImportError,
                     "npybridge: built for NumPy C-API 0x%x, but the running NumPy offers 0x%x; "
                     "install a newer NumPy or rebuild against this one",
                     static_cast<unsigned>(NPY_FEATURE_VERSION), feature);
        PyArray_API = nullptr;
        return false;
    }
#if NPY_ABI_VERSION >= 0x02000000
    PyArray_RUNTIME_VERSION = static_cast<int>(feature);
#endif
    return true;
}

inline bool import_numpy_ufuncs() noexcept {
    if (PyUFunc_API != nullptr) return true;
    if (!import_numpy()) return false;
    PyUFunc_API = detail::numpy_api_table("_UFUNC_API");
    return PyUFunc_API != nullptr;
}

}  // namespace npybridge
