// tools/bench/bench_main.hpp — main() for benchmarks that need the embedded interpreter and NumPy.
#pragma once

#include <benchmark/benchmark.h>

#include "tests/support/embedded_python.hpp"

#define NPYBRIDGE_BENCHMARK_MAIN()                                        \
    int main(int argc, char** argv) {                                     \
        if (!test::start_python()) return 2;                              \
        benchmark::Initialize(&argc, argv);                               \
        if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1; \
        benchmark::RunSpecifiedBenchmarks();                              \
        benchmark::Shutdown();                                            \
        return Py_FinalizeEx() == 0 ? 0 : 3;                              \
    }                                                                     \
    int main(int, char**)
