// copy_into an existing tensor, 16 Mi elements, against numpy copying into the same memory.
#include <npybridge/convert.hpp>

#include "tests/support/python.hpp"
#include "tools/bench/bench_main.hpp"

namespace nb = npybridge;

namespace {

constexpr std::size_t count = std::size_t{16} << 20;

PyObject* make_array(const char* expression) { return test::eval(expression).release(); }

PyObject* float32_source() {
    static PyObject* array = make_array("np.random.default_rng(0).standard_normal(16 << 20).astype(np.float32)");
    return array;
}

PyObject* int64_source() {
    static PyObject* array = make_array("np.arange(16 << 20, dtype=np.int64)");
    return array;
}

nb::tensor& destination(nb::dtype_enum id) {
    static nb::tensor float32 = nb::tensor::empty(nb::dtype(nb::dtype_enum::Float32), &count, 1);
    static nb::tensor int32 = nb::tensor::empty(nb::dtype(nb::dtype_enum::Int32), &count, 1);
    return id == nb::dtype_enum::Float32 ? float32 : int32;
}

/// The baseline: numpy's own copy into the tensor's memory (what np.copyto does).
void numpy_copy_into_float32(benchmark::State& state) {
    nb::tensor& into = destination(nb::dtype_enum::Float32);
    nb::object view = nb::to_array(into);
    PyArray_CopyInto(reinterpret_cast<PyArrayObject*>(view.get()), reinterpret_cast<PyArrayObject*>(float32_source()));  // warm
    for (auto _ : state) {
        if (PyArray_CopyInto(reinterpret_cast<PyArrayObject*>(view.get()), reinterpret_cast<PyArrayObject*>(float32_source())) != 0) {
            state.SkipWithError("PyArray_CopyInto failed");
        }
        benchmark::DoNotOptimize(into.data());
    }
}
BENCHMARK(numpy_copy_into_float32)->Unit(benchmark::kMillisecond)->UseRealTime();

/// Same dtype: copied straight in (nothing can fail halfway).
void copy_into_float32(benchmark::State& state) {
    nb::tensor& into = destination(nb::dtype_enum::Float32);
    nb::copy_into(float32_source(), into);  // warm: source made, pages touched
    for (auto _ : state) {
        nb::copy_into(float32_source(), into);
        benchmark::DoNotOptimize(into.data());
    }
}
BENCHMARK(copy_into_float32)->Unit(benchmark::kMillisecond)->UseRealTime();

/// int64 -> Int32 with checked narrowing: converted into a temporary first, so
/// an out-of-range value leaves the destination as it was.
void copy_into_int64_checked(benchmark::State& state) {
    nb::tensor& into = destination(nb::dtype_enum::Int32);
    nb::copy_into(int64_source(), into);  // warm: source made, pages touched
    for (auto _ : state) {
        nb::copy_into(int64_source(), into);
        benchmark::DoNotOptimize(into.data());
    }
}
BENCHMARK(copy_into_int64_checked)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

NPYBRIDGE_BENCHMARK_MAIN();
