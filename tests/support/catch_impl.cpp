// Catch2's implementation, compiled once for every C++ test. Each test binary
// brings its own main (catch_main.cpp with an embedded interpreter, or a plain
// one for the Python-free core test) that calls test::run_catch.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/support/catch_run.hpp"

int test::run_catch(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
