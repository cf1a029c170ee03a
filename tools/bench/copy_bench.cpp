// copy_into an existing tensor (256 Ki and 16 Mi elements) against numpy copying into the same memory;
// copies of transposed views (the tiled copier) against np.ascontiguousarray and a contiguous copy of the same bytes.
#include <npybridge/convert.hpp>

#include "tests/support/python.hpp"
#include "tools/bench/bench_main.hpp"

#include <map>
#include <string>
#include <utility>

namespace npb = npybridge;

namespace {

/// One source array and one destination tensor per (what, size), made once.
struct fixture {
    npb::object source;
    npb::tensor destination;
};

fixture& fixture_for(const std::string& what, std::size_t count) {
    static std::map<std::pair<std::string, std::size_t>, fixture> made;
    auto found = made.find({what, count});
    if (found != made.end()) return found->second;
    const std::string n = std::to_string(count);
    const bool narrowing = what == "int64";
    fixture f{npb::object::steal(
                  test::eval(narrowing ? "np.arange(" + n + ", dtype=np.int64)"
                                       : "np.random.default_rng(0).standard_normal(" + n + ").astype(np.float32)")
                      .release()),
              npb::tensor::empty(npb::dtype(narrowing ? npb::dtype_enum::Int32 : npb::dtype_enum::Float32), &count, 1)};
    return made.emplace(std::make_pair(what, count), std::move(f)).first->second;
}

/// The baselines: numpy copying the source into the tensor's memory, checking
/// nothing (what np.copyto(dst, src, casting='unsafe') does).
void numpy_into(benchmark::State& state, const std::string& what) {
    fixture& f = fixture_for(what, static_cast<std::size_t>(state.range(0)));
    npb::object view = npb::to_array(f.destination);
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
    npb::copy_into(f.source.get(), f.destination);  // warm
    for (auto _ : state) {
        npb::copy_into(f.source.get(), f.destination);
        benchmark::DoNotOptimize(f.destination.data());
    }
}

/// The transposed views of the copy benchmarks, made once: a 4096 x 4096
/// float32 `.T`, a (64, 512, 512) int16 `transpose(2, 0, 1)`, a 4096 x 4096
/// float64 `.T`, and the contiguous arrays they view.
PyObject* view_of(const std::string& what) {
    static std::map<std::string, npb::object> made;
    auto found = made.find(what);
    if (found != made.end()) return found->second.get();
    const std::string expression =
        what == "float32_T"    ? "np.random.default_rng(0).standard_normal((4096, 4096)).astype(np.float32).T"
        : what == "float32"    ? "np.random.default_rng(0).standard_normal((4096, 4096)).astype(np.float32)"
        : what == "int16_perm" ? "np.arange(64 * 512 * 512, dtype=np.int16).reshape(64, 512, 512).transpose(2, 0, 1)"
        : what == "int16"      ? "np.arange(64 * 512 * 512, dtype=np.int16).reshape(64, 512, 512)"
                               : /* float64_T */ "np.random.default_rng(0).standard_normal((4096, 4096)).T";
    return made.emplace(what, npb::object::steal(test::eval(expression).release())).first->second.get();
}

/// np.ascontiguousarray(view): numpy's copy into a new C-ordered array.
void numpy_ascontiguous(benchmark::State& state, const std::string& what) {
    auto* view = reinterpret_cast<PyArrayObject*>(view_of(what));
    for (auto _ : state) {
        npb::object copy = npb::object::steal(PyArray_NewCopy(view, NPY_CORDER));
        if (!copy) state.SkipWithError("PyArray_NewCopy failed");
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * PyArray_NBYTES(view));
}

/// np.ascontiguousarray(x.T).astype(np.float32): what numpy needs for a checked-free narrowing copy.
void numpy_ascontiguous_astype(benchmark::State& state, const std::string& what) {
    auto* view = reinterpret_cast<PyArrayObject*>(view_of(what));
    for (auto _ : state) {
        npb::object copy = npb::object::steal(PyArray_NewCopy(view, NPY_CORDER));
        npb::object cast = npb::object::steal(
            PyArray_CastToType(reinterpret_cast<PyArrayObject*>(copy.get()), PyArray_DescrFromType(NPY_FLOAT32), 0));
        if (!cast) state.SkipWithError("astype failed");
    }
}

/// npybridge's copy of the view into a new tensor (policy copy; int64 /
/// float64 are narrowed with every value checked).
void npybridge_copy(benchmark::State& state, const std::string& what) {
    PyObject* view = view_of(what);
    const auto options = npb::to_tensor_options().with(npb::borrow_policy::copy);
    for (auto _ : state) {
        npb::tensor t = npb::to_tensor(view, options).tensor;
        benchmark::DoNotOptimize(t.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            PyArray_NBYTES(reinterpret_cast<PyArrayObject*>(view)));
}

BENCHMARK_CAPTURE(numpy_ascontiguous, float32_T, std::string("float32_T"))
    ->Name("numpy_ascontiguous_float32_T")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(npybridge_copy, float32_T, std::string("float32_T"))
    ->Name("npybridge_copy_float32_T")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(npybridge_copy, float32, std::string("float32"))
    ->Name("contiguous_copy_float32")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(numpy_ascontiguous, int16_perm, std::string("int16_perm"))
    ->Name("numpy_ascontiguous_int16_perm")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(npybridge_copy, int16_perm, std::string("int16_perm"))
    ->Name("npybridge_copy_int16_perm")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(npybridge_copy, int16, std::string("int16"))
    ->Name("contiguous_copy_int16")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(numpy_ascontiguous_astype, float64_T, std::string("float64_T"))
    ->Name("numpy_ascontiguous_astype_float64_T")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(npybridge_copy, float64_T, std::string("float64_T"))
    ->Name("npybridge_checked_narrowing_float64_T")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void sizes(benchmark::internal::Benchmark* b) {
    b->Arg(256 << 10)->Arg(16 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK_CAPTURE(numpy_into, float32, std::string("float32"))->Name("numpy_copy_into_float32")->Apply(sizes);
BENCHMARK_CAPTURE(numpy_into, int64, std::string("int64"))->Name("numpy_cast_int64_into_int32")->Apply(sizes);
BENCHMARK_CAPTURE(npybridge_into, float32, std::string("float32"))->Name("copy_into_float32")->Apply(sizes);
BENCHMARK_CAPTURE(npybridge_into, int64, std::string("int64"))->Name("copy_into_int64_checked")->Apply(sizes);

}  // namespace

NPYBRIDGE_BENCHMARK_MAIN();
