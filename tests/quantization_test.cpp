// Quantized dtypes in C++ (core/dtype.hpp, core/quantization.hpp): equality and hash by exact params, validation
// at construction, quantize / dequantize with MegDNN's rounding and clamps.
#include <catch2/catch.hpp>

#include <npybridge/core/detail/quantize_kernels.hpp>
#include <npybridge/core/quantization.hpp>

#include "tests/support/python.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <cstring>
#include <unordered_set>
#include <vector>

namespace npb = npybridge;
using Catch::Matchers::Contains;
using npb::dtype_enum;

TEST_CASE("dtypes compare and hash by name and exact params", "[quantized]") {
    const npb::dtype a = npb::dtype::quantized(dtype_enum::Quantized8Asymm, 0.5, 3);
    CHECK(a == npb::dtype::quantized(dtype_enum::Quantized8Asymm, 0.5, 3));
    CHECK(a != npb::dtype::quantized(dtype_enum::Quantized8Asymm, 0.5, 4));
    CHECK(a != npb::dtype::quantized(dtype_enum::Quantized8Asymm, std::nextafter(0.5f, 1.0f), 3));
    CHECK(npb::dtype::quantized(dtype_enum::QuantizedS8, 0.5) != npb::dtype::quantized(dtype_enum::QuantizedS16, 0.5));
    CHECK(npb::dtype(dtype_enum::Int8) != npb::dtype(dtype_enum::Uint8));
    CHECK(std::hash<npb::dtype>{}(a) ==
          std::hash<npb::dtype>{}(npb::dtype::quantized(dtype_enum::Quantized8Asymm, 0.5, 3)));
    std::unordered_set<npb::dtype> set{a, npb::dtype(dtype_enum::Int8),
                                       npb::dtype::quantized(dtype_enum::QuantizedS8, 0.5)};
    CHECK(set.count(npb::dtype::quantized(dtype_enum::Quantized8Asymm, 0.5, 3)) == 1);
    CHECK(set.size() == 3);
    CHECK(a.to_string() == "Quantized8Asymm(scale=0.5, zero_point=3)");
    CHECK(npb::dtype(dtype_enum::Float32).to_string() == "Float32");
}

namespace quantization_test {
/// A param struct no row of the table uses (a named namespace: Clang warns of an unused member in an unnamed one).
struct not_a_param_of_the_table {
    float scale = 1.0f;
    static constexpr std::array<std::string_view, 1> field_names{"scale"};
};
}  // namespace quantization_test

TEST_CASE("C++ construction validates like metadata does", "[quantized][errors]") {
    CHECK_THROWS_WITH(npb::dtype(dtype_enum::QuantizedS8), Contains("QuantizedS8 needs params"));
    CHECK_THROWS_WITH(npb::dtype::quantized(dtype_enum::Int8, 1.0), Contains("Int8 is not a quantized dtype"));
    CHECK_THROWS_WITH(npb::dtype::quantized(dtype_enum::Quantized8Asymm, 1.0), Contains("zero_point is missing"));
    CHECK_THROWS_WITH(npb::dtype::quantized(dtype_enum::QuantizedS4, 1.0, 2), Contains("zero_point is not a param"));
    CHECK_THROWS_WITH(npb::dtype::quantized(dtype_enum::Quantized4Asymm, 1.0, 16),
                      Contains("zero_point 16 is outside [0, 15]"));
    CHECK_THROWS_AS(npb::dtype::quantized(dtype_enum::QuantizedS8, -1.0), npb::metadata_error);
    CHECK_NOTHROW(npb::dtype::quantized(dtype_enum::Quantized4Asymm, 1.0, 15));
    CHECK_THROWS_AS(npb::dtype::with(dtype_enum::QuantizedS8, npb::asymm_param{1.0f, 2}), npb::dtype_error);
    CHECK_THROWS_WITH(npb::dtype::with(dtype_enum::QuantizedS8, npb::asymm_param{1.0f, 2}),
                      "QuantizedS8: wrong param struct for this dtype");
    CHECK_THROWS_WITH(npb::dtype::with(dtype_enum::Int8, npb::scale_param{1.0f}),
                      "Int8: wrong param struct for this dtype");
    CHECK_THROWS_WITH(npb::dtype::with(dtype_enum::QuantizedS8, quantization_test::not_a_param_of_the_table{}),
                      "QuantizedS8: wrong param struct for this dtype");
    CHECK_THROWS_WITH(npb::dtype::with(dtype_enum::QuantizedS8, npb::scale_param{-1.0f}),
                      "QuantizedS8: scale -1 must be > 0");
    CHECK_THROWS_WITH(npb::dtype::with(dtype_enum::Quantized4Asymm, npb::asymm_param{1.0f, 16}),
                      "Quantized4Asymm: zero_point 16 is outside [0, 15]");
    CHECK(npb::dtype::with(dtype_enum::QuantizedS8, npb::scale_param{0.5f}).scale() == 0.5f);
    const npb::dtype asymm = npb::dtype::with(dtype_enum::Quantized8Asymm, npb::asymm_param{0.25f, 200});
    CHECK(asymm == npb::dtype::quantized(dtype_enum::Quantized8Asymm, 0.25, 200));
    CHECK(asymm.zero_point() == 200);
    CHECK(asymm.param<npb::asymm_param>().zero_point == 200);
    CHECK(npb::dtype(dtype_enum::Int8).scale() == std::nullopt);
    CHECK(npb::dtype::quantized(dtype_enum::QuantizedS8, 0.5).zero_point() == std::nullopt);
}

TEST_CASE("quantize and dequantize follow MegDNN's rounding and clamps", "[quantized]") {
    // Expected values worked by hand from MegDNN's dtype.h: q = clamp(round_half_away(x/scale) + zp).
    const npb::dtype s8 = npb::dtype::quantized(dtype_enum::QuantizedS8, 0.5);
    CHECK(npb::quantize(s8, 1.25f) == 3);  // 2.5 rounds away from zero
    CHECK(npb::quantize(s8, -1.25f) == -3);
    CHECK(npb::quantize(s8, 0.2f) == 0);
    CHECK(npb::quantize(s8, 1000.f) == 127);
    CHECK(npb::quantize(s8, -1000.f) == -128);
    CHECK(npb::quantize(s8, std::numeric_limits<float>::quiet_NaN()) == -128);
    CHECK(npb::dequantize(s8, -3) == -1.5f);

    const npb::dtype u8 = npb::dtype::quantized(dtype_enum::Quantized8Asymm, 0.5, 128);
    CHECK(npb::quantize(u8, 0.0f) == 128);
    CHECK(npb::quantize(u8, -64.0f) == 0);
    CHECK(npb::quantize(u8, 64.0f) == 255);
    CHECK(npb::quantize(u8, std::numeric_limits<float>::quiet_NaN()) == 0);
    CHECK(npb::dequantize(u8, 130) == 1.0f);

    const npb::dtype s32 = npb::dtype::quantized(dtype_enum::QuantizedS32, 1.0);
    CHECK(npb::quantize(s32, 1e10f) == 2147483520);
    CHECK(npb::quantize(s32, -1e10f) == std::numeric_limits<std::int32_t>::min());

    const npb::dtype q4 = npb::dtype::quantized(dtype_enum::Quantized4Asymm, 1.0, 8);
    CHECK(npb::quantize(q4, 7.4f) == 15);
    CHECK(npb::quantize(q4, -9.0f) == 0);
    CHECK(npb::quantize(npb::dtype::quantized(dtype_enum::QuantizedS4, 1.0), 7.5f) == 7);
    CHECK(npb::quantize(npb::dtype::quantized(dtype_enum::QuantizedS1, 1.0), -3.0f) == 0);

    SECTION("the typed forms agree with the runtime ones") {
        CHECK(npb::quantize<dtype_enum::QuantizedS8>(1.25f, npb::scale_param{0.5f}) == std::int8_t{3});
        CHECK(npb::quantize<dtype_enum::Quantized8Asymm>(64.f, npb::asymm_param{0.5f, 128}) == std::uint8_t{255});
        CHECK(npb::dequantize<dtype_enum::Quantized8Asymm>(std::uint8_t{130}, npb::asymm_param{0.5f, 128}) == 1.0f);
    }
    CHECK_THROWS_AS(npb::quantize(npb::dtype(dtype_enum::Int8), 1.0f), npb::dtype_error);
}

TEST_CASE("dequantize refuses codes outside the dtype's range, with no overflow for any int32", "[quantized][errors]") {
    const npb::dtype s4 = npb::dtype::quantized(dtype_enum::QuantizedS4, 0.5);
    CHECK(npb::dequantize(s4, 7) == 3.5f);
    CHECK(npb::dequantize(s4, -8) == -4.0f);
    CHECK_THAT(test::message_of<npb::value_range_error>([&] { npb::dequantize(s4, 100); }),
               Contains("code 100") && Contains("QuantizedS4") && Contains("-8..7"));
    const npb::dtype u8 = npb::dtype::quantized(dtype_enum::Quantized8Asymm, 0.25, 255);
    CHECK(npb::dequantize(u8, 0) == -63.75f);
    // INT32_MIN - 255 overflowed (UBSan) before the range check.
    CHECK_THAT(test::message_of<npb::value_range_error>(
                   [&] { npb::dequantize(u8, std::numeric_limits<std::int32_t>::min()); }),
               Contains("code -2147483648"));
    const npb::dtype s1 = npb::dtype::quantized(dtype_enum::QuantizedS1, 1.0);
    CHECK_THAT(test::message_of<npb::value_range_error>([&] { npb::dequantize(s1, 2); }), Contains("code 2"));
    const npb::dtype s32 = npb::dtype::quantized(dtype_enum::QuantizedS32, 2.0);
    CHECK(npb::dequantize(s32, std::numeric_limits<std::int32_t>::min()) == -4294967296.0f);
}

namespace {

/// Floats that probe every branch of the rounding: ties (k + 0.5), just below and above them, NaN, infinities,
/// subnormals, values beyond every clamp, and random bit patterns.
std::vector<float> probe_floats() {
    std::vector<float> values = {0.0f,
                                 -0.0f,
                                 0.5f,
                                 -0.5f,
                                 1.5f,
                                 -1.5f,
                                 2.5f,
                                 -2.5f,
                                 127.5f,
                                 -128.5f,
                                 255.5f,
                                 -0.49999997f,
                                 0.49999997f,
                                 8388607.5f,
                                 1e10f,
                                 -1e10f,
                                 2147483520.0f,
                                 2147483648.0f,
                                 -2147483648.0f,
                                 3e38f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN(),
                                 1e-45f,
                                 -1e-40f};
    for (int k = -300; k <= 300; ++k) {
        const float tie = static_cast<float>(k) + 0.5f;
        values.insert(values.end(), {tie, std::nextafter(tie, -1e9f), std::nextafter(tie, 1e9f)});
    }
    std::uint32_t state = 12345;
    for (int i = 0; i < 5000; ++i) {
        state = state * 1664525u + 1013904223u;
        float f;
        std::memcpy(&f, &state, sizeof f);
        values.push_back(f);
        values.push_back(static_cast<float>(static_cast<std::int32_t>(state) % 100000) / 64.0f);
    }
    return values;
}

template <class Code>
void check_array_quantize(const npb::dtype& type) {
    const std::vector<float> values = probe_floats();
    std::vector<Code> codes(values.size() + 3);
    using kernel = void (*)(const float*, std::size_t, const npb::detail::quantize_rule&, Code*) noexcept;
    std::vector<std::pair<const char*, kernel>> levels = {{"dispatched", npb::detail::quantize_floats<Code>},
                                                          {"sse2", npb::detail::quantize_floats_sse2<Code>}};
#if defined(NPYBRIDGE_X86)
    if (npb::detail::cpu_has_avx2()) levels.emplace_back("avx2", npb::detail::quantize_floats_avx2<Code>);
#endif
    const auto rule = npb::detail::quantize_rule_of(type.info(), *type.scale(), type.zero_point().value_or(0));
    for (const auto& [level, quantize_floats] : levels) {
        for (std::size_t offset = 0; offset < 3; ++offset) {  // every alignment of the tail and the vector loop
            quantize_floats(values.data() + offset, values.size() - offset, rule, codes.data());
            std::size_t first_wrong = values.size();  // one assertion per run: ASan builds time each
            for (std::size_t i = 0; i + offset < values.size() && first_wrong == values.size(); ++i) {
                if (static_cast<std::int32_t>(codes[i]) != npb::quantize(type, values[i + offset])) first_wrong = i;
            }
            INFO(type.to_string() << " " << level << " offset " << offset << " first wrong at " << first_wrong);
            REQUIRE(first_wrong == values.size());
        }
    }
    std::vector<Code> all;
    for (double c = type.info().range.lo; c <= type.info().range.hi; c += type.info().range.hi > 70000 ? 65537 : 1) {
        all.push_back(static_cast<Code>(c));
    }
    std::vector<float> back(all.size());
    npb::detail::dequantize_codes(all.data(), all.size(), static_cast<std::int32_t>(type.zero_point().value_or(0)),
                                  *type.scale(), back.data());
    std::size_t first_wrong = all.size();
    for (std::size_t i = 0; i < all.size() && first_wrong == all.size(); ++i) {
        const float expected = npb::dequantize(type, static_cast<std::int32_t>(all[i]));
        if (std::memcmp(&back[i], &expected, sizeof expected) != 0) first_wrong = i;
    }
    INFO(type.to_string() << " dequantize: first wrong at " << first_wrong);
    REQUIRE(first_wrong == all.size());
}

}  // namespace

TEST_CASE("array quantize and dequantize give the scalar functions' bits for every value", "[quantized]") {
    for (const float scale : {0.25f, 0.1f, 3.0f, 1e-40f, 7.5e-3f}) {
        check_array_quantize<std::int8_t>(npb::dtype::quantized(dtype_enum::QuantizedS8, scale));
        check_array_quantize<std::uint8_t>(npb::dtype::quantized(dtype_enum::Quantized8Asymm, scale, 128));
        check_array_quantize<std::uint8_t>(npb::dtype::quantized(dtype_enum::Quantized8Asymm, scale, 0));
        check_array_quantize<std::int16_t>(npb::dtype::quantized(dtype_enum::QuantizedS16, scale));
        check_array_quantize<std::int32_t>(npb::dtype::quantized(dtype_enum::QuantizedS32, scale));
        check_array_quantize<std::int8_t>(npb::dtype::quantized(dtype_enum::QuantizedS4, scale));
        check_array_quantize<std::uint8_t>(npb::dtype::quantized(dtype_enum::Quantized4Asymm, scale, 9));
        check_array_quantize<std::int8_t>(npb::dtype::quantized(dtype_enum::QuantizedS1, scale));
    }
}
