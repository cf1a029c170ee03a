// npybridge/core/detail/kernel_table.hpp — which code fills a tensor: one table, first row that fits.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/plan.hpp>
#include <npybridge/core/detail/source_view.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// The code that fills a tensor (docs/performance.md's kernel table).
enum class kernel_id : std::uint8_t {
    nothing,
    refuse,
    pack_bytes,
    narrow_wide,
    widen_first,
    widen_bfloat16,
    copy_tiled,
    exact_to_float32,
    floats_to_16_bit,
    half_to_float32,
    complex_narrow,
    checked_contiguous,
    checked_rows,
    checked_narrowing_transpose,
    checked_transposed,
    checked_slab,
    integers_to_16_bit,
    round_to_bfloat16,
    numpy_cast,
};
inline constexpr std::size_t kernel_count = static_cast<std::size_t>(kernel_id::numpy_cast) + 1;

/// The targets the kernels tell apart.
enum class target_class : std::uint8_t {
    float32,
    float16,
    bfloat16,
    complex64,
    storage,  ///< unpacked integer, bool or quantized, at most 4 bytes
    other,
};
inline constexpr std::size_t target_class_count = static_cast<std::size_t>(target_class::other) + 1;

constexpr target_class target_class_of(const dtype_info& type) noexcept {
    switch (type.id) {
        case dtype_enum::Float32: return target_class::float32;
        case dtype_enum::Float16: return target_class::float16;
        case dtype_enum::BFloat16: return target_class::bfloat16;
        case dtype_enum::Complex64: return target_class::complex64;
        default: break;
    }
    const bool number_storage = type.category == dtype_category::integer || type.category == dtype_category::boolean ||
                                type.category == dtype_category::quantized;
    return number_storage && !type.is_packed && type.element_size <= 4 ? target_class::storage : target_class::other;
}

/// What the table is asked: the plan, the source and the memory written.
struct kernel_facts {
    fill_route route = fill_route::refuse;
    value_check check = value_check::none;
    source_type source = source_type::other;
    source_layout layout = source_layout::undescribed;
    target_class target = target_class::other;
    bool native_aligned = false;
    bool same_size = false;  ///< item size equals element size
    bool fresh = true;       ///< new memory: a kernel may stop halfway
    bool apart = true;       ///< the source does not meet the memory written
};

/// A kernel, the facts it takes (a bit per enumerator) and the flags it requires.
struct kernel_row {
    kernel_id kernel;
    std::uint32_t routes, checks, sources, targets, layouts;
    bool native_aligned, same_size, fresh, apart;
};

template <class E>
constexpr std::uint32_t set_of(std::initializer_list<E> members) noexcept {
    std::uint32_t bits = 0;
    for (const E e : members) bits |= std::uint32_t{1} << static_cast<unsigned>(e);
    return bits;
}
inline constexpr std::uint32_t any_of = ~std::uint32_t{0};

namespace kernel_sets {
using st = source_type;
using sl = source_layout;
inline constexpr std::uint32_t integers =
    set_of({st::int8, st::int16, st::int32, st::int64, st::uint8, st::uint16, st::uint32, st::uint64});
inline constexpr std::uint32_t numbers =
    integers | set_of({st::boolean, st::float16, st::float32, st::float64, st::long_double, st::complex64,
                       st::complex128, st::complex_long});
inline constexpr std::uint32_t described = any_of & ~set_of({sl::undescribed});
inline constexpr std::uint32_t contiguous = set_of({sl::contiguous});
inline constexpr std::uint32_t convert = set_of({fill_route::convert});
inline constexpr std::uint32_t checked_storage = set_of({value_check::range, value_check::whole});
inline constexpr std::uint32_t no_check_or_overflow = set_of({value_check::none, value_check::overflow});
inline constexpr std::uint32_t checked_sources = integers | set_of({st::float32, st::float64});
}  // namespace kernel_sets

/// In order: the first row that takes the facts names the kernel; the last takes all.
inline constexpr auto kernel_rows = [] {
    using namespace kernel_sets;
    using tc = target_class;
    using vc = value_check;
    using k = kernel_id;
    const auto checked = [](k kernel, sl layout) {
        return kernel_row{
            kernel, convert, checked_storage, checked_sources, set_of({tc::storage}), set_of({layout}), true, false,
            true,   false};
    };
    return std::array<kernel_row, 21>{{
        {k::nothing, set_of({fill_route::nothing}), any_of, any_of, any_of, any_of, false, false, false, false},
        {k::refuse, set_of({fill_route::refuse}), any_of, any_of, any_of, any_of, false, false, false, false},
        {k::pack_bytes, set_of({fill_route::pack}), any_of, any_of, any_of, any_of, false, false, false, false},
        {k::narrow_wide, set_of({fill_route::narrow}), any_of, any_of, any_of, any_of, false, false, false, false},
        {k::widen_bfloat16, set_of({fill_route::same}), set_of({vc::none}), set_of({st::bfloat16}),
         set_of({tc::float32}), contiguous, true, false, true, false},
        {k::widen_first, any_of, any_of, set_of({st::bfloat16}), any_of, any_of, false, false, false, false},
        {k::copy_tiled, set_of({fill_route::same}), any_of, any_of, any_of, described, false, true, false, true},
        {k::exact_to_float32, convert, set_of({vc::exact}), set_of({st::int32, st::int64, st::uint32, st::uint64}),
         set_of({tc::float32}), contiguous, true, false, true, false},
        {k::floats_to_16_bit, convert, no_check_or_overflow, set_of({st::float32, st::float64}),
         set_of({tc::bfloat16, tc::float16}), contiguous, true, false, true, false},
        {k::half_to_float32, convert, set_of({vc::none}), set_of({st::float16}), set_of({tc::float32}), contiguous,
         true, false, true, false},
        {k::complex_narrow, convert, no_check_or_overflow, set_of({st::complex128}), set_of({tc::complex64}), described,
         false, false, true, false},
        checked(k::checked_contiguous, sl::contiguous),
        checked(k::checked_rows, sl::rows),
        checked(k::checked_narrowing_transpose, sl::narrowing_transpose),
        checked(k::checked_transposed, sl::transposed),
        checked(k::checked_slab, sl::slab),
        {k::integers_to_16_bit, convert, set_of({vc::exact}), integers, set_of({tc::float16, tc::bfloat16}), contiguous,
         true, false, true, false},
        {k::integers_to_16_bit, convert, set_of({vc::none}), set_of({st::int8, st::int16, st::uint8, st::uint16}),
         set_of({tc::float16}), contiguous, true, false, false, false},
        {k::integers_to_16_bit, convert, set_of({vc::none}), integers, set_of({tc::bfloat16}), contiguous, true, false,
         false, false},
        {k::round_to_bfloat16, convert, any_of, numbers, set_of({tc::bfloat16}), any_of, false, false, false, false},
        {k::numpy_cast, any_of, any_of, any_of, any_of, any_of, false, false, false, false},
    }};
}();

/// Whether `row` takes `facts`.
constexpr bool row_takes(const kernel_row& row, const kernel_facts& facts) noexcept {
    const auto in = [](std::uint32_t set, auto e) { return (set >> static_cast<unsigned>(e) & 1u) != 0; };
    return in(row.routes, facts.route) && in(row.checks, facts.check) && in(row.sources, facts.source) &&
           in(row.targets, facts.target) && in(row.layouts, facts.layout) &&
           (!row.native_aligned || facts.native_aligned) && (!row.same_size || facts.same_size) &&
           (!row.fresh || facts.fresh) && (!row.apart || facts.apart);
}

/// The kernel that fills memory as `facts` say: the first row that takes them.
constexpr kernel_id plan_kernel(const kernel_facts& facts) noexcept {
    for (const kernel_row& row : kernel_rows) {
        if (row_takes(row, facts)) return row.kernel;
    }
    return kernel_id::numpy_cast;
}

/// Whether a kernel reads memory without Python.
constexpr bool reads_without_python(kernel_id kernel) noexcept {
    return kernel >= kernel_id::widen_bfloat16 && kernel <= kernel_id::integers_to_16_bit;
}

/// Whether the plan's check runs before the kernel (the others test as they store).
constexpr bool checks_first(kernel_id kernel) noexcept {
    return kernel == kernel_id::copy_tiled || kernel == kernel_id::round_to_bfloat16 || kernel == kernel_id::numpy_cast;
}

constexpr std::string_view kernel_name(kernel_id kernel) noexcept {
    constexpr std::string_view names[kernel_count] = {
        "nothing",
        "refuse",
        "pack_bytes",
        "narrow_wide",
        "widen_first",
        "widen_bfloat16",
        "copy_tiled",
        "exact_to_float32",
        "floats_to_16_bit",
        "half_to_float32",
        "complex_narrow",
        "checked_contiguous",
        "checked_rows",
        "checked_narrowing_transpose",
        "checked_transposed",
        "checked_slab",
        "integers_to_16_bit",
        "round_to_bfloat16",
        "numpy_cast",
    };
    return names[static_cast<std::size_t>(kernel)];
}

}  // namespace detail
}  // namespace npybridge
