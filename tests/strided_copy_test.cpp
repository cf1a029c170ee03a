// The tiled strided copier (core/detail/strided_copy.hpp) against a per-element reference loop: every itemsize,
// every axis permutation of 2-, 3- and 4-D shapes whose extents straddle the SIMD and tile edges, negative
// and sliced strides, size-1 and zero-size dimensions, byte-swapped sources, narrowing with its fit check.
#include <catch2/catch.hpp>

#include <npybridge/core/detail/strided_copy.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace nd = npybridge::detail;

namespace {

/// A source view over a buffer: C-order base of `base_shape` (elements of
/// `itemsize` bytes), axes permuted by `perm`, each axis stepped by `step`
/// (negative: walked backwards from its end).
struct view {
    nd::copy_plan plan;     // shape and source byte strides; dst strides C-contiguous
    std::ptrdiff_t offset;  // byte offset of element (0, ..., 0) in the buffer
};

view make_view(const std::vector<std::size_t>& base_shape, const std::vector<std::size_t>& perm,
               const std::vector<int>& step, std::size_t itemsize) {
    const std::size_t n = base_shape.size();
    std::vector<std::ptrdiff_t> base_strides(n);
    std::ptrdiff_t stride = static_cast<std::ptrdiff_t>(itemsize);
    for (std::size_t k = n; k-- > 0;) {
        base_strides[k] = stride;
        stride *= static_cast<std::ptrdiff_t>(base_shape[k]);
    }
    view v{};
    v.plan.ndim = n;
    v.offset = 0;
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t axis = perm[k];
        const int s = step[axis];
        const std::size_t extent = base_shape[axis];
        const std::size_t count =
            extent == 0 ? 0
                        : (extent + static_cast<std::size_t>(std::abs(s)) - 1) / static_cast<std::size_t>(std::abs(s));
        v.plan.shape[k] = count;
        v.plan.src[k] = base_strides[axis] * s;
        if (s < 0 && extent > 0) v.offset += base_strides[axis] * static_cast<std::ptrdiff_t>(extent - 1);
    }
    std::ptrdiff_t dst = static_cast<std::ptrdiff_t>(itemsize);
    for (std::size_t k = n; k-- > 0;) {
        v.plan.dst[k] = dst;
        dst *= static_cast<std::ptrdiff_t>(std::max<std::size_t>(1, v.plan.shape[k]));
    }
    return v;
}

/// Element by element in index order, bytes reversed per `swap_unit`.
void reference_copy(const nd::copy_plan& plan, const unsigned char* src, unsigned char* dst, std::size_t itemsize,
                    std::size_t swap_unit) {
    const std::size_t n = plan.count();
    std::vector<std::size_t> index(plan.ndim, 0);
    for (std::size_t flat = 0; flat < n; ++flat) {
        std::ptrdiff_t so = 0, doff = 0;
        for (std::size_t k = 0; k < plan.ndim; ++k) {
            so += static_cast<std::ptrdiff_t>(index[k]) * plan.src[k];
            doff += static_cast<std::ptrdiff_t>(index[k]) * plan.dst[k];
        }
        for (std::size_t b = 0; b < itemsize; ++b) {
            const std::size_t from = swap_unit == 0 ? b : (b / swap_unit) * swap_unit + (swap_unit - 1 - b % swap_unit);
            dst[doff + static_cast<std::ptrdiff_t>(b)] = src[so + static_cast<std::ptrdiff_t>(from)];
        }
        for (std::size_t k = plan.ndim; k-- > 0;) {
            if (++index[k] < plan.shape[k]) break;
            index[k] = 0;
        }
    }
}

std::vector<std::vector<std::size_t>> permutations(std::size_t n) {
    std::vector<std::size_t> p(n);
    std::iota(p.begin(), p.end(), 0);
    std::vector<std::vector<std::size_t>> all;
    do all.push_back(p);
    while (std::next_permutation(p.begin(), p.end()));
    return all;
}

/// Shapes whose extents straddle the 2/4/8-element SIMD blocks and the
/// 8..128-element tiles (a tile edge off by one fails on one of them).
const std::vector<std::vector<std::size_t>> shapes = {
    {37, 67},   {129, 33},   {16, 17},    {3, 257},     {1, 45},
    {5, 33, 9}, {17, 1, 65}, {2, 3, 130}, {3, 5, 7, 9}, {2, 1, 17, 33},
};

struct element_case {
    std::size_t itemsize;
    std::size_t swap_unit;
};

}  // namespace

TEST_CASE("strided copies equal the per-element reference for every itemsize, permutation and stride sign",
          "[strided_copy]") {
    const element_case cases[] = {{1, 0},  {2, 0}, {4, 0}, {8, 0}, {16, 0}, {3, 0},
                                  {12, 0}, {2, 2}, {4, 4}, {8, 8}, {8, 4},  {16, 8}};
    std::mt19937 random(7);
    for (const element_case& e : cases) {
        for (const auto& base_shape : shapes) {
            std::size_t base_count = 1;
            for (std::size_t x : base_shape) base_count *= x;
            std::vector<unsigned char> source(base_count * e.itemsize);
            for (auto& b : source) b = static_cast<unsigned char>(random());
            for (const auto& perm : permutations(base_shape.size())) {
                for (int variant = 0; variant < 3; ++variant) {
                    // 0: plain; 1: every axis reversed; 2: first axis stepped by 2, last by -3.
                    std::vector<int> step(base_shape.size(), variant == 1 ? -1 : 1);
                    if (variant == 2) {
                        step.front() = 2;
                        step.back() = -3;
                    }
                    const view v = make_view(base_shape, perm, step, e.itemsize);
                    const std::size_t n = v.plan.count();
                    std::vector<unsigned char> expected(n * e.itemsize + 1, 0xAB), got(n * e.itemsize + 1, 0xAB);
                    reference_copy(v.plan, source.data() + v.offset, expected.data(), e.itemsize, e.swap_unit);
                    nd::copy_strided(v.plan, source.data() + v.offset, got.data(), e.itemsize, e.swap_unit);
                    CAPTURE(e.itemsize, e.swap_unit, base_shape, perm, variant);
                    REQUIRE(got == expected);  // includes the guard byte past the end
                }
            }
        }
    }
}

TEST_CASE("strided copies into a strided destination (copy_into a transposed tensor)", "[strided_copy]") {
    const std::vector<std::size_t> shape = {33, 19, 5};
    std::vector<float> source(33 * 19 * 5);
    std::iota(source.begin(), source.end(), 0.0f);
    for (const auto& src_perm : permutations(3)) {
        for (const auto& dst_perm : permutations(3)) {
            view s = make_view(shape, src_perm, {1, 1, 1}, 4);
            const view d = make_view(shape, dst_perm, {1, 1, 1}, 4);
            // Destination strides: dst_perm's view of a C-ordered buffer, with the view's shape as s's.
            bool same_shape = true;
            for (std::size_t k = 0; k < 3; ++k) same_shape &= s.plan.shape[k] == d.plan.shape[k];
            if (!same_shape) continue;
            for (std::size_t k = 0; k < 3; ++k) s.plan.dst[k] = d.plan.src[k];
            std::vector<float> expected(source.size(), -1.0f), got(source.size(), -1.0f);
            reference_copy(s.plan, reinterpret_cast<const unsigned char*>(source.data()),
                           reinterpret_cast<unsigned char*>(expected.data()), 4, 0);
            nd::copy_strided(s.plan, source.data(), got.data(), 4);
            CAPTURE(src_perm, dst_perm);
            REQUIRE(got == expected);
        }
    }
}

TEST_CASE("zero-size and size-1 dimensions copy nothing or one run", "[strided_copy]") {
    nd::copy_plan plan;
    plan.ndim = 3;
    plan.shape[0] = 4, plan.shape[1] = 0, plan.shape[2] = 3;
    plan.src[0] = 12, plan.src[1] = 4, plan.src[2] = -100;
    plan.dst[0] = 0, plan.dst[1] = 4, plan.dst[2] = 4;
    unsigned char untouched[4] = {1, 2, 3, 4};
    nd::copy_strided(plan, nullptr, untouched, 4);
    CHECK(untouched[0] == 1);

    plan.ndim = 0;  // a 0-d copy is one element
    const std::int32_t one = 42;
    std::int32_t out = 0;
    nd::copy_strided(plan, &one, &out, 4);
    CHECK(out == 42);
}

TEMPLATE_TEST_CASE("narrowing while gathering writes every value and finds the first that does not fit",
                   "[strided_copy]", std::int64_t, double) {
    using Source = TestType;
    using Target = std::conditional_t<std::is_integral_v<Source>, std::int32_t, float>;
    const bool swap = GENERATE(false, true);
    for (const auto& base_shape : shapes) {
        std::size_t base_count = 1;
        for (std::size_t x : base_shape) base_count *= x;
        std::vector<Source> values(base_count);
        for (std::size_t i = 0; i < base_count; ++i)
            values[i] = static_cast<Source>(static_cast<std::int64_t>(i * 7919 % 100003) - 50000);
        for (const auto& perm : permutations(base_shape.size())) {
            view v = make_view(base_shape, perm, std::vector<int>(base_shape.size(), 1), sizeof(Source));
            for (std::size_t k = 0; k < v.plan.ndim; ++k) v.plan.dst[k] = v.plan.dst[k] / 2;  // 4-byte destination
            std::vector<Source> stored = values;
            if (swap) {
                for (auto& x : stored) {
                    std::uint64_t w;
                    std::memcpy(&w, &x, 8);
                    w = __builtin_bswap64(w);
                    std::memcpy(&x, &w, 8);
                }
            }
            const std::size_t n = v.plan.count();
            std::vector<Target> got(n, Target(-7));
            CAPTURE(base_shape, perm, swap);
            REQUIRE(nd::narrow_strided<Source, Target>(v.plan, stored.data(), got.data(), swap));
            REQUIRE(nd::first_unfit_strided<Source, Target>(v.plan, stored.data(), swap) == n);
            // Against the reference: values[] at the view's index-order offsets.
            std::vector<std::size_t> index(v.plan.ndim, 0);
            for (std::size_t flat = 0; flat < n; ++flat) {
                std::ptrdiff_t offset = 0;
                for (std::size_t k = 0; k < v.plan.ndim; ++k)
                    offset += static_cast<std::ptrdiff_t>(index[k]) * v.plan.src[k];
                REQUIRE(got[flat] == static_cast<Target>(values[static_cast<std::size_t>(offset) / sizeof(Source)]));
                for (std::size_t k = v.plan.ndim; k-- > 0;) {
                    if (++index[k] < v.plan.shape[k]) break;
                    index[k] = 0;
                }
            }
            // One value that does not fit, at a spot near a tile edge: found, and named by its index-order position.
            const std::size_t bad_flat = n * 2 / 3;
            std::fill(index.begin(), index.end(), 0);
            std::ptrdiff_t bad_offset = 0;
            {
                std::size_t rest = bad_flat;
                for (std::size_t k = v.plan.ndim; k-- > 0;) {
                    index[k] = rest % v.plan.shape[k];
                    rest /= v.plan.shape[k];
                    bad_offset += static_cast<std::ptrdiff_t>(index[k]) * v.plan.src[k];
                }
            }
            Source huge = std::is_integral_v<Source> ? Source(std::int64_t{1} << 40) : Source(1e39);
            if (swap) {
                std::uint64_t w;
                std::memcpy(&w, &huge, 8);
                w = __builtin_bswap64(w);
                std::memcpy(&huge, &w, 8);
            }
            stored[static_cast<std::size_t>(bad_offset) / sizeof(Source)] = huge;
            CHECK_FALSE(nd::narrow_strided<Source, Target>(v.plan, stored.data(), got.data(), swap));
            CHECK(nd::first_unfit_strided<Source, Target>(v.plan, stored.data(), swap) == bad_flat);
        }
    }
}

TEST_CASE("complex128 pairs narrow part by part in any layout, and say when a part does not fit", "[strided_copy]") {
    const bool swap = GENERATE(false, true);
    for (const auto& base_shape : shapes) {
        std::size_t base_count = 1;
        for (std::size_t x : base_shape) base_count *= x;
        std::vector<double> values(2 * base_count);  // real, imaginary, real, ...
        for (std::size_t i = 0; i < values.size(); ++i) values[i] = (static_cast<double>(i * 7919 % 100003) - 5e4) / 3;
        for (const auto& perm : permutations(base_shape.size())) {
            view v = make_view(base_shape, perm, std::vector<int>(base_shape.size(), 1), 16);
            for (std::size_t k = 0; k < v.plan.ndim; ++k) v.plan.dst[k] = v.plan.dst[k] / 2;  // 8-byte destination
            std::vector<double> stored = values;
            const auto swapped = [](double x) {
                std::uint64_t w;
                std::memcpy(&w, &x, 8);
                w = __builtin_bswap64(w);
                std::memcpy(&x, &w, 8);
                return x;
            };
            if (swap) std::transform(stored.begin(), stored.end(), stored.begin(), swapped);
            const std::size_t n = v.plan.count();
            std::vector<float> got(2 * n, -7.0f);
            CAPTURE(base_shape, perm, swap);
            REQUIRE(nd::narrow_pairs_strided(v.plan, stored.data(), got.data(), swap));
            std::vector<std::size_t> index(v.plan.ndim, 0);
            for (std::size_t flat = 0; flat < n; ++flat) {
                std::ptrdiff_t offset = 0;
                for (std::size_t k = 0; k < v.plan.ndim; ++k)
                    offset += static_cast<std::ptrdiff_t>(index[k]) * v.plan.src[k];
                const std::size_t at = static_cast<std::size_t>(offset) / 8;
                REQUIRE(got[2 * flat] == static_cast<float>(values[at]));
                REQUIRE(got[2 * flat + 1] == static_cast<float>(values[at + 1]));
                for (std::size_t k = v.plan.ndim; k-- > 0;) {
                    if (++index[k] < v.plan.shape[k]) break;
                    index[k] = 0;
                }
            }
            stored[2 * (n / 2) + 1] = swap ? swapped(1e39) : 1e39;  // an imaginary part past float's range
            CHECK_FALSE(nd::narrow_pairs_strided(v.plan, stored.data(), got.data(), swap));
        }
    }
}
