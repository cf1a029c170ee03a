// tests/support/embedded_python.hpp — starts an embedded interpreter on the Python Bazel found, with its NumPy.
#pragma once

#include <npybridge/numpy.hpp>

#include "python_info.h"

#include <cstdio>
#include <string>

namespace test {

/// Starts Python, puts the site-packages of the interpreter Bazel found first
/// on sys.path (an embedded interpreter does not see a venv by itself), checks
/// that the NumPy it imports is the one the headers came from, and imports
/// NumPy's C API. Prints why and returns false when any step fails.
inline bool start_python() {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    const PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        std::fprintf(stderr, "npybridge: cannot start Python: %s\n", status.err_msg ? status.err_msg : "?");
        return false;
    }
    const std::string code = std::string("import sys\nsys.path[:0] = [p for p in '") + NPYBRIDGE_PYTHON_SITE_PACKAGES +
                             "'.split(':') if p]\nimport numpy\nassert numpy.__version__ == '" +
                             NPYBRIDGE_BUILD_NUMPY_VERSION + "', 'built against NumPy " +
                             NPYBRIDGE_BUILD_NUMPY_VERSION + ", imported ' + numpy.__version__\n";
    if (PyRun_SimpleString(code.c_str()) != 0 || !npybridge::import_numpy()) {
        if (PyErr_Occurred()) PyErr_Print();
        std::fprintf(stderr, "npybridge: NumPy is not usable from %s\n", NPYBRIDGE_PYTHON_EXECUTABLE);
        return false;
    }
    return true;
}

}  // namespace test
