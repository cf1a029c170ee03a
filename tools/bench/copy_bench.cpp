// copy_into an existing tensor (256 Ki and 16 Mi elements) against numpy copying into the same memory.
#include <npybridge/convert.hpp>

#include "tests/support/python.hpp"
#include "tools/bench/bench_main.hpp"

#include <map>
#include <string>
#include <utility>

namespace nb = npybridge;

namespace {

/// One source array and one destination tensor per (what, size), made once.
struct fixture {
    nb::object source;
    nb::tensor destination;
};

fixture& fixture_for(const std::string& what, std::size_t count) {
    static std::map<std::pair<std::string, std::size_t>, fixture> made;
    auto found = made.find({what, count});
    if (found != made.end()) return found->second;
    const std::string n = std::to_string(count);
    const bool narrowing = what == "int64";
    fixture f{nb::object::steal(test::eval(narrowing ? "np.arange(" + n + ", dtype=np.int64)"
                                                     : "np.random.default_rng(0).standard_normal(" + n + ").astype(np.float32)")
                                    .release()),
              nb::tensor::empty(nb::dtype(narrowing ? nb::dtype_enum::Int32 : nb::dtype_enum::Float32), &count, 1)};
    return made.emplace(std::make_pair(what, count), std::move(f)).first->second;
}

/// The baselines: numpy copying the source into the tensor's memory, checking
/// nothing (what np.copyto(dst, src, casting='unsafe') does).
void numpy_into(benchmark::State& state, const std::string& what) {
    fixture& f = fixture_for(what, static_cast<std::size_t>(state.range(0)));
    nb::object view = nb::to_array(f.destination);
    auto* into = reinterpret_cast<PyArrayObject*>(view.get());
    auto* from = reinterpret_cast<PyArrayObject*>(f.source.get());
    PyArray_CopyInto(into, from);  // warm: pages touched
    for (auto _ : state) {
        if (PyArray_CopyInto(into, from) != 0) state.SkipWithError("PyArray_CopyInto failed");
        benchmark::DoNotOptimize(f.destination.data());
    }
}

/// npybridge::copy_into: float32 copies straight in (nothing can fail
/// halfway); int64 -> Int32 is checked narrowing, every value checked before
/// the first is written, so an out-of-range value leaves the tensor as it was.
void npybridge_into(benchmark::State& state, const std::string& what) {
    fixture& f = fixture_for(what, static_cast<std::size_t>(state.range(0)));
    nb::copy_into(f.source.get(), f.destination);  // warm
    for (auto _ : state) {
        nb::copy_into(f.source.get(), f.destination);
        benchmark::DoNotOptimize(f.destination.data());
    }
}

void sizes(benchmark::internal::Benchmark* b) { b->Arg(256 << 10)->Arg(16 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime(); }

BENCHMARK_CAPTURE(numpy_into, float32, std::string("float32"))->Name("numpy_copy_into_float32")->Apply(sizes);
BENCHMARK_CAPTURE(numpy_into, int64, std::string("int64"))->Name("numpy_cast_int64_into_int32")->Apply(sizes);
BENCHMARK_CAPTURE(npybridge_into, float32, std::string("float32"))->Name("copy_into_float32")->Apply(sizes);
BENCHMARK_CAPTURE(npybridge_into, int64, std::string("int64"))->Name("copy_into_int64_checked")->Apply(sizes);

}  // namespace

NPYBRIDGE_BENCHMARK_MAIN();
