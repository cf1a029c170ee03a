// Catch2 runner for npybridge's C++ tests: starts an embedded interpreter on
// the Python Bazel found, imports NumPy once, runs the tests, finalizes.
// Catch2 itself is catch_impl.cpp.
#include "tests/support/catch_run.hpp"
#include "tests/support/embedded_python.hpp"

int main(int argc, char* argv[]) {
    if (!test::start_python()) return 2;
    std::printf("npybridge tests: Python %s, NumPy %s\n", PY_VERSION, NPYBRIDGE_BUILD_NUMPY_VERSION);
    const int result = test::run_catch(argc, argv);
    if (Py_FinalizeEx() != 0) return result == 0 ? 3 : result;
    return result;
}
