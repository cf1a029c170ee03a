// npybridge/core/detail/source_view.hpp — the values a fill reads, described once and without Python.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/strided_copy.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// numpy's builtin number types; bfloat16 not yet widened.
enum class source_type : std::uint8_t {
    boolean,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    float16,
    float32,
    float64,
    long_double,
    complex64,
    complex128,
    complex_long,
    bfloat16,
    other,
};
inline constexpr std::size_t source_type_count = static_cast<std::size_t>(source_type::other) + 1;

constexpr source_type source_type_of(char kind, std::size_t itemsize) noexcept {
    const auto by_size = [itemsize](source_type s1, source_type s2, source_type s4, source_type s8) {
        return itemsize == 1 ? s1 : itemsize == 2 ? s2 : itemsize == 4 ? s4 : itemsize == 8 ? s8 : source_type::other;
    };
    switch (kind) {
        case 'b': return itemsize == 1 ? source_type::boolean : source_type::other;
        case 'i': return by_size(source_type::int8, source_type::int16, source_type::int32, source_type::int64);
        case 'u': return by_size(source_type::uint8, source_type::uint16, source_type::uint32, source_type::uint64);
        case 'f':
            return itemsize > 8
                       ? source_type::long_double
                       : by_size(source_type::other, source_type::float16, source_type::float32, source_type::float64);
        case 'c':
            return itemsize == 8    ? source_type::complex64
                   : itemsize == 16 ? source_type::complex128
                   : itemsize > 16  ? source_type::complex_long
                                    : source_type::other;
        default: return source_type::other;
    }
}

/// The layouts the kernels tell apart.
enum class source_layout : std::uint8_t {
    contiguous,
    rows,                 ///< a long last dimension stepping least, at most 32 bytes
    narrowing_transpose,  ///< 2-D, 64+ by 64+, columns of one run, into narrower storage
    transposed,           ///< 2-D, 64+ rows of 1024+ values, rows stepping least
    slab,
    undescribed,  ///< more dimensions than a copy plan holds
};
inline constexpr std::size_t source_layout_count = static_cast<std::size_t>(source_layout::undescribed) + 1;

/// An array's values as the kernels read them (byte strides).
struct source_view {
    const void* data = nullptr;
    source_type type = source_type::other;
    source_type shown = source_type::other;  ///< the caller's type, for messages
    char kind = 0;
    std::size_t itemsize = 0;
    std::size_t ndim = 0;
    std::size_t shape[copy_max_ndim] = {};
    std::ptrdiff_t strides[copy_max_ndim] = {};
    std::size_t count = 0;
    bool native = true;
    bool aligned = true;

    bool described() const noexcept { return ndim <= copy_max_ndim; }

    bool c_contiguous() const noexcept {
        if (!described()) return false;
        auto step = static_cast<std::ptrdiff_t>(itemsize);
        for (std::size_t i = ndim; i-- > 0;) {
            if (shape[i] == 0) return true;
            if (shape[i] != 1 && strides[i] != step) return false;
            step *= static_cast<std::ptrdiff_t>(shape[i]);
        }
        return true;
    }

    /// A copy plan into C order, `out_size`-byte elements.
    copy_plan c_order_plan(std::size_t out_size) const noexcept {
        copy_plan plan;
        plan.ndim = ndim;
        auto step = static_cast<std::ptrdiff_t>(out_size);
        for (std::size_t i = ndim; i-- > 0;) {
            plan.shape[i] = shape[i];
            plan.src[i] = strides[i];
            plan.dst[i] = step;
            step *= static_cast<std::ptrdiff_t>(shape[i] == 0 ? 1 : shape[i]);
        }
        return plan;
    }
};

/// Whether rows are read straight (source_layout::rows).
constexpr bool short_step_rows(const source_view& view) noexcept {
    if (view.ndim == 0 || view.shape[view.ndim - 1] < 64) return false;
    const std::ptrdiff_t step = std::abs(view.strides[view.ndim - 1]);
    for (std::size_t k = 0; k + 1 < view.ndim; ++k) {
        const std::ptrdiff_t outer = std::abs(view.strides[k]);
        if (view.shape[k] > 1 && outer != 0 && outer < step) return false;
    }
    return step != 0 && step <= 32;
}

/// The layout class of `view` read into `target_size`-byte storage.
template <class = void>
source_layout classify(const source_view& view, std::size_t target_size) noexcept {
    if (!view.described()) return source_layout::undescribed;
    if (view.c_contiguous()) return source_layout::contiguous;
    if (short_step_rows(view)) return source_layout::rows;
    if (view.ndim == 2 && view.shape[0] >= 64 && view.shape[1] >= 64 &&
        view.strides[0] == static_cast<std::ptrdiff_t>(view.itemsize) && target_size < view.itemsize &&
        std::abs(view.strides[1]) > view.strides[0]) {
        return source_layout::narrowing_transpose;
    }
    if (view.ndim == 2 && view.shape[0] >= 64 && view.shape[1] >= 1024 &&
        std::abs(view.strides[0]) < std::abs(view.strides[1])) {
        return source_layout::transposed;
    }
    return source_layout::slab;
}

}  // namespace detail
}  // namespace npybridge
