// tests/fuzz/fuzz_support.hpp — what the fuzz targets that embed Python share.
#pragma once

#include <npybridge/npybridge.hpp>

#include "tests/support/embedded_python.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition)                                                                   \
    do {                                                                                        \
        if (!(condition)) {                                                                     \
            std::fprintf(stderr, "check failed: %s (%s:%d)\n", #condition, __FILE__, __LINE__); \
            if (PyErr_Occurred()) PyErr_Print();                                                \
            std::abort();                                                                       \
        }                                                                                       \
    } while (0)

namespace fuzz {

namespace npb = npybridge;

/// Starts the interpreter once, with npybridge's user dtypes registered on a
/// module named `fuzz` and `helpers` (Python source) run in its namespace.
inline PyObject* start(const char* helpers) {
    if (!test::start_python()) std::abort();
    PyObject* module = PyImport_AddModule("fuzz");  // borrowed, lives in sys.modules
    FUZZ_CHECK(module != nullptr && npb::make_exception_classes(module) && npb::register_user_dtypes(module));
    PyObject* globals = PyModule_GetDict(module);
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    npb::object ran = npb::object::steal(PyRun_String(helpers, Py_file_input, globals, globals));
    FUZZ_CHECK(ran);
    return module;
}

/// Calls the helper `name` of the module `fuzz` (a new reference, nullptr with the error pending).
inline npb::object call(const char* name, PyObject* args) {
    PyObject* module = PyImport_AddModule("fuzz");
    npb::object function = npb::object::steal(PyObject_GetAttrString(module, name));
    FUZZ_CHECK(function);
    return npb::object::steal(PyObject_CallObject(function.get(), args));
}

}  // namespace fuzz
