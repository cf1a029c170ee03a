// libFuzzer target: quantized dtype metadata (np.dtype metadata['mgb_dtype']) of any shape and value types,
// and npybridge::quantized_dtype's Python params. Invariant: a named npybridge error with no Python error
// left pending, or a dtype that survives to_numpy -> from_numpy unchanged.
#include "tests/fuzz/fuzz_support.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <limits>
#include <string>

namespace npb = npybridge;

namespace {

const char* const helpers = R"(
import numpy as np
scalars = [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int64, np.uint64, np.bool_]
def descr(base, metadata):
    return np.dtype(base, metadata=metadata)
)";

const char* const names[] = {"QuantizedS8",
                             "Quantized8Asymm",
                             "QuantizedS32",
                             "QuantizedS16",
                             "QuantizedS4",
                             "Quantized4Asymm",
                             "QuantizedS1",
                             "Float32",
                             "Int8",
                             "IntB4",
                             "",
                             "name",
                             "scale",
                             "quantizeds8",
                             "QuantizedS8\0x"};
const char* const keys[] = {"name", "scale", "zero_point", "Scale", "zero_point ", "dtype"};
const char* const bases[] = {"i1", "u1", "i2", "u2", "i4", "u4", "i8", "f4", "f8", "f2", "?", ">i2", "<i4", "c8", "V1"};

PyObject* value_of(FuzzedDataProvider& in, int depth);

PyObject* number_of(FuzzedDataProvider& in) {
    switch (in.ConsumeIntegralInRange<int>(0, 6)) {
        case 0: return PyFloat_FromDouble(in.ConsumeFloatingPoint<double>());
        case 1: {
            const double special[] = {
                std::nan(""), HUGE_VAL, -HUGE_VAL, 0.0, -0.0, 1e-50, 1e-45,
                1.4e-45,      1e39,     3.4e38,    0.5, 0.25, 1.0,   std::numeric_limits<double>::denorm_min()};
            return PyFloat_FromDouble(in.PickValueInArray(special));
        }
        case 2: return PyLong_FromLongLong(in.ConsumeIntegralInRange<long long>(-300, 300));
        case 3: return PyLong_FromLongLong(in.ConsumeIntegral<long long>());
        case 4: {  // beyond 64 bits
            const std::string digits = std::to_string(in.ConsumeIntegral<unsigned long long>()) + "000000000000";
            return PyLong_FromString(digits.c_str(), nullptr, 10);
        }
        case 5: return npb::object::borrow(in.ConsumeBool() ? Py_True : Py_False).release();
        default: {  // a numpy scalar
            npb::object module = npb::object::borrow(PyImport_AddModule("fuzz"));
            npb::object scalars = npb::object::steal(PyObject_GetAttrString(module.get(), "scalars"));
            PyObject* type =
                PyList_GetItem(scalars.get(), in.ConsumeIntegralInRange<Py_ssize_t>(0, PyList_Size(scalars.get()) - 1));
            npb::object number =
                npb::object::steal(PyFloat_FromDouble(in.ConsumeIntegralInRange<int>(-300, 300) / 4.0));
            PyObject* made = PyObject_CallOneArg(type, number.get());
            if (made == nullptr) {
                PyErr_Clear();
                return PyLong_FromLong(1);
            }
            return made;
        }
    }
}

PyObject* text_of(FuzzedDataProvider& in) {
    if (in.ConsumeBool()) {
        const std::size_t pick = in.ConsumeIntegralInRange<std::size_t>(0, std::size(names) - 1);
        const std::string name =
            pick == std::size(names) - 1 ? std::string("QuantizedS8\0x", 13) : std::string(names[pick]);
        return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
    }
    const std::string raw = in.ConsumeRandomLengthString(24);
    return PyUnicode_DecodeLatin1(raw.data(), static_cast<Py_ssize_t>(raw.size()), nullptr);
}

PyObject* dict_of(FuzzedDataProvider& in, int depth) {
    PyObject* dict = PyDict_New();
    const int entries = in.ConsumeIntegralInRange<int>(0, 5);
    for (int i = 0; i < entries; ++i) {
        npb::object key = npb::object::steal(in.ConsumeIntegralInRange<int>(0, 7) == 0
                                                 ? number_of(in)
                                                 : PyUnicode_FromString(in.PickValueInArray(keys)));
        npb::object value = npb::object::steal(value_of(in, depth + 1));
        if (!key || !value || PyDict_SetItem(dict, key.get(), value.get()) != 0) PyErr_Clear();  // unhashable keys
    }
    return dict;
}

PyObject* value_of(FuzzedDataProvider& in, int depth) {
    switch (in.ConsumeIntegralInRange<int>(0, depth < 2 ? 5 : 3)) {
        case 0:
        case 1: return number_of(in);
        case 2: return text_of(in);
        case 3: return npb::object::borrow(Py_None).release();
        case 4: return dict_of(in, depth);
        default: {
            PyObject* list = PyList_New(1);
            PyList_SET_ITEM(list, 0, value_of(in, depth + 1));  // steals the item
            return list;
        }
    }
}

/// A dtype npybridge accepted must come back the same through its numpy form.
void check_round_trip(const npb::dtype& type) {
    npb::object back = npb::to_numpy_dtype(type);
    FUZZ_CHECK(back);
    const npb::numpy_dtype_match again = npb::from_numpy_dtype(reinterpret_cast<PyArray_Descr*>(back.get()));
    FUZZ_CHECK(again.type == type && !again.narrowed);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::start(helpers);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const bool as_params = in.ConsumeIntegralInRange<int>(0, 3) == 0;
    if (as_params) {
        static const npb::dtype_enum ids[] = {npb::dtype_enum::QuantizedS8, npb::dtype_enum::Quantized8Asymm,
                                              npb::dtype_enum::Quantized4Asymm, npb::dtype_enum::QuantizedS1,
                                              npb::dtype_enum::Int8};
        const npb::dtype_enum id = in.PickValueInArray(ids);
        npb::object scale = npb::object::steal(in.ConsumeBool() ? value_of(in, 1) : nullptr);
        npb::object zero_point = npb::object::steal(in.ConsumeBool() ? value_of(in, 1) : nullptr);
        try {
            const npb::dtype made = npb::quantized_dtype(id, scale.get(), zero_point.get());
            FUZZ_CHECK(made.id() == id && made.is_quantized());
            check_round_trip(made);
        } catch (const npb::error&) {}
        FUZZ_CHECK(!PyErr_Occurred());
        return 0;
    }
    npb::object fields =
        npb::object::steal(in.ConsumeIntegralInRange<int>(0, 9) == 0 ? value_of(in, 0) : dict_of(in, 0));
    if (in.ConsumeBool() && PyDict_Check(fields.get())) {  // mostly well-formed names, so parsing goes deep
        npb::object name = npb::object::steal(text_of(in));
        PyDict_SetItemString(fields.get(), "name", name.get());
    }
    npb::object metadata = npb::object::steal(PyDict_New());
    PyDict_SetItemString(metadata.get(), in.ConsumeIntegralInRange<int>(0, 15) == 0 ? "mgb" : "mgb_dtype",
                         fields.get());
    npb::object base = npb::object::steal(PyUnicode_FromString(in.PickValueInArray(bases)));
    npb::object args = npb::object::steal(PyTuple_Pack(2, base.get(), metadata.get()));
    npb::object descr = fuzz::call("descr", args.get());
    FUZZ_CHECK(descr);
    const npb::narrowing mode =
        in.PickValueInArray({npb::narrowing::checked, npb::narrowing::wrap, npb::narrowing::reject});
    for (int pass = 0; pass < 2; ++pass) {  // the second pass reads the cache
        try {
            const npb::numpy_dtype_match match =
                npb::from_numpy_dtype(reinterpret_cast<PyArray_Descr*>(descr.get()), mode);
            check_round_trip(match.type);
        } catch (const npb::error&) {}
        FUZZ_CHECK(!PyErr_Occurred());
    }
    return 0;
}
