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

namespace {

/// store_checked's contract, per value: held when a whole number in [lo, hi] (NaN is not).
template <class Source>
bool held_in(Source value, std::int64_t lo, std::int64_t hi) {
    const auto wide = static_cast<long double>(value);
    return wide >= lo && wide <= hi && std::trunc(wide) == wide;
}

/// Values of Source mostly inside [lo, hi], with its edges, and (by trial) one or two that are not held
/// anywhere, block tails included: fractions, NaN, infinities, one past each bound.
template <class Source>
std::vector<Source> values_around(std::size_t n, std::int64_t lo, std::int64_t hi, int trial, std::mt19937_64& random) {
    using limits = std::numeric_limits<Source>;
    const auto clip = [](long double v) {
        return static_cast<Source>(std::min<long double>(std::max<long double>(v, limits::lowest()), limits::max()));
    };
    std::vector<Source> values(n);
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    for (std::size_t i = 0; i < n; ++i) {
        const long double inside = static_cast<long double>(lo) + static_cast<long double>(random() % span);
        values[i] = i % 5 == 0 ? clip(random() % 2 ? lo : hi) : clip(inside);
        if constexpr (std::is_floating_point_v<Source>) {
            if (i % 11 == 0) values[i] = -0.0;
        }
    }
    std::vector<Source> bad = {clip(static_cast<long double>(lo) - 1), clip(static_cast<long double>(hi) + 1)};
    if constexpr (sizeof(Source) == 8) bad.push_back(clip(4294967296.0L + lo));  // past 32 bits, its low half held
    if constexpr (std::is_floating_point_v<Source>) {
        bad.insert(bad.end(), {limits::quiet_NaN(), limits::infinity(), -limits::infinity(), Source(0.5),
                               static_cast<Source>(hi) - Source(0.25), static_cast<Source>(lo) + Source(0.5)});
    }
    for (int k = 0; k < trial && n > 0; ++k) values[random() % n] = bad[random() % bad.size()];
    return values;
}

/// Every store_checked path on this CPU against the per-value contract: the answer is the start of the block
/// of the first value not held (n: all held), and when all are held each stored value is the source's.
template <class Source, class Target, class Run>
void check_store_checked(std::int64_t lo, std::int64_t hi, Run run) {
    std::mt19937_64 random(11);
    for (const std::size_t n : {0, 1, 15, 16, 17, 1023, 1024, 1025, 3000}) {
        for (int trial = 0; trial < 3; ++trial) {
            const std::vector<Source> in = values_around<Source>(n, lo, hi, trial, random);
            std::size_t first = n;
            for (std::size_t i = 0; i < n && first == n; ++i) {
                if (!held_in(in[i], lo, hi)) first = i;
            }
            std::vector<Target> out(n, Target{0x5A});
            const std::size_t answer = run(in.data(), n, out.data());
            CAPTURE(n, trial, first, lo, hi);
            REQUIRE(answer == (first == n ? n : first / 1024 * 1024));
            for (std::size_t i = 0; i < answer; ++i) {
                REQUIRE(out[i] == static_cast<Target>(static_cast<std::int64_t>(in[i])));
            }
        }
    }
}

struct bounds_case {
    std::int64_t lo, hi;
    std::size_t size;
};

constexpr bounds_case targets[] = {{-128, 127, 1},     {0, 255, 1},   {0, 1, 1},    {-8, 7, 1},
                                   {-32768, 32767, 2}, {0, 65535, 2}, {0, 1000, 2}, {INT32_MIN, INT32_MAX, 4},
                                   {0, UINT32_MAX, 4}};

template <class Target, class Source>
void check_integer_paths(const bounds_case& target) {
    using limits = std::numeric_limits<Source>;
    const auto lo = static_cast<Source>(std::max<long double>(target.lo, limits::min()));
    const auto hi = static_cast<Source>(std::min<long double>(target.hi, limits::max()));
    check_store_checked<Source, Target>(lo, hi, [&](const Source* in, std::size_t n, Target* out) {
        return npb::detail::store_checked(in, n, out, lo, hi);
    });
    check_store_checked<Source, Target>(lo, hi, [&](const Source* in, std::size_t n, Target* out) {
        return npb::detail::store_checked_integers(in, n, out, lo, hi);  // AVX2 where this CPU has it
    });
#if defined(NPYBRIDGE_X86)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        check_store_checked<Source, Target>(lo, hi, [&](const Source* in, std::size_t n, Target* out) {
            return npb::detail::store_checked_avx2(in, n, out, lo, hi);
        });
        constexpr bool packed = (std::is_same_v<Source, std::int32_t> && sizeof(Target) <= 2) ||
                                (std::is_same_v<Source, std::int64_t> && sizeof(Target) <= 4);
        if constexpr (packed) {
            if (lo < INT32_MIN || hi > INT32_MAX) return;
            check_store_checked<Source, Target>(lo, hi, [&](const Source* in, std::size_t n, Target* out) {
                return npb::detail::store_checked_packed_avx2(in, n, out, static_cast<std::int32_t>(lo),
                                                              static_cast<std::int32_t>(hi));
            });
        }
    }
#endif
}

template <class Target, class Source>
void check_float_paths(const bounds_case& target) {
    check_store_checked<Source, Target>(target.lo, target.hi, [&](const Source* in, std::size_t n, Target* out) {
        return npb::detail::store_checked_floats(in, n, out, target.lo, target.hi);
    });
    check_store_checked<Source, Target>(target.lo, target.hi, [&](const Source* in, std::size_t n, Target* out) {
        return npb::detail::store_checked<std::int64_t, double>(in, n, out, target.lo, target.hi);  // portable
    });
#if defined(NPYBRIDGE_SSE2)
    if (target.hi <= INT32_MAX) {
        check_store_checked<Source, Target>(target.lo, target.hi, [&](const Source* in, std::size_t n, Target* out) {
            return npb::detail::store_checked_sse2(in, n, out, static_cast<std::int32_t>(target.lo),
                                                   static_cast<std::int32_t>(target.hi));
        });
    }
#endif
#if defined(NPYBRIDGE_X86)
    __builtin_cpu_init();
    if (target.hi <= INT32_MAX) {
        if (__builtin_cpu_supports("avx2")) {
            check_store_checked<Source, Target>(
                target.lo, target.hi, [&](const Source* in, std::size_t n, Target* out) {
                    return npb::detail::store_checked_packed_avx2(in, n, out, static_cast<std::int32_t>(target.lo),
                                                                  static_cast<std::int32_t>(target.hi));
                });
        }
    }
#endif
}

template <class Target>
void check_sources(const bounds_case& target) {
    check_integer_paths<Target, std::int8_t>(target);
    check_integer_paths<Target, std::int16_t>(target);
    check_integer_paths<Target, std::int32_t>(target);
    check_integer_paths<Target, std::int64_t>(target);
    check_integer_paths<Target, std::uint8_t>(target);
    check_integer_paths<Target, std::uint16_t>(target);
    check_integer_paths<Target, std::uint32_t>(target);
    check_integer_paths<Target, std::uint64_t>(target);
    check_float_paths<Target, float>(target);
    check_float_paths<Target, double>(target);
}

}  // namespace

TEST_CASE("checked narrowing into integer storage tests and stores in one pass, on every path, as each value says",
          "[narrowing]") {
    for (const bounds_case& target : targets) {
        CAPTURE(target.lo, target.hi, target.size);
        if (target.size == 1) check_sources<std::uint8_t>(target);
        if (target.size == 2) check_sources<std::uint16_t>(target);
        if (target.size == 4) check_sources<std::uint32_t>(target);
    }
}

TEMPLATE_TEST_CASE("every other value is gathered in order, and nothing is read past the last one", "[narrowing]",
                   std::int8_t, std::int16_t, std::int32_t, float, std::int64_t, double) {
    for (std::size_t m = 0; m < 40; ++m) {
        CAPTURE(m);
        std::vector<TestType> in(m == 0 ? 0 : 2 * m - 1);  // exactly as long as the last value needs: ASan sees more
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<TestType>(i % 100);
        std::vector<TestType> out(m);
        npb::detail::gather_every_other(in.data(), m, out.data());
        for (std::size_t i = 0; i < m; ++i) REQUIRE(out[i] == in[2 * i]);
    }
}

TEST_CASE("NPYBRIDGE_SIMD=baseline, and only that spelling, keeps the kernels to the baseline", "[narrowing]") {
    CHECK(npb::detail::baseline_only("baseline"));
    CHECK_FALSE(npb::detail::baseline_only(nullptr));
    CHECK_FALSE(npb::detail::baseline_only(""));
    CHECK_FALSE(npb::detail::baseline_only("Baseline"));
    CHECK_FALSE(npb::detail::baseline_only("avx2"));
}
