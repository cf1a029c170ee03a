// Runtime tests of the dtype table against real NumPy dtypes (docs/dtypes.md, docs/metadata.md).
#include <catch2/catch.hpp>

#include <npybridge/core/dtype.hpp>
#include <npybridge/numpy.hpp>

#include "tests/support/python.hpp"

#include <complex>
#include <cstdint>
#include <string>
#include <tuple>

namespace npb = npybridge;
using npb::dtype_enum;

namespace {

char expected_kind(const npb::dtype_info& entry) {
    switch (entry.category) {
        case npb::dtype_category::floating: return 'f';
        case npb::dtype_category::boolean: return 'b';
        case npb::dtype_category::complex: return 'c';
        default: return entry.is_signed ? 'i' : 'u';
    }
}

}  // namespace

TEST_CASE("each dtype with a built-in numpy form matches numpy's own dtype of that name", "[dtype][numpy]") {
    int checked = 0;
    for (const npb::dtype_info& entry : npb::dtype_table) {
        if (entry.form != npb::numpy_form::builtin) {
            CHECK(npb::numpy_type_num(entry.id) == -1);
            continue;
        }
        CAPTURE(entry.name);
        PyArray_Descr* ours = PyArray_DescrFromType(npb::numpy_type_num(entry.id));
        PyArray_Descr* numpys = test::descr(std::string(entry.numpy_name()));
        REQUIRE(ours != nullptr);
        CHECK(PyArray_EquivTypes(ours, numpys));
        CHECK(npb::detail::descr_kind(ours) == expected_kind(entry));
        const npy_intp unpacked_size = entry.is_packed ? 1 : static_cast<npy_intp>(entry.element_size);
        CHECK(npb::detail::descr_elsize(ours) == unpacked_size);
        Py_DECREF(ours);
        Py_DECREF(numpys);
        ++checked;
    }
    CHECK(checked == 16);  // 22 dtypes less Byte, UintB4 (none) and BFloat16, IntB1/2/4 (user dtypes)
}

using mapped_types = std::tuple<float, double, std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t,
                                long, long long, bool, std::complex<float>, npb::half>;

TEMPLATE_LIST_TEST_CASE("a C++ type's dtype has the numpy itemsize of the type, narrowed where MegBrain narrows",
                        "[dtype][numpy]", mapped_types) {
    PyArray_Descr* descr = PyArray_DescrFromType(npb::numpy_type_num_for_v<TestType>);
    REQUIRE(descr != nullptr);
    const npy_intp expected = npb::is_narrowing_v<TestType> ? 4 : static_cast<npy_intp>(sizeof(TestType));
    CHECK(npb::detail::descr_elsize(descr) == expected);
    CHECK(npb::is_narrowing_v<TestType> == (sizeof(TestType) == 8 && !std::is_same_v<TestType, std::complex<float>>));
    Py_DECREF(descr);
}

TEST_CASE("byte sizes follow the packed and unpacked rules", "[dtype]") {
    // (dtype, element count, bytes): ceil(n*bits/8) for packed, n*sizeof otherwise.
    auto [id, count, bytes] = GENERATE(table<dtype_enum, std::size_t, std::size_t>({
        {dtype_enum::IntB1, 1, 1},
        {dtype_enum::IntB1, 8, 1},
        {dtype_enum::IntB1, 17, 3},
        {dtype_enum::IntB2, 5, 2},
        {dtype_enum::IntB4, 5, 3},
        {dtype_enum::UintB4, 4, 2},
        {dtype_enum::QuantizedS4, 0, 0},
        {dtype_enum::Quantized4Asymm, 3, 2},
        {dtype_enum::QuantizedS1, 1, 1},
        {dtype_enum::QuantizedS32, 3, 12},
        {dtype_enum::Complex64, 2, 16},
        {dtype_enum::BFloat16, 7, 14},
    }));
    CAPTURE(npb::name_of(id), count);
    CHECK(npb::byte_size(id, count) == bytes);
}

TEST_CASE("names and enum values find their dtype at run time", "[dtype]") {
    SECTION("by name") {
        const std::string name = GENERATE(as<std::string>{}, "Float32", "QuantizedS4", "Quantized8Asymm", "Complex64");
        const npb::dtype_info* found = npb::find_dtype(name);
        REQUIRE(found != nullptr);
        CHECK(found->name == name);
    }
    SECTION("unknown names and values find nothing") {
        CHECK(npb::find_dtype(std::string("float32")) == nullptr);
        CHECK(npb::find_dtype(std::string("")) == nullptr);
        CHECK(npb::find_dtype(std::uint32_t{100007}) == nullptr);
    }
    SECTION("by MegDNN enum value") {
        CHECK(npb::find_dtype(std::uint32_t{100004})->id == dtype_enum::QuantizedS4);
        CHECK(npb::find_dtype(std::uint32_t{11})->id == dtype_enum::BFloat16);
    }
}
