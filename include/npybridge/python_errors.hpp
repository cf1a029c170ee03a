// npybridge/python_errors.hpp — Python errors through C++, C++ exceptions back into Python.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/python.hpp>

#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Python classes for npybridge's errors, made once in your module by make_exception_classes().
struct exception_classes {
    PyObject* error = nullptr;              ///< npybridge::error: <Module>.Error(RuntimeError)
    PyObject* conversion_error = nullptr;   ///< ConversionError(TypeError, ValueError)
    PyObject* dtype_error = nullptr;        ///< DTypeError(ConversionError)
    PyObject* metadata_error = nullptr;     ///< MetadataError(DTypeError)
    PyObject* value_range_error = nullptr;  ///< ValueRangeError(ConversionError)
    PyObject* dlpack_error = nullptr;       ///< DLPackError(ConversionError, BufferError)
};

/// The classes translate_exception() raises (process-wide, read under the GIL).
inline exception_classes& registered_exception_classes() noexcept;

/// Makes the exception classes in `module`; false with a Python error set on failure. GIL required.
inline bool make_exception_classes(PyObject* module);

/// Call in `catch (...)` at the C++ → Python boundary, GIL held: raises the original Python error for a python_error,
/// npybridge's classes for its errors, MemoryError for std::bad_alloc, else a RuntimeError naming the type. If that
/// fails, a RuntimeError with the original message.
inline void translate_exception() noexcept;

/// A binding library's exception translator (GIL held): a std::exception not npybridge's is rethrown for the library
/// to map, the rest raised as translate_exception() raises them.
inline void translate_exception(const std::exception_ptr& thrown);

/// Runs f() at the C++ → Python boundary: its result, or nullptr with translate_exception()'s error: `return
/// npybridge::guarded([&] { ... });`. A thread's forced unwind passes through.
template <class F>
PyObject* guarded(F&& f);

/// Example: a module function whose C++ and Python errors reach its caller as Python exceptions.
/// ```cpp
/// #include <npybridge/python_errors.hpp>
///
/// PyObject* length_of(PyObject*, PyObject* arg) {
///     return npybridge::guarded([&] {
///         const Py_ssize_t n = PyObject_Length(arg);
///         if (n < 0) throw npybridge::python_error();  // carries the pending TypeError through C++
///         return PyLong_FromSsize_t(n);
///     });
/// }
/// ```

// ---- Definitions

}  // namespace npybridge

// glibc ends a thread (pthread_exit; daemon threads waking in finalization) with a "forced unwind": every catch (...)
// must rethrow it.
#if defined(__GLIBCXX__) && defined(__linux__)
#define NPYBRIDGE_FORCED_UNWIND_CATCH \
    catch (abi::__forced_unwind&) {   \
        throw;                        \
    }
#else
#define NPYBRIDGE_FORCED_UNWIND_CATCH
#endif

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

inline exception_classes& registered_exception_classes() noexcept {
    static exception_classes classes;
    return classes;
}

inline bool make_exception_classes(PyObject* module) {
    PyObject* module_name = PyModule_GetNameObject(module);
    if (module_name == nullptr) return false;
    const std::string prefix = std::string(PyUnicode_AsUTF8(module_name)) + ".";
    Py_DECREF(module_name);
    exception_classes made;
    auto create = [&](PyObject*& slot, const char* name, PyObject* bases, const char* doc) {
        if (bases == nullptr) return false;
        slot = PyErr_NewExceptionWithDoc((prefix + name).c_str(), doc, bases, nullptr);
        Py_DECREF(bases);
        if (slot == nullptr) return false;
        Py_INCREF(slot);
        if (PyModule_AddObject(module, name, slot) != 0) {
            Py_DECREF(slot);
            return false;
        }
        return true;
    };
    const bool ok =
        create(made.error, "Error", Py_BuildValue("(O)", PyExc_RuntimeError),
               "Base of npybridge errors (npybridge::error).") &&
        create(made.conversion_error, "ConversionError", Py_BuildValue("(OO)", PyExc_TypeError, PyExc_ValueError),
               "A conversion between NumPy and a tensor is impossible as asked (npybridge::conversion_error).") &&
        create(made.dtype_error, "DTypeError", Py_BuildValue("(O)", made.conversion_error),
               "A dtype npybridge cannot accept or produce (npybridge::dtype_error).") &&
        create(made.metadata_error, "MetadataError", Py_BuildValue("(O)", made.dtype_error),
               "Malformed or out-of-range quantized dtype metadata (npybridge::metadata_error).") &&
        create(made.value_range_error, "ValueRangeError", Py_BuildValue("(O)", made.conversion_error),
               "A value that does not fit its destination (npybridge::value_range_error).") &&
        create(
            made.dlpack_error, "DLPackError", Py_BuildValue("(OO)", made.conversion_error, PyExc_BufferError),
            "Memory that cannot cross DLPack as asked: device, copy=False, a used capsule (npybridge::dlpack_error).");
    if (!ok) return false;
    registered_exception_classes() = made;
    return true;
}

inline void translate_exception() noexcept {
    std::string original;
    const auto raise_with_type_name = [](PyObject* python_class, const std::exception& e) {
        PyErr_SetString(python_class, (demangle(typeid(e).name()) + ": " + e.what()).c_str());
    };
    try {
        try {
            throw;
        } catch (const python_error& e) {
            original = "a Python error";  // its traceback is not needed to hand it back
            e.restore();
        } catch (const error& e) {
            // npybridge's own: the most derived registered class.
            original = e.what();
            const exception_classes& classes = registered_exception_classes();
            PyObject* python_class = nullptr;
            if (dynamic_cast<const metadata_error*>(&e)) {
                python_class = classes.metadata_error ? classes.metadata_error : PyExc_ValueError;
            } else if (dynamic_cast<const dtype_error*>(&e)) {
                python_class = classes.dtype_error ? classes.dtype_error : PyExc_TypeError;
            } else if (dynamic_cast<const dlpack_error*>(&e)) {
                python_class = classes.dlpack_error ? classes.dlpack_error : PyExc_BufferError;
            } else if (dynamic_cast<const value_range_error*>(&e)) {
                python_class = classes.value_range_error ? classes.value_range_error : PyExc_ValueError;
            } else if (dynamic_cast<const conversion_error*>(&e)) {
                python_class = classes.conversion_error ? classes.conversion_error : PyExc_TypeError;
            } else {
                python_class = classes.error ? classes.error : PyExc_RuntimeError;
            }
            raise_with_type_name(python_class, e);
        } catch (const std::bad_alloc& e) {
            original = e.what();
            PyErr_NoMemory();
        } catch (const std::exception& e) {
            original = e.what();
            raise_with_type_name(PyExc_RuntimeError, e);
        } catch (...) {
            original = "unknown C++ exception";
#if defined(__GNUG__) || defined(__clang__)  // <cxxabi.h>, from python.hpp
            if (const std::type_info* type = abi::__cxa_current_exception_type()) {
                original = "unknown C++ exception of type " + demangle(type->name());
            }
#endif
            PyErr_SetString(PyExc_RuntimeError, ("npybridge: " + original).c_str());
        }
    } catch (...) {
        // Translating failed: keep the original message (PyErr_Format: nothing here may throw).
        PyErr_Clear();
        PyErr_Format(PyExc_RuntimeError, "npybridge: translating a C++ exception failed; original message: %s",
                     original.c_str());
    }
}

inline void translate_exception(const std::exception_ptr& thrown) {
    if (!thrown) return;  // a forced unwind reaches some translators as null: rethrowing null is undefined
    try {
        std::rethrow_exception(thrown);
    } catch (const error&) {
        translate_exception();
    } catch (const std::exception&) {
        throw;
    } catch (...) {
        translate_exception();  // a RuntimeError naming its type
    }
}

template <class F>
PyObject* guarded(F&& f) {
    try {
        return std::forward<F>(f)();
    }
    NPYBRIDGE_FORCED_UNWIND_CATCH
    catch (...) {
        translate_exception();
        return nullptr;
    }
}

}  // namespace npybridge

#undef NPYBRIDGE_FORCED_UNWIND_CATCH
