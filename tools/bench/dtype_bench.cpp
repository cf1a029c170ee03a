// Resolving numpy dtypes: quantized vs plain float32 vs the reference file's per-call string lookups.
#include <npybridge/numpy_dtype.hpp>

#include "tests/support/python.hpp"
#include "tools/bench/bench_main.hpp"

#include <cstring>
#include <string>

namespace npb = npybridge;

namespace {

PyArray_Descr* make_descr(const char* expression) {
    return reinterpret_cast<PyArray_Descr*>(test::eval(expression).release());
}

PyArray_Descr* quantized_descr() {
    static PyArray_Descr* descr = make_descr(
        "np.dtype('uint8', metadata={'mgb_dtype': {'name': 'Quantized8Asymm', 'scale': 0.5, 'zero_point': 3}})");
    return descr;
}

PyArray_Descr* float32_descr() {
    static PyArray_Descr* descr = make_descr("np.dtype('float32')");
    return descr;
}

/// The baseline: metadata parsed the way MegEngine's python_helper.cpp does,
/// PyDict_GetItemString for each key on every call and a chain of name
/// compares (with the checks npybridge also makes, so the work is the same).
npb::dtype resolve_like_reference(PyArray_Descr* descr) {
    PyObject* metadata = npb::detail::descr_metadata(descr);
    PyObject* mgb = nullptr;
    if (metadata && PyDict_Check(metadata) && (mgb = PyDict_GetItemString(metadata, "mgb_dtype"))) {
        PyObject* name_obj = PyDict_GetItemString(mgb, "name");
        if (!name_obj || !PyUnicode_Check(name_obj)) throw npb::metadata_error("name");
        const std::string name(PyUnicode_AsUTF8(name_obj));
        if (name == "Quantized8Asymm" || name == "Quantized4Asymm") {
            PyObject* scale = PyDict_GetItemString(mgb, "scale");
            PyObject* zero_point = PyDict_GetItemString(mgb, "zero_point");
            if (!scale || !zero_point || !PyFloat_Check(scale) || !PyLong_Check(zero_point))
                throw npb::metadata_error("params");
            const long zp = PyLong_AsLong(zero_point);
            if (zp < 0 || zp > (name == "Quantized8Asymm" ? 255 : 15)) throw npb::metadata_error("zero_point");
            return npb::dtype::with(
                name == "Quantized8Asymm" ? npb::dtype_enum::Quantized8Asymm : npb::dtype_enum::Quantized4Asymm,
                npb::asymm_param{static_cast<float>(PyFloat_AS_DOUBLE(scale)), static_cast<std::uint8_t>(zp)});
        }
        PyObject* scale = PyDict_GetItemString(mgb, "scale");
        if (!scale || !PyFloat_Check(scale)) throw npb::metadata_error("scale");
        const float s = static_cast<float>(PyFloat_AS_DOUBLE(scale));
        if (name == "QuantizedS32") return npb::dtype::with(npb::dtype_enum::QuantizedS32, npb::scale_param{s});
        if (name == "QuantizedS8") return npb::dtype::with(npb::dtype_enum::QuantizedS8, npb::scale_param{s});
        if (name == "QuantizedS4") return npb::dtype::with(npb::dtype_enum::QuantizedS4, npb::scale_param{s});
        throw npb::metadata_error("unknown");
    }
    return npb::dtype(npb::dtype_enum::Float32);
}

void resolve_plain_float32(benchmark::State& state) {
    PyArray_Descr* descr = float32_descr();
    for (auto _ : state) benchmark::DoNotOptimize(npb::from_numpy_dtype(descr));
}
BENCHMARK(resolve_plain_float32);

void resolve_quantized(benchmark::State& state) {
    PyArray_Descr* descr = quantized_descr();
    for (auto _ : state) benchmark::DoNotOptimize(npb::from_numpy_dtype(descr));
}
BENCHMARK(resolve_quantized);

/// A dtype object seen for the first time: the metadata is parsed and checked.
void parse_quantized_metadata(benchmark::State& state) {
    PyArray_Descr* descr = quantized_descr();
    PyObject* mgb = PyDict_GetItemString(npb::detail::descr_metadata(descr), "mgb_dtype");
    for (auto _ : state) benchmark::DoNotOptimize(npb::detail::parse_mgb_dtype(descr, mgb));
}
BENCHMARK(parse_quantized_metadata);

void resolve_quantized_reference_style(benchmark::State& state) {
    PyArray_Descr* descr = quantized_descr();
    for (auto _ : state) benchmark::DoNotOptimize(resolve_like_reference(descr));
}
BENCHMARK(resolve_quantized_reference_style);

void make_quantized_numpy_dtype(benchmark::State& state) {
    const npb::dtype type = npb::dtype::quantized(npb::dtype_enum::Quantized8Asymm, 0.5, 3);
    for (auto _ : state) benchmark::DoNotOptimize(npb::to_numpy_dtype(type));
}
BENCHMARK(make_quantized_numpy_dtype);

void make_plain_numpy_dtype(benchmark::State& state) {
    const npb::dtype type(npb::dtype_enum::Float32);
    for (auto _ : state) benchmark::DoNotOptimize(npb::to_numpy_dtype(type));
}
BENCHMARK(make_plain_numpy_dtype);

}  // namespace

NPYBRIDGE_BENCHMARK_MAIN();
