// Catch2 runner for npybridge's C++ tests: starts an embedded interpreter on
// the Python Bazel found, imports NumPy once, runs the tests, finalizes.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <npybridge/numpy.hpp>

#include "python_info.h"

#include <cstdio>
#include <string>

namespace {

/// An embedded interpreter does not see a venv's site-packages by itself; put
/// the ones of the interpreter Bazel found first on sys.path.
bool add_site_packages() {
    const std::string code = std::string("import sys\n") + "sys.path[:0] = [p for p in '" +
                             NPYBRIDGE_PYTHON_SITE_PACKAGES + "'.split(':') if p]\n";
    return PyRun_SimpleString(code.c_str()) == 0;
}

bool numpy_is_the_built_one() {
    PyObject* numpy = PyImport_ImportModule("numpy");
    if (numpy == nullptr) return false;
    PyObject* version = PyObject_GetAttrString(numpy, "__version__");
    Py_DECREF(numpy);
    if (version == nullptr) return false;
    const std::string running = PyUnicode_AsUTF8(version);
    Py_DECREF(version);
    if (running != NPYBRIDGE_BUILD_NUMPY_VERSION) {
        std::fprintf(stderr, "npybridge tests: built against NumPy %s but imported %s\n",
                     NPYBRIDGE_BUILD_NUMPY_VERSION, running.c_str());
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char* argv[]) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    const PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        std::fprintf(stderr, "npybridge tests: cannot start Python: %s\n", status.err_msg ? status.err_msg : "?");
        return 2;
    }
    if (!add_site_packages() || !numpy_is_the_built_one() || !npybridge::import_numpy()) {
        if (PyErr_Occurred()) PyErr_Print();
        std::fprintf(stderr, "npybridge tests: NumPy is not usable from %s\n", NPYBRIDGE_PYTHON_EXECUTABLE);
        return 2;
    }
    std::printf("npybridge tests: Python %s, NumPy %s\n", PY_VERSION, NPYBRIDGE_BUILD_NUMPY_VERSION);
    const int result = Catch::Session().run(argc, argv);
    if (Py_FinalizeEx() != 0) return result == 0 ? 3 : result;
    return result;
}
