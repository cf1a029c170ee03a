// npybridge::dtype <-> np.dtype (numpy_dtype.hpp): quantized params in metadata["mgb_dtype"] as MegEngine writes
// them, every rejection, narrowing, dtype-likes, the cache (docs/metadata.md).
#include <catch2/catch.hpp>

#include <npybridge/numpy_dtype.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/core/quantization.hpp>

#include "tests/support/python.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_set>

namespace npb = npybridge;
using Catch::Matchers::Contains;
using npb::dtype_enum;

namespace {

npb::numpy_dtype_match resolve(const std::string& expression, npb::narrowing mode = npb::narrowing::checked) {
    test::owned descr = test::eval(expression);
    return npb::from_numpy_dtype(reinterpret_cast<PyArray_Descr*>(descr.get()), mode);
}

std::string mgb(const std::string& base, const std::string& fields) {
    return "np.dtype('" + base + "', metadata={'mgb_dtype': {" + fields + "}})";
}

}  // namespace

TEST_CASE("every quantized dtype round-trips through np.dtype with equal params", "[quantized][numpy]") {
    // (dtype, scale, zero_point or -1): each quantized row, with edge zero points (the dtype table's ranges;
    // 15 is a valid Quantized4Asymm zero point by decision).
    auto [id, scale, zero_point] = GENERATE(table<dtype_enum, double, int>({
        {dtype_enum::Quantized8Asymm, 0.25, 128},
        {dtype_enum::Quantized8Asymm, 1e-3, 0},
        {dtype_enum::Quantized8Asymm, 3.5, 255},
        {dtype_enum::QuantizedS32, 0.001, -1},
        {dtype_enum::QuantizedS8, 0.5, -1},
        {dtype_enum::Quantized4Asymm, 0.125, 15},
        {dtype_enum::Quantized4Asymm, 2.0, 0},
        {dtype_enum::QuantizedS4, 1.5, -1},
        {dtype_enum::QuantizedS16, 7.0, -1},
        {dtype_enum::QuantizedS1, 0.1, -1},
    }));
    CAPTURE(npb::name_of(id), scale, zero_point);
    const npb::dtype original =
        npb::dtype::quantized(id, scale, zero_point < 0 ? std::nullopt : std::optional<long long>(zero_point));
    npb::object descr = npb::to_numpy_dtype(original);
    REQUIRE(descr);
    const npb::numpy_dtype_match back = npb::from_numpy_dtype(reinterpret_cast<PyArray_Descr*>(descr.get()));
    CHECK(back.type == original);
    CHECK_FALSE(back.narrowed);
    CHECK(back.type.scale() == static_cast<float>(scale));
    CHECK(back.type.zero_point() == (zero_point < 0 ? std::nullopt : std::optional<int>(zero_point)));
    SECTION("the numpy dtype is the base type the table names") {
        CHECK(npb::detail::descr_text(reinterpret_cast<PyArray_Descr*>(descr.get())) == original.info().numpy_name());
    }
}

TEST_CASE("metadata is written exactly as MegEngine writes it, and MegEngine's is understood", "[quantized][numpy]") {
    // MegEngine's python_helper.cpp writes {"mgb_dtype": {"name", "scale": float, "zero_point": int}}.
    test::owned megengine = test::eval(mgb("uint8", "'name': 'Quantized8Asymm', 'scale': 0.5, 'zero_point': 3"));
    const npb::dtype parsed = npb::from_numpy_dtype(reinterpret_cast<PyArray_Descr*>(megengine.get())).type;
    CHECK(parsed == npb::dtype::quantized(dtype_enum::Quantized8Asymm, 0.5, 3));

    npb::object ours = npb::to_numpy_dtype(parsed);
    PyObject* ours_metadata = PyObject_GetAttrString(ours.get(), "metadata");
    PyObject* theirs_metadata = PyObject_GetAttrString(megengine.get(), "metadata");
    REQUIRE(ours_metadata != nullptr);
    CHECK(PyObject_RichCompareBool(ours_metadata, theirs_metadata, Py_EQ) == 1);
    CHECK(PyObject_RichCompareBool(ours.get(), megengine.get(), Py_EQ) == 1);
    Py_DECREF(ours_metadata);
    Py_DECREF(theirs_metadata);

    SECTION("scale is a Python float holding the float32 value, zero_point a Python int, symmetric has none") {
        npb::object s8 = npb::to_numpy_dtype(npb::dtype::quantized(dtype_enum::QuantizedS8, 0.1));
        PyObject* mgb_fields =
            PyDict_GetItemString(npb::detail::descr_metadata(reinterpret_cast<PyArray_Descr*>(s8.get())), "mgb_dtype");
        REQUIRE(mgb_fields != nullptr);
        PyObject* scale = PyDict_GetItemString(mgb_fields, "scale");
        REQUIRE(PyFloat_CheckExact(scale));
        CHECK(PyFloat_AsDouble(scale) == static_cast<double>(0.1f));
        CHECK(PyDict_GetItemString(mgb_fields, "zero_point") == nullptr);
        CHECK(PyDict_Size(mgb_fields) == 2);

        npb::object asymm = npb::to_numpy_dtype(npb::dtype::quantized(dtype_enum::Quantized4Asymm, 1.0, 7));
        PyObject* asymm_fields = PyDict_GetItemString(
            npb::detail::descr_metadata(reinterpret_cast<PyArray_Descr*>(asymm.get())), "mgb_dtype");
        CHECK(PyLong_CheckExact(PyDict_GetItemString(asymm_fields, "zero_point")));
        CHECK(PyLong_AsLong(PyDict_GetItemString(asymm_fields, "zero_point")) == 7);
    }
}

TEST_CASE("numbers may be Python or numpy ints and floats; bool is never an integer", "[quantized][numpy]") {
    SECTION("accepted spellings of scale and zero_point") {
        const std::string scale = GENERATE(as<std::string>{}, "2", "2.0", "np.float32(2)", "np.float64(2)",
                                           "np.int64(2)", "np.int8(2)", "np.float16(2)");
        const std::string zero_point = GENERATE(as<std::string>{}, "9", "np.int64(9)", "np.uint8(9)", "np.int32(9)");
        CAPTURE(scale, zero_point);
        const npb::dtype parsed =
            resolve(mgb("uint8", "'name': 'Quantized8Asymm', 'scale': " + scale + ", 'zero_point': " + zero_point))
                .type;
        CHECK(parsed == npb::dtype::quantized(dtype_enum::Quantized8Asymm, 2.0, 9));
    }
    SECTION("bool as zero_point or scale is rejected, naming the key") {
        const std::string fields =
            GENERATE(as<std::string>{}, "'scale': 1.0, 'zero_point': True",
                     "'scale': 1.0, 'zero_point': np.bool_(True)", "'scale': True, 'zero_point': 1");
        CAPTURE(fields);
        CHECK_THAT(test::message_of<npb::metadata_error>(
                       [&] { resolve(mgb("uint8", "'name': 'Quantized8Asymm', " + fields)); }),
                   Contains("Quantized8Asymm") && Contains("True"));
    }
}

TEST_CASE("each kind of bad metadata is its own clear error", "[quantized][numpy][errors]") {
    // (dtype expression, text the message must contain): every rejection listed in docs/metadata.md.
    auto [expression, expected] = GENERATE(table<std::string, std::string>({
        {"np.dtype('int8', metadata={'mgb_dtype': ['QuantizedS8']})", "metadata['mgb_dtype'] must be a dict"},
        {mgb("int8", "'scale': 1.0"), "has no 'name'"},
        {mgb("int8", "'name': 8, 'scale': 1.0"), "['name'] must be a str, got 8"},
        {mgb("int8", "'name': 'QuantizedS7', 'scale': 1.0"), "'QuantizedS7' is not a dtype npybridge knows"},
        {mgb("int8", "'name': 'Int8', 'scale': 1.0"), "'Int8' is not a quantized dtype"},
        {mgb("uint8", "'name': 'QuantizedS8', 'scale': 1.0"),
         "QuantizedS8 is stored as numpy int8, not as numpy uint8"},
        {mgb("int16", "'name': 'QuantizedS32', 'scale': 1.0"),
         "QuantizedS32 is stored as numpy int32, not as numpy int16"},
        {mgb("int8", "'name': 'QuantizedS8'"), "QuantizedS8: scale is missing"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': '1.0'"), "QuantizedS8: scale must be a real number, got '1.0'"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': 1j"), "QuantizedS8: scale must be a real number"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': float('nan')"), "QuantizedS8: scale nan is not finite"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': float('inf')"), "QuantizedS8: scale inf is not finite"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': 1e300"), "QuantizedS8: scale 1e+300 does not fit a float32"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': 0.0"), "QuantizedS8: scale 0 must be > 0"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': -0.5"), "QuantizedS8: scale -0.5 must be > 0"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': 1e-50"),
         "QuantizedS8: scale 1e-50 is too small for a float32 (it rounds to 0"},
        {mgb("uint8", "'name': 'Quantized8Asymm', 'scale': 1.0"), "Quantized8Asymm: zero_point is missing"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': 1.0, 'zero_point': 0"),
         "QuantizedS8: unexpected key 'zero_point'"},
        {mgb("int8", "'name': 'QuantizedS8', 'scale': 1.0, 'scael': 2.0"), "QuantizedS8: unexpected key 'scael'"},
        {mgb("uint8", "'name': 'Quantized8Asymm', 'scale': 1.0, 'zero_point': 1.5"),
         "Quantized8Asymm: zero_point must be an integer, got 1.5"},
        {mgb("uint8", "'name': 'Quantized8Asymm', 'scale': 1.0, 'zero_point': 300"),
         "Quantized8Asymm: zero_point 300 is outside [0, 255]"},
        {mgb("uint8", "'name': 'Quantized8Asymm', 'scale': 1.0, 'zero_point': -1"),
         "Quantized8Asymm: zero_point -1 is outside [0, 255]"},
        {mgb("uint8", "'name': 'Quantized8Asymm', 'scale': 1.0, 'zero_point': 2**70"),
         "Quantized8Asymm: zero_point 1180591620717411303424 is outside [0, 255]"},
        {mgb("uint8", "'name': 'Quantized4Asymm', 'scale': 1.0, 'zero_point': 16"),
         "Quantized4Asymm: zero_point 16 is outside [0, 15]"},
    }));
    CAPTURE(expression);
    CHECK_THAT(test::message_of<npb::metadata_error>([&, expression = expression] { resolve(expression); }),
               Contains(expected));
}

TEST_CASE("numpy dtypes without a MegBrain dtype are rejected by name", "[numpy][errors]") {
    const std::string name =
        GENERATE(as<std::string>{}, "uint32", "uint64", "longdouble", "complex128", "U3", "S4", "O", "datetime64[s]");
    CAPTURE(name);
    test::owned expected_name = test::eval("str(np.dtype('" + name + "'))");
    const std::string shown = PyUnicode_AsUTF8(expected_name.get());
    CHECK_THAT(test::message_of<npb::dtype_error>([&] { resolve("np.dtype('" + name + "')"); }),
               Contains("numpy dtype " + shown) && Contains("has no MegBrain dtype"));
    SECTION("structured and subarray dtypes say so") {
        const std::string layout = GENERATE(as<std::string>{}, "[('a', 'i4'), ('b', 'f4')]", "('i4', (2,))");
        CHECK_THROWS_WITH(resolve("np.dtype(" + layout + ")"), Contains("is structured or a subarray"));
    }
}

TEST_CASE("int64 and float64 narrow to Int32 and Float32 unless narrowing is rejected", "[numpy][narrowing]") {
    SECTION("checked and wrap narrow") {
        const auto mode = GENERATE(npb::narrowing::checked, npb::narrowing::wrap);
        const auto int64 = resolve("np.dtype('int64')", mode);
        CHECK(int64.type == npb::dtype(dtype_enum::Int32));
        CHECK(int64.narrowed);
        const auto float64 = resolve("np.dtype('>f8')", mode);
        CHECK(float64.type == npb::dtype(dtype_enum::Float32));
        CHECK(float64.narrowed);
    }
    SECTION("reject refuses, naming the numpy dtype and the target") {
        CHECK_THROWS_WITH(resolve("np.dtype('int64')", npb::narrowing::reject),
                          Contains("numpy dtype int64") && Contains("Int32") && Contains("narrowing='reject'"));
        CHECK_THROWS_AS(resolve("np.dtype('float64')", npb::narrowing::reject), npb::dtype_error);
    }
    SECTION("exact types do not narrow") {
        const auto plain = resolve("np.dtype('float16')", npb::narrowing::reject);
        CHECK(plain.type == npb::dtype(dtype_enum::Float16));
        CHECK_FALSE(plain.narrowed);
    }
}

TEST_CASE("dtype-like objects are accepted wherever np.dtype() accepts them", "[numpy]") {
    test::owned type_object = test::eval("np.uint16");
    CHECK(npb::from_numpy_dtype(type_object.get()).type == npb::dtype(dtype_enum::Uint16));
    test::owned text = test::eval("'?'");
    CHECK(npb::from_numpy_dtype(text.get()).type == npb::dtype(dtype_enum::Bool));
    test::owned nonsense = test::eval("'no such dtype'");
    CHECK_THROWS_WITH(npb::from_numpy_dtype(nonsense.get()), Contains("not a numpy dtype: 'no such dtype'"));
}

TEST_CASE("dtypes without a numpy form say so", "[numpy][errors]") {
    CHECK_THROWS_WITH(npb::to_numpy_dtype(npb::dtype(dtype_enum::Byte)), Contains("Byte has no numpy form"));
    CHECK_THROWS_WITH(npb::to_numpy_dtype(npb::dtype(dtype_enum::UintB4)), Contains("UintB4 has no numpy form"));
}

TEST_CASE("equal quantized dtypes give the same cached numpy object; nothing leaks", "[quantized][numpy][refcount]") {
    const npb::dtype type = npb::dtype::quantized(dtype_enum::QuantizedS8, 0.75);
    npb::object first = npb::to_numpy_dtype(type);
    npb::object second = npb::to_numpy_dtype(npb::dtype::quantized(dtype_enum::QuantizedS8, 0.75));
    CHECK(first.get() == second.get());
    npb::object other = npb::to_numpy_dtype(npb::dtype::quantized(dtype_enum::QuantizedS8, 0.5));
    CHECK(first.get() != other.get());

    SECTION("10,000 conversions each way leave every refcount where it was") {
        test::owned megengine = test::eval(mgb("uint8", "'name': 'Quantized8Asymm', 'scale': 0.5, 'zero_point': 3"));
        auto* descr = reinterpret_cast<PyArray_Descr*>(megengine.get());
        (void)npb::from_numpy_dtype(descr);  // the first call may cache
        PyObject* metadata = npb::detail::descr_metadata(descr);
        PyObject* fields = PyDict_GetItemString(metadata, "mgb_dtype");
        const Py_ssize_t descr_refs = Py_REFCNT(descr), metadata_refs = Py_REFCNT(metadata),
                         fields_refs = Py_REFCNT(fields);
        const Py_ssize_t made_refs = Py_REFCNT(first.get());
        for (int i = 0; i < 10000; ++i) {
            (void)npb::from_numpy_dtype(descr);
            npb::object again = npb::to_numpy_dtype(type);
        }
        CHECK(Py_REFCNT(descr) == descr_refs);
        CHECK(Py_REFCNT(metadata) == metadata_refs);
        CHECK(Py_REFCNT(fields) == fields_refs);
        CHECK(Py_REFCNT(first.get()) == made_refs);
    }
    SECTION("plain dtypes and failing conversions leak nothing either") {
        test::owned bad = test::eval(mgb("uint8", "'name': 'Quantized8Asymm', 'scale': 0.5, 'zero_point': 300"));
        test::owned plain = test::eval("np.dtype('float32')");
        const Py_ssize_t bad_refs = Py_REFCNT(bad.get()), plain_refs = Py_REFCNT(plain.get());
        for (int i = 0; i < 10000; ++i) {
            CHECK_THROWS_AS(npb::from_numpy_dtype(reinterpret_cast<PyArray_Descr*>(bad.get())), npb::metadata_error);
            (void)npb::from_numpy_dtype(reinterpret_cast<PyArray_Descr*>(plain.get()));
        }
        CHECK(Py_REFCNT(bad.get()) == bad_refs);
        CHECK(Py_REFCNT(plain.get()) == plain_refs);
        CHECK_FALSE(PyErr_Occurred());
    }
}
