// half and bfloat16 conversions against NumPy's float16 and the rounding rule.
#include <catch2/catch.hpp>

#include <npybridge/core/scalar_types.hpp>

#include "tests/support/python.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace npb = npybridge;

TEST_CASE("half rounds exactly as NumPy's float16 does", "[scalar]") {
    // Random floats across the half range (normals, subnormals, overflow), plus edges.
    std::mt19937 random(7);
    std::vector<float> values = {0.0f,
                                 -0.0f,
                                 65504.0f,
                                 65519.99f,
                                 65520.0f,
                                 6.1035156e-05f,
                                 5.9604645e-08f,
                                 2.9802322e-08f,
                                 2.9802326e-08f,
                                 1.0f / 3.0f,
                                 std::numeric_limits<float>::infinity()};
    std::uniform_real_distribution<float> exponent(-27.0f, 17.0f);
    for (int i = 0; i < 20000; ++i) values.push_back((random() % 2 ? -1.0f : 1.0f) * std::exp2(exponent(random)));
    test::owned numpy = test::eval("np");
    test::owned array{
        PyArray_SimpleNew(1, std::vector<npy_intp>{static_cast<npy_intp>(values.size())}.data(), NPY_FLOAT32)};
    std::memcpy(PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.get())), values.data(),
                values.size() * sizeof(float));
    test::owned halves{PyArray_Cast(reinterpret_cast<PyArrayObject*>(array.get()), NPY_HALF)};
    REQUIRE(halves);
    const auto* expected =
        static_cast<const std::uint16_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(halves.get())));
    for (std::size_t i = 0; i < values.size(); ++i) {
        CAPTURE(i, values[i]);
        REQUIRE(npb::half::from_float(values[i]).bits == expected[i]);
        const float widened = npb::half{expected[i]}.to_float();
        REQUIRE((widened == static_cast<float>(npb::half::from_float(widened).to_float())));
    }
    CHECK(std::isnan(npb::half::from_float(std::numeric_limits<float>::quiet_NaN()).to_float()));
}

TEST_CASE("bfloat16 rounds to nearest even and keeps NaN", "[scalar]") {
    // Hand-worked: 0.13425f = 0x3E097884 -> 0x3E09; -9.34673f = 0xC1158CA9 -> 0xC116 (above half);
    // 2.3515625f = 0x40168000 is a tie -> even 0x4016; 2.359375f = 0x40170000 exact.
    CHECK(npb::bfloat16::from_float(0.13425f).bits == 0x3E09);
    CHECK(npb::bfloat16::from_float(-9.34673f).bits == 0xC116);
    CHECK(npb::bfloat16::from_float(2.3515625f).bits == 0x4016);
    CHECK(npb::bfloat16::from_float(2.359375f).bits == 0x4017);
    CHECK(npb::bfloat16::from_float(-9.34673f).to_float() == -9.375f);
    CHECK(std::isnan(npb::bfloat16::from_float(std::numeric_limits<float>::quiet_NaN()).to_float()));
    CHECK(std::isinf(npb::bfloat16::from_float(std::numeric_limits<float>::infinity()).to_float()));
    CHECK(npb::bfloat16::from_float(3.4e38f).bits == 0x7F80);  // rounds past the largest finite bf16 to inf
}
