// half and bfloat16 conversions against NumPy's float16 and the rounding rule.
#include <catch2/catch.hpp>

#include <npybridge/core/detail/bfloat16_kernels.hpp>
#include <npybridge/core/detail/half_kernels.hpp>
#include <npybridge/core/scalar_types.hpp>

#include "tests/support/python.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
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

TEST_CASE("the bfloat16 array kernels give the scalar conversions' bits", "[bfloat16]") {
    std::vector<float> floats;
    std::vector<double> doubles;
    std::uint64_t state = 99;
    for (int i = 0; i < 50000; ++i) {
        state = state * 6364136223846793005u + 1442695040888963407u;
        const auto low = static_cast<std::uint32_t>(state >> 32);
        float f;
        std::memcpy(&f, &low, sizeof f);
        floats.push_back(f);
        double d;
        std::memcpy(&d, &state, sizeof d);
        doubles.push_back(d);
        // doubles near bfloat16 ties, at every exponent a bfloat16 has (and just past both ends)
        const int exponent = static_cast<int>(state % 300) - 150;
        doubles.push_back(std::ldexp(
            1.0 + static_cast<double>(low % 256) / 256.0 + 1.0 / 512.0 + (static_cast<double>(low % 3) - 1.0) * 0x1p-52,
            exponent));
    }
    for (std::uint32_t top = 0; top < 0x10000u; ++top) {  // every bfloat16 and the floats around it
        for (const std::uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, 0x0001u}) {
            const std::uint32_t u = (top << 16) | low;
            float f;
            std::memcpy(&f, &u, sizeof f);
            floats.push_back(f);
            doubles.push_back(npb::detail::widen_exactly(f));
        }
    }
    // One assertion per comparison (an ASan build times every assertion): the index of the first difference.
    const auto first_difference = [](std::size_t n, auto same) {
        for (std::size_t i = 0; i < n; ++i) {
            if (!same(i)) return i;
        }
        return n;
    };
    // Every level this CPU runs (the dispatcher's choice, SSE2, AVX2), unchecked and checked; checked stops at the
    // first finite value that becomes infinity, which the scalar conversion names.
    using float_kernel = std::function<std::size_t(const float*, std::size_t, std::uint16_t*, bool)>;
    std::vector<std::pair<const char*, float_kernel>> float_levels = {
        {"dispatched",
         [](auto in, auto n, auto out, bool check) { return npb::detail::floats_to_bfloat16(in, n, out, check); }}};
    using double_kernel = std::function<std::size_t(const double*, std::size_t, std::uint16_t*, bool)>;
    std::vector<std::pair<const char*, double_kernel>> double_levels = {
        {"dispatched",
         [](auto in, auto n, auto out, bool check) { return npb::detail::doubles_to_bfloat16(in, n, out, check); }}};
#if defined(NPYBRIDGE_SSE2)
    float_levels.emplace_back("sse2", [](const float* in, std::size_t n, std::uint16_t* out, bool check) {
        std::size_t done = 0;
        const std::size_t bad = npb::detail::floats_to_bfloat16_sse2(in, n, out, check, done);
        if (bad != n) return bad;
        for (std::size_t i = done; i < n; ++i) {
            out[i] = npb::bfloat16::from_float(in[i]).bits;
            if (check && npb::detail::overflowed(in[i], out[i])) return i;
        }
        return n;
    });
    double_levels.emplace_back("sse2", [](const double* in, std::size_t n, std::uint16_t* out, bool check) {
        std::size_t done = 0;
        const std::size_t bad =
            npb::detail::doubles_to_16_bits_sse2<7, 127>(in, n, out, npb::detail::bfloat16_bits_of_double, check, done);
        if (bad != n) return bad;
        for (std::size_t i = done; i < n; ++i) {
            out[i] = npb::detail::bfloat16_bits_of_double(in[i]);
            if (check && npb::detail::overflowed(in[i], out[i], 0x7F80)) return i;
        }
        return n;
    });
#endif
#if defined(NPYBRIDGE_X86)
    if (npb::detail::cpu_has_avx2()) {
        float_levels.emplace_back("avx2", [](const float* in, std::size_t n, std::uint16_t* out, bool check) {
            return npb::detail::floats_to_bfloat16_avx2(in, n, out, check);
        });
        double_levels.emplace_back("avx2", [](const double* in, std::size_t n, std::uint16_t* out, bool check) {
            return npb::detail::doubles_to_16_bits_avx2<7, 127>(in, n, out, npb::detail::bfloat16_bits_of_double,
                                                                check);
        });
    }
#endif
    const auto first_overflow = [](const auto& values, std::size_t offset) {
        for (std::size_t i = offset; i < values.size(); ++i) {
            const auto bits = npb::detail::round_to_bfloat16(values[i]).bits;
            if ((bits & 0x7FFF) == 0x7F80 && std::isfinite(values[i])) return i - offset;
        }
        return values.size() - offset;
    };
    std::vector<std::uint16_t> bits(std::max(floats.size(), doubles.size()));
    for (const auto& [level, kernel] : float_levels) {
        for (std::size_t offset = 0; offset < 3; ++offset) {
            CAPTURE(level, offset);
            const std::size_t n = floats.size() - offset;
            CHECK(kernel(floats.data() + offset, n, bits.data(), false) == n);
            CHECK(first_difference(n, [&](std::size_t i) {
                      return bits[i] == npb::bfloat16::from_float(floats[i + offset]).bits;
                  }) == n);
            CHECK(kernel(floats.data() + offset, n, bits.data(), true) == first_overflow(floats, offset));
        }
    }
    for (const auto& [level, kernel] : double_levels) {
        CAPTURE(level);
        CHECK(kernel(doubles.data(), doubles.size(), bits.data(), false) == doubles.size());
        CHECK(first_difference(doubles.size(), [&](std::size_t i) {
                  return bits[i] == npb::bfloat16::from_double(doubles[i]).bits;
              }) == doubles.size());
        CHECK(kernel(doubles.data(), doubles.size(), bits.data(), true) == first_overflow(doubles, 0));
        // Past the first overflow: a run of values that all fit, so a checked level converts every one of them.
        const std::size_t start = std::min(first_overflow(doubles, 0) + 1, doubles.size());
        const std::size_t run = std::min<std::size_t>(5000, first_overflow(doubles, start));
        CHECK(kernel(doubles.data() + start, run, bits.data(), true) == run);
    }
    std::vector<std::uint16_t> every(0x10000 + 5);
    for (std::size_t i = 0; i < every.size(); ++i) every[i] = static_cast<std::uint16_t>(i * 40503u);
    std::vector<float> widened(every.size());
    npb::detail::bfloat16_to_floats(every.data(), every.size(), widened.data());
    CHECK(first_difference(every.size(), [&](std::size_t i) {
              const float expected = npb::bfloat16{every[i]}.to_float();
              return std::memcmp(&widened[i], &expected, sizeof expected) == 0;
          }) == every.size());
}

TEST_CASE("the float16 array kernels give NumPy's bits on every dispatch level this CPU runs", "[float16]") {
    std::vector<float> floats;
    std::uint32_t state = 7;
    for (int i = 0; i < 100000; ++i) {
        state = state * 1664525u + 1013904223u;
        floats.push_back(npb::detail::float_of(state));
        floats.push_back(npb::detail::float_of(state % 0x48000000u));  // the range a half holds, and just past it
    }
    for (const std::uint32_t u : {0x7F800001u, 0x7FC00000u, 0x7F802000u, 0xFFC12345u, 0x7F800000u, 0x33000000u,
                                  0x33000001u, 0x387FE000u, 0x477FF000u, 0x477FEFFFu}) {
        floats.push_back(npb::detail::float_of(u));
    }
    std::vector<std::uint16_t> portable(floats.size()), active(floats.size());
    npb::detail::floats_to_half_portable(floats.data(), floats.size(), portable.data());
    npb::detail::active_half_kernels().to_half(floats.data(), floats.size(), active.data());
    INFO("dispatch level: " << npb::detail::active_half_kernels().name);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < floats.size(); ++i) {
        wrong += active[i] != portable[i] ||
                 (!std::isnan(floats[i]) && portable[i] != npb::half::from_float(floats[i]).bits);
    }
    CHECK(wrong == 0);
    std::vector<double> doubles;
    for (const float f : floats) doubles.push_back(npb::detail::widen_exactly(f) * 1.0000001);
    std::vector<std::uint16_t> vector_half(doubles.size());
    npb::detail::doubles_to_half(doubles.data(), doubles.size(), vector_half.data());
    wrong = 0;
    for (std::size_t i = 0; i < doubles.size(); ++i)
        wrong += vector_half[i] != npb::detail::half_bits_of_double(doubles[i]);
    CHECK(wrong == 0);
    // The same by each level directly (the dispatcher takes one).
    std::vector<std::uint16_t> level_half(doubles.size());
#if defined(NPYBRIDGE_SSE2)
    std::size_t done = 0;
    npb::detail::doubles_to_16_bits_sse2<10, 15>(doubles.data(), doubles.size(), level_half.data(),
                                                 npb::detail::half_bits_of_double, false, done);
    CHECK(std::equal(level_half.begin(), level_half.begin() + static_cast<std::ptrdiff_t>(done), vector_half.begin()));
    CHECK(done + 8 > doubles.size());
#endif
#if defined(NPYBRIDGE_X86)
    if (npb::detail::cpu_has_avx2()) {
        CHECK(npb::detail::doubles_to_16_bits_avx2<10, 15>(doubles.data(), doubles.size(), level_half.data(),
                                                           npb::detail::half_bits_of_double, false) == doubles.size());
        CHECK(level_half == vector_half);
    }
#endif
    // NumPy's NaN rule: the top payload bits kept, a signalling NaN stays one, a low payload becomes 1.
    CHECK(npb::detail::half_bits_like_numpy(npb::detail::float_of(0x7F800001u)) == 0x7C01u);
    CHECK(npb::detail::half_bits_like_numpy(npb::detail::float_of(0xFFC12345u)) == 0xFE09u);
    std::vector<std::uint16_t> every(0x10000 + 7);
    for (std::size_t i = 0; i < every.size(); ++i) every[i] = static_cast<std::uint16_t>(i);
    std::vector<float> widened(every.size()), reference(every.size());
    npb::detail::active_half_kernels().to_float(every.data(), every.size(), widened.data());
    npb::detail::half_to_floats_portable(every.data(), every.size(), reference.data());
    CHECK(std::memcmp(widened.data(), reference.data(), widened.size() * sizeof(float)) == 0);
}

TEMPLATE_TEST_CASE("integers into float16 and bfloat16 round once, and exact mode finds the first inexact value",
                   "[float16][bfloat16]", std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t,
                   std::uint32_t, std::int64_t, std::uint64_t) {
    using Int = TestType;
    std::mt19937_64 random(17);
    std::vector<Int> values;
    for (int e = 0; e < static_cast<int>(sizeof(Int) * 8) - std::is_signed_v<Int>; ++e) {
        for (int d = -3; d <= 3; ++d) {  // near each power of two: ties, carries, the last exact values
            const auto v = static_cast<Int>((std::uint64_t{1} << e) + static_cast<std::uint64_t>(d));
            values.push_back(v);
            if (std::is_signed_v<Int>) values.push_back(static_cast<Int>(0 - v));
        }
    }
    while (values.size() < 3000) values.push_back(static_cast<Int>(random()));  // past one block, any magnitude
    const std::size_t n = values.size();
    for (const bool to_half : {false, true}) {
        CAPTURE(to_half);
        std::vector<std::uint16_t> expected(n), got(n);
        for (std::size_t i = 0; i < n; ++i) {
            expected[i] = to_half ? npb::detail::half_bits_of_double(static_cast<double>(values[i]))
                                  : npb::bfloat16::from_integer(values[i]).bits;
        }
        // 2^53 and beyond: float16 overflows whatever the double's rounding; bfloat16 rounds the integer.
        REQUIRE(npb::detail::integers_to_16_bit_floats(values.data(), n, got.data(), to_half, false) == n);
        REQUIRE(got == expected);
        // The block path alone (a CPU without SSE2; what follows the SSE2 loop where it stops): the same bits.
        float narrow[512];
        double wide[512];
        for (std::size_t at = 0; at < n; at += 512) {
            const std::size_t m = std::min<std::size_t>(512, n - at);
            const bool small = npb::detail::integer_block<Int, 512>::widen_exact(values.data() + at, narrow, m);
            npb::detail::block_to_16_bit_floats<Int, 512>(values.data() + at, m, got.data() + at, to_half, small,
                                                          narrow, wide);
        }
        REQUIRE(got == expected);
        const auto exact_at = [&](std::size_t i) {
            const double back = to_half ? npb::half{expected[i]}.to_float() : npb::bfloat16{expected[i]}.to_double();
            if (std::isinf(back)) return false;
            return sizeof(Int) == 8 ? static_cast<long double>(back) == static_cast<long double>(values[i])
                                    : back == static_cast<double>(values[i]);
        };
        std::size_t first = n;
        for (std::size_t i = 0; i < n && first == n; ++i) {
            if (!exact_at(i)) first = i;
        }
        CHECK(npb::detail::integers_to_16_bit_floats(values.data(), n, got.data(), to_half, true) == first);
#if defined(NPYBRIDGE_SSE2)
        // The AVX2 + F16C level into float16: the same bits, eight a step; exact mode stops at the first's eight.
        if constexpr (sizeof(Int) < 4 || std::is_same_v<Int, std::int32_t>) {
            if (to_half && npb::detail::cpu_has_avx2() &&
                npb::detail::active_half_kernels().to_half == npb::detail::floats_to_half_f16c) {
                std::vector<std::uint16_t> level(n);
                REQUIRE(npb::detail::integers_to_half_avx2(values.data(), n, level.data(), false) == n / 8 * 8);
                for (std::size_t i = 0; i < n / 8 * 8; ++i) REQUIRE(level[i] == expected[i]);
                CHECK(npb::detail::integers_to_half_avx2(values.data(), n, level.data(), true) == first / 8 * 8);
            }
            // The AVX2 level into bfloat16, 16 a step: what it did has the same bits; it stops before an unfit
            // value (and int32 before a value past 2^24, its float already rounded).
            if (!to_half && npb::detail::cpu_has_avx2()) {
                std::vector<std::uint16_t> level(n);
                const std::size_t done = npb::detail::integers_to_bfloat16_avx2(values.data(), n, level.data(), false);
                if (sizeof(Int) < 4) REQUIRE(done == n / 16 * 16);
                for (std::size_t i = 0; i < done; ++i) REQUIRE(level[i] == expected[i]);
                const std::size_t exact_done =
                    npb::detail::integers_to_bfloat16_avx2(values.data(), n, level.data(), true);
                CHECK(exact_done <= first);
                if (sizeof(Int) < 4) CHECK(exact_done == first / 16 * 16);
                for (std::size_t i = 0; i < exact_done; ++i) REQUIRE(level[i] == expected[i]);
            }
        }
#endif
        std::vector<Int> exact_only;
        for (std::size_t i = 0; i < n; ++i) {
            if (exact_at(i)) exact_only.push_back(values[i]);
        }
        got.resize(exact_only.size());
        CHECK(npb::detail::integers_to_16_bit_floats(exact_only.data(), exact_only.size(), got.data(), to_half, true) ==
              exact_only.size());
    }
}
