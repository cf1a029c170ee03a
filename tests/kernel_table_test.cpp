// The kernel table (core/detail/kernel_table.hpp), without Python: every combination of facts gets one kernel, each
// kernel only facts it can serve, the layout classes of source_view.hpp, and the rows docs/performance.md names.
#include <catch2/catch.hpp>

#include <npybridge/core/detail/fill_kernels.hpp>
#include <npybridge/core/detail/kernel_table.hpp>

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace npb = npybridge;
using npb::detail::fill_route;
using npb::detail::kernel_facts;
using npb::detail::kernel_id;
using npb::detail::source_layout;
using npb::detail::source_type;
using npb::detail::source_view;
using npb::detail::target_class;
using npb::detail::value_check;

namespace {

/// Calls `visit(facts)` for every combination of every fact.
template <class Visit>
void every_facts(Visit visit) {
    for (unsigned route = 0; route <= static_cast<unsigned>(fill_route::refuse); ++route)
        for (unsigned check = 0; check <= static_cast<unsigned>(value_check::whole); ++check)
            for (std::size_t source = 0; source < npb::detail::source_type_count; ++source)
                for (std::size_t layout = 0; layout < npb::detail::source_layout_count; ++layout)
                    for (std::size_t target = 0; target < npb::detail::target_class_count; ++target)
                        for (unsigned flags = 0; flags < 16; ++flags) {
                            kernel_facts facts;
                            facts.route = static_cast<fill_route>(route);
                            facts.check = static_cast<value_check>(check);
                            facts.source = static_cast<source_type>(source);
                            facts.layout = static_cast<source_layout>(layout);
                            facts.target = static_cast<target_class>(target);
                            facts.native_aligned = flags & 1;
                            facts.same_size = flags & 2;
                            facts.fresh = flags & 4;
                            facts.apart = flags & 8;
                            visit(facts);
                        }
}

bool is_one_of(kernel_id kernel, std::initializer_list<kernel_id> kernels) {
    for (kernel_id k : kernels)
        if (k == kernel) return true;
    return false;
}

bool is_checked_store(kernel_id kernel) {
    return kernel >= kernel_id::checked_contiguous && kernel <= kernel_id::checked_slab;
}

/// The kernels that test values while they store them (the others check first, or hold every value).
bool tests_as_it_stores(kernel_id kernel) {
    return is_checked_store(kernel) || is_one_of(kernel, {kernel_id::exact_to_float32, kernel_id::floats_to_16_bit,
                                                          kernel_id::complex_narrow, kernel_id::integers_to_16_bit});
}

source_view view_of(source_type type, std::size_t itemsize, std::vector<std::size_t> shape,
                    std::vector<std::ptrdiff_t> strides) {
    source_view view;
    view.type = type;
    view.itemsize = itemsize;
    view.ndim = shape.size();
    view.count = 1;
    for (std::size_t i = 0; i < shape.size() && i < npb::detail::copy_max_ndim; ++i) {
        view.shape[i] = shape[i];
        view.strides[i] = strides[i];
        view.count *= shape[i];
    }
    return view;
}

kernel_facts checked_fresh(source_type source, source_layout layout, target_class target, value_check check) {
    kernel_facts facts;
    facts.route = fill_route::convert;
    facts.check = check;
    facts.source = source;
    facts.layout = layout;
    facts.target = target;
    facts.native_aligned = true;
    return facts;
}

}  // namespace

TEST_CASE("every combination of facts gets the first row that takes it, and the last row takes all", "[kernel]") {
    std::size_t combinations = 0;
    every_facts([&](const kernel_facts& facts) {
        ++combinations;
        const kernel_id chosen = npb::detail::plan_kernel(facts);
        std::size_t first = 0;
        while (!npb::detail::row_takes(npb::detail::kernel_rows[first], facts)) ++first;
        REQUIRE(npb::detail::kernel_rows[first].kernel == chosen);
    });
    REQUIRE(combinations == 6 * 5 * npb::detail::source_type_count * npb::detail::source_layout_count *
                                npb::detail::target_class_count * 16);
    const npb::detail::kernel_row& last = npb::detail::kernel_rows.back();
    REQUIRE(last.kernel == kernel_id::numpy_cast);
    REQUIRE((last.routes & last.checks & last.sources & last.targets & last.layouts) == ~std::uint32_t{0});
    REQUIRE(!(last.native_aligned || last.same_size || last.fresh || last.apart));
}

TEST_CASE("each kernel is chosen only for facts it can serve", "[kernel]") {
    every_facts([&](const kernel_facts& facts) {
        const kernel_id kernel = npb::detail::plan_kernel(facts);
        INFO("kernel " << npb::detail::kernel_name(kernel) << ", route " << static_cast<int>(facts.route) << ", check "
                       << static_cast<int>(facts.check) << ", source " << static_cast<int>(facts.source) << ", layout "
                       << static_cast<int>(facts.layout) << ", target " << static_cast<int>(facts.target));
        // The routes that are not conversions have a kernel each.
        if (facts.route == fill_route::nothing) REQUIRE(kernel == kernel_id::nothing);
        if (facts.route == fill_route::refuse) REQUIRE(kernel == kernel_id::refuse);
        if (facts.route == fill_route::pack) REQUIRE(kernel == kernel_id::pack_bytes);
        if (facts.route == fill_route::narrow) REQUIRE(kernel == kernel_id::narrow_wide);
        const bool native = npb::detail::reads_without_python(kernel);
        // A kernel reading without Python reads memory it can describe; one reading values (all but the copier of
        // bytes) never long double or a type only numpy knows.
        if (native) REQUIRE(facts.layout != source_layout::undescribed);
        if (native && kernel != kernel_id::copy_tiled) {
            REQUIRE(facts.source != source_type::long_double);
            REQUIRE(facts.source != source_type::complex_long);
            REQUIRE(facts.source != source_type::other);
        }
        // Loads of whole elements need native, aligned elements (the complex kernel and the copier load bytes).
        if (native && !is_one_of(kernel, {kernel_id::complex_narrow, kernel_id::copy_tiled}))
            REQUIRE(facts.native_aligned);
        // A kernel that can stop halfway writes only fresh memory; into existing memory the check comes first.
        if (tests_as_it_stores(kernel) && facts.check != value_check::none) REQUIRE(facts.fresh);
        // A value check is never dropped: it is made first, while storing, or by the route's own kernel.
        if (facts.check != value_check::none && facts.route != fill_route::nothing &&
            facts.route != fill_route::refuse) {
            REQUIRE((npb::detail::checks_first(kernel) || tests_as_it_stores(kernel) ||
                     is_one_of(kernel, {kernel_id::pack_bytes, kernel_id::narrow_wide, kernel_id::widen_first})));
        }
        // bfloat16 is widened first unless the table widens it straight into Float32.
        if (facts.source == source_type::bfloat16 && facts.route != fill_route::nothing &&
            facts.route != fill_route::refuse && facts.route != fill_route::pack && facts.route != fill_route::narrow)
            REQUIRE(is_one_of(kernel, {kernel_id::widen_bfloat16, kernel_id::widen_first}));
        // The copier copies whole elements of one size into memory the source does not meet.
        if (kernel == kernel_id::copy_tiled) REQUIRE((facts.same_size && facts.apart));
        // The checked stores: integer storage, integer or float32 / float64 sources, one kernel per layout class.
        if (is_checked_store(kernel)) {
            REQUIRE(facts.target == target_class::storage);
            REQUIRE((facts.check == value_check::range || facts.check == value_check::whole));
            const auto layout = static_cast<std::size_t>(facts.layout);
            REQUIRE(static_cast<std::size_t>(kernel) - static_cast<std::size_t>(kernel_id::checked_contiguous) ==
                    layout);
        }
    });
}

TEST_CASE("the layout classes of a source", "[kernel]") {
    using npb::detail::classify;
    const auto f64 = source_type::float64;
    // C order, and C order with size-1 dimensions stepping anywhere.
    CHECK(classify(view_of(f64, 8, {4, 5}, {40, 8}), 1) == source_layout::contiguous);
    CHECK(classify(view_of(f64, 8, {4, 1, 5}, {40, 999, 8}), 1) == source_layout::contiguous);
    CHECK(classify(view_of(f64, 8, {}, {}), 1) == source_layout::contiguous);
    // Every other value of long rows: short steps.
    CHECK(classify(view_of(f64, 8, {10, 64}, {2048, 16}), 1) == source_layout::rows);
    CHECK(classify(view_of(f64, 8, {10, 63}, {2048, 16}), 1) == source_layout::slab);  // rows too short
    // float64 (1000, 7000).T: columns of one run each, into narrower storage; into float64's width, by blocks.
    CHECK(classify(view_of(f64, 8, {7000, 1000}, {8, 56000}), 1) == source_layout::narrowing_transpose);
    CHECK(classify(view_of(f64, 8, {7000, 1000}, {8, 56000}), 8) == source_layout::slab);  // rows under 1024
    CHECK(classify(view_of(f64, 8, {1000, 7000}, {8, 8000}), 8) == source_layout::transposed);
    CHECK(classify(view_of(f64, 8, {63, 7000}, {8, 504}), 1) == source_layout::slab);  // too few rows
    // More dimensions than a copy plan holds.
    source_view deep = view_of(f64, 8, {1}, {8});
    deep.ndim = npb::detail::copy_max_ndim + 1;
    CHECK(classify(deep, 1) == source_layout::undescribed);
}

TEST_CASE("the kernels the docs name for their rows", "[kernel]") {
    using npb::detail::plan_kernel;
    const auto storage = target_class::storage;
    // float64 (1000, 7000).T -> Int8, checked, into a new tensor: each column narrowed, then transposed.
    CHECK(plan_kernel(checked_fresh(source_type::float64, source_layout::narrowing_transpose, storage,
                                    value_check::whole)) == kernel_id::checked_narrowing_transpose);
    // The same into an existing tensor: the check first, then numpy's cast.
    kernel_facts existing =
        checked_fresh(source_type::float64, source_layout::narrowing_transpose, storage, value_check::whole);
    existing.fresh = false;
    CHECK(plan_kernel(existing) == kernel_id::numpy_cast);
    // int32 -> Float32 exact; int64 -> Float16 exact; float32 -> BFloat16; complex128 -> Complex64 of any strides.
    CHECK(plan_kernel(checked_fresh(source_type::int32, source_layout::contiguous, target_class::float32,
                                    value_check::exact)) == kernel_id::exact_to_float32);
    CHECK(plan_kernel(checked_fresh(source_type::int64, source_layout::contiguous, target_class::float16,
                                    value_check::exact)) == kernel_id::integers_to_16_bit);
    CHECK(plan_kernel(checked_fresh(source_type::float32, source_layout::contiguous, target_class::bfloat16,
                                    value_check::none)) == kernel_id::floats_to_16_bit);
    kernel_facts swapped =
        checked_fresh(source_type::complex128, source_layout::slab, target_class::complex64, value_check::overflow);
    swapped.native_aligned = false;
    CHECK(plan_kernel(swapped) == kernel_id::complex_narrow);
    // A long double source into BFloat16 is rounded once by npybridge, never by numpy's double rounding.
    CHECK(plan_kernel(checked_fresh(source_type::long_double, source_layout::contiguous, target_class::bfloat16,
                                    value_check::overflow)) == kernel_id::round_to_bfloat16);
    // Unchecked int32 -> Float16 is numpy's (it rounds 32-bit integers through float64).
    CHECK(plan_kernel(checked_fresh(source_type::int32, source_layout::contiguous, target_class::float16,
                                    value_check::none)) == kernel_id::numpy_cast);
}

TEST_CASE("an unfit value is named from one reading, and a copy that holds none is stored", "[kernel]") {
    // A transposed float64 view with one value that is not whole, checked into Int8 storage.
    std::vector<double> values(64 * 80, 3.0);
    values[17 * 64 + 5] = 2.5;  // source row 17, column 5 of the (64, 80) array: element (5, 17) of its .T
    source_view view = view_of(source_type::float64, 8, {64, 80}, {8, 64 * 8});
    view.kind = 'f';
    view.data = values.data();
    std::vector<std::int8_t> out(64 * 80);
    const npb::tensor_layout layout = npb::tensor_layout::contiguous(view.shape, 2);
    npb::detail::kernel_target target{
        out.data(), npb::dtype_enum::Int8, 1,
        layout,     value_check::whole,    *npb::detail::storage_bounds(npb::info(npb::dtype_enum::Int8))};
    const kernel_id kernel = npb::detail::plan_kernel(
        checked_fresh(source_type::float64, npb::detail::classify(view, 1), target_class::storage, value_check::whole));
    REQUIRE(kernel == kernel_id::checked_narrowing_transpose);
    REQUIRE(npb::detail::run_kernel(kernel, view, target) != view.count);
    const auto unfit = npb::detail::first_unfit_read_once(kernel, view, target);
    REQUIRE(unfit);
    CHECK(unfit->index == 5 * 80 + 17);
    CHECK(unfit->text == "2.5");
    // The value gone by the time it is read again (another thread): the copy holds none, so the kernel stores it.
    values[17 * 64 + 5] = 4.0;
    CHECK(!npb::detail::first_unfit_read_once(kernel, view, target));
    CHECK(out[5 * 80 + 17] == 4);
    CHECK(out[0] == 3);
}
