// The Python-free core (dtype traits, quantization, low-bit packing, tensors, strided copies) in a program that
// has no Python: built against //:npybridge_core alone, so any Python or NumPy include in these headers fails
// the build, and the #error below catches one that slipped in some other way.
#include <catch2/catch.hpp>

#include "tests/support/catch_run.hpp"

#include <npybridge/core.hpp>
#include <npybridge/core/detail/strided_copy.hpp>

#if defined(Py_PYTHON_H) || defined(NPY_NDARRAYOBJECT_H) || defined(NUMPY_CORE_INCLUDE_NUMPY_NDARRAYOBJECT_H_)
#error "a core header pulled in Python or NumPy"
#endif

#include <cstdint>
#include <cstring>
#include <vector>

namespace npb = npybridge;

TEST_CASE("dtype traits and quantization work without Python") {
    STATIC_REQUIRE(npb::info(npb::dtype_enum::QuantizedS4).is_packed);
    STATIC_REQUIRE(npb::dtype_of_v<float> == npb::dtype_enum::Float32);
    const npb::dtype q = npb::dtype::quantized(npb::dtype_enum::Quantized8Asymm, 0.5, 128);
    CHECK(npb::quantize(q, 1.0f) == 130);
    CHECK(npb::dequantize(q, 126) == -1.0f);
    CHECK(q.to_string() == "Quantized8Asymm(scale=0.5, zero_point=128)");
    CHECK_THROWS_AS(npb::dtype::quantized(npb::dtype_enum::Quantized8Asymm, 0.5, 300), npb::metadata_error);
}

TEST_CASE("low-bit packing works without Python") {
    const std::int8_t values[] = {-15, 1, 15};
    std::uint8_t packed[2] = {};
    npb::pack(npb::dtype_enum::IntB4, values, {3, 3}, packed, npb::lowbit_layout::compact);
    CHECK(packed[0] == 0x80);
    CHECK(packed[1] == 0x0F);
    std::int8_t back[3] = {};
    npb::unpack(npb::dtype_enum::IntB4, packed, {3, 3}, back, npb::lowbit_layout::compact);
    CHECK(std::memcmp(back, values, sizeof values) == 0);
    const std::int8_t even[] = {1, 2};
    CHECK_THROWS_AS(npb::pack(npb::dtype_enum::IntB4, even, {2, 2}, packed, npb::lowbit_layout::compact),
                    npb::value_range_error);
}

TEST_CASE("tensors and the strided copier work without Python") {
    const std::size_t shape[] = {2, 3};
    npb::tensor t = npb::tensor::empty(npb::dtype(npb::dtype_enum::Int16), shape, 2);
    REQUIRE(t.count() == 6);
    auto* data = static_cast<std::int16_t*>(t.data());
    for (int i = 0; i < 6; ++i) data[i] = static_cast<std::int16_t>(i);
    // The transpose of t, copied into C order: [[0, 3], [1, 4], [2, 5]].
    npb::detail::copy_plan plan;
    plan.ndim = 2;
    plan.shape[0] = 3;
    plan.shape[1] = 2;
    plan.src[0] = 2;
    plan.src[1] = 6;
    plan.dst[0] = 4;
    plan.dst[1] = 2;
    std::vector<std::int16_t> out(6);
    npb::detail::copy_strided(plan, data, out.data(), 2, 0);
    CHECK(out == std::vector<std::int16_t>{0, 3, 1, 4, 2, 5});
    static_assert(npb::check_adapter<npb::tensor>());
}

int main(int argc, char* argv[]) { return test::run_catch(argc, argv); }
