// The narrowing kernels (core/detail/narrowing_kernels.hpp) (int64 -> int32, float64 -> float32): SIMD and portable loops
// against a plain per-value reference, around block and vector boundaries.
#include <catch2/catch.hpp>

#include <npybridge/core/detail/narrowing_kernels.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace npb = npybridge;

namespace {

template <class Source, class Target>
std::size_t reference_first_unfit(const std::vector<Source>& in) {
    for (std::size_t i = 0; i < in.size(); ++i) {
        if constexpr (std::is_integral_v<Source>) {
            if (in[i] < std::numeric_limits<Target>::min() || in[i] > std::numeric_limits<Target>::max()) return i;
        } else {
            if (std::isinf(static_cast<float>(in[i])) && !std::isinf(in[i])) return i;
        }
    }
    return in.size();
}

/// Values that fit, with the edge values mixed in.
template <class Source>
std::vector<Source> fitting_values(std::size_t n, std::mt19937_64& random) {
    std::vector<Source> values(n);
    for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<Source>) {
            const Source edges[] = {INT32_MIN, INT32_MAX, -1, 0, 1};
            values[i] = i % 7 == 0 ? edges[random() % 5] : static_cast<Source>(static_cast<std::int32_t>(random()));
        } else {
            const Source edges[] = {
                3.4028234663852886e38, -3.4028234663852886e38, HUGE_VAL, -HUGE_VAL, std::nan(""), 0.0, -0.0};
            values[i] = i % 7 == 0 ? edges[random() % 7]
                                   : std::ldexp(static_cast<Source>(random() % 1000) - 500, int(random() % 200) - 100);
        }
    }
    return values;
}

template <class Source>
Source unfit_value(std::mt19937_64& random) {
    if constexpr (std::is_integral_v<Source>) {
        const Source values[] = {Source{INT32_MAX} + 1, Source{INT32_MIN} - 1, INT64_MAX, INT64_MIN, Source{1} << 40};
        return values[random() % 5];
    } else {
        const Source values[] = {3.4028235677973366e38, -3.4028235677973366e38, 1e39, -1e300, 1.7976931348623157e308};
        return values[random() % 5];
    }
}

template <class Source, class Target>
void check_kernels() {
    std::mt19937_64 random(7);
    for (const std::size_t n : {0, 1, 3, 4, 5, 8, 4095, 4096, 4097, 4099, 9000}) {
        for (int trial = 0; trial < 4; ++trial) {
            std::vector<Source> in = fitting_values<Source>(n, random);
            if (trial > 0 && n > 0) {  // one or two values that do not fit, anywhere (also in block tails)
                in[random() % n] = unfit_value<Source>(random);
                if (trial == 3) in[random() % n] = unfit_value<Source>(random);
            }
            const std::size_t expected = reference_first_unfit<Source, Target>(in);
            CAPTURE(n, trial, expected);
            CHECK(npb::detail::first_unfit<Source, Target>(in.data(), n) == expected);
            std::vector<Target> out(n, Target{42});
            CHECK(npb::detail::narrow_values(in.data(), out.data(), n, false) == n);  // wrap: all written
            for (std::size_t i = 0; i < n; ++i) {
                const Target want = static_cast<Target>(in[i]);
                if constexpr (std::is_integral_v<Source>) {
                    REQUIRE(out[i] == want);
                } else {
                    REQUIRE((out[i] == want || (std::isnan(out[i]) && std::isnan(want))));
                }
            }
            CHECK(npb::detail::narrow_values(in.data(), out.data(), n, true) == expected);
            CHECK(npb::detail::narrow_portable<true>(in.data(), out.data(), n, true) == expected);
            CHECK(npb::detail::narrow_portable<false>(in.data(), static_cast<Target*>(nullptr), n, true) == expected);
        }
    }
}

}  // namespace

TEST_CASE("int64 -> int32 narrowing finds the first value that does not fit and writes the rest exactly",
          "[narrowing]") {
    check_kernels<std::int64_t, std::int32_t>();
}

TEST_CASE("float64 -> float32 narrowing refuses finite values that would become infinite, and only those",
          "[narrowing]") {
    check_kernels<double, float>();
}

TEST_CASE("overflow_threshold is where a finite value starts rounding to infinity", "[narrowing]") {
    // float32: the constant the SSE2 kernel uses, and the cast itself agrees on both sides of it.
    const double threshold = npb::detail::overflow_threshold(std::numeric_limits<float>::max());
    CHECK(threshold == 3.4028235677973366e38);
    CHECK(std::isinf(static_cast<float>(threshold)));
    CHECK_FALSE(std::isinf(static_cast<float>(std::nextafter(threshold, 0.0))));
    CHECK(npb::detail::overflow_threshold(65504.0) == 65520.0);                            // float16
    CHECK(npb::detail::overflow_threshold(3.3895313892515355e38) == 3.39617752923046e38);  // bfloat16
}

TEST_CASE("first_outside and first_overflow agree with a per-value reference around block edges", "[narrowing]") {
    std::mt19937_64 random(7);
    for (std::size_t n : {0u, 1u, 5u, 4095u, 4096u, 4097u, 9000u}) {
        std::vector<std::int64_t> ints(n);
        for (auto& v : ints) v = static_cast<std::int64_t>(random() % 256) - 128;
        CHECK(npb::detail::first_outside<std::int64_t>(ints.data(), n, -128, 127) == n);
        std::vector<double> floats(n);
        for (auto& v : floats) v = std::ldexp(static_cast<double>(random() % 1000), 5);
        CHECK(npb::detail::first_overflow<double>(floats.data(), n, 65520.0) == n);
        if (n == 0) continue;
        for (std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
            auto bad_ints = ints;
            bad_ints[at] = at % 2 ? 128 : -129;
            CHECK(npb::detail::first_outside<std::int64_t>(bad_ints.data(), n, -128, 127) == at);
            auto bad_floats = floats;
            bad_floats[at] = at % 2 ? 65520.0 : -1e300;
            CHECK(npb::detail::first_overflow<double>(bad_floats.data(), n, 65520.0) == at);
            bad_floats[at] = std::nan("");  // NaN and infinities keep their meaning: not an overflow
            CHECK(npb::detail::first_overflow<double>(bad_floats.data(), n, 65520.0) == n);
            bad_floats[at] = -HUGE_VAL;
            CHECK(npb::detail::first_overflow<double>(bad_floats.data(), n, 65520.0) == n);
            std::vector<double> bounded(n, 1.0);
            bounded[at] = std::nan("");  // but NaN is outside any integer range
            CHECK(npb::detail::first_outside<double>(bounded.data(), n, -128.0, 127.0) == at);
        }
    }
    const std::uint64_t huge[] = {1, 2, ~std::uint64_t{0}};
    CHECK(npb::detail::first_outside<std::uint64_t>(huge, 3, 0, 255) == 2);
}
