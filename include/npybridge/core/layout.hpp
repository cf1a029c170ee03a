// npybridge/core/layout.hpp — a tensor's shape and element strides, as every adapter describes them.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/lowbit.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Numbers as Python writes a tuple: "()", "(3,)", "(2, 3)".
template <class Number>
std::string tuple_text(const Number* values, std::size_t count);

/// Shape and element strides, up to NPYBRIDGE_MAX_NDIM dimensions.
struct tensor_layout {
    std::size_t ndim = 0;
    // Only the first ndim entries mean anything; uninitialized on purpose (zeroing showed in profiles).
    std::array<std::size_t, NPYBRIDGE_MAX_NDIM> shape;
    std::array<std::ptrdiff_t, NPYBRIDGE_MAX_NDIM> strides;  ///< in elements

    tensor_layout() noexcept = default;
    // Copies move the first ndim entries one by one: wide copies of freshly stored entries stall store-to-load
    // forwarding.
    tensor_layout(const tensor_layout& other) noexcept { *this = other; }
    tensor_layout& operator=(const tensor_layout& other) noexcept;

    std::size_t count() const noexcept;
    std::size_t innermost() const noexcept { return ndim == 0 ? 1 : shape[ndim - 1]; }

    /// C-contiguous, ignoring size-1 dimensions' strides; no elements is contiguous.
    bool is_contiguous() const noexcept;

    /// Most elements a layout may span: at 16 bytes each they fit a ptrdiff_t, so no derived size overflows.
    static constexpr std::size_t max_count = static_cast<std::size_t>(PTRDIFF_MAX) / 16;

    /// The element count of `shape` (zero extents as 1); conversion_error past max_count.
    static std::size_t checked_count(const std::size_t* shape, std::size_t ndim);

    /// A C-contiguous layout of this shape.
    static tensor_layout contiguous(const std::size_t* shape, std::size_t ndim);

    std::string shape_text() const { return tuple_text(shape.data(), ndim); }

    /// The elements a layout reaches from element 0: `low` (below 0 with negative strides) to `high`, one past; for
    /// tensor types with a storage offset (MegBrain's).
    struct element_span {
        std::ptrdiff_t low = 0;
        std::ptrdiff_t high = 0;
    };
    element_span span() const noexcept;

    /// A packed tensor's layout with rows on whole bytes (row_aligned) and MegBrain's padded strides: a (2, 3)
    /// QuantizedS4 has (4, 1).
    static tensor_layout row_aligned(dtype_enum id, const std::size_t* shape, std::size_t ndim) {
        return row_aligned(info(id).bits, shape, ndim);
    }
    /// The same for `bits`-bit elements.
    static tensor_layout row_aligned(unsigned bits, const std::size_t* shape, std::size_t ndim);

    /// Whether a packed tensor's elements fill its bytes in order (C-contiguous, or row-aligned at padded strides).
    bool is_dense_packed(dtype_enum id, lowbit_layout packing) const;
};

/// Example: a transposed (2, 3) layout is not C-contiguous.
/// ```cpp
/// #include <npybridge/core/layout.hpp>
///
/// bool transpose_is_contiguous() {
///     const std::size_t shape[] = {3, 2};
///     npybridge::tensor_layout t = npybridge::tensor_layout::contiguous(shape, 2);
///     t.strides = {1, 3};
///     return t.is_contiguous();  // false
/// }
/// ```

// ---- Definitions

template <class Number>
std::string tuple_text(const Number* values, std::size_t count) {
    std::string text = "(";
    for (std::size_t i = 0; i < count; ++i) text += (i ? ", " : "") + std::to_string(values[i]);
    return text + (count == 1 ? ",)" : ")");
}

inline tensor_layout& tensor_layout::operator=(const tensor_layout& other) noexcept {
    ndim = other.ndim;
    for (std::size_t i = 0; i < other.ndim; ++i) {
        shape[i] = other.shape[i];
        strides[i] = other.strides[i];
#if defined(__GNUC__)
        __asm__("" : "+r"(i));  // not two memcpy calls
#endif
    }
    return *this;
}

inline std::size_t tensor_layout::count() const noexcept {
    std::size_t n = 1;
    for (std::size_t i = 0; i < ndim; ++i) n *= shape[i];
    return n;
}

inline bool tensor_layout::is_contiguous() const noexcept {
    std::ptrdiff_t expected = 1;
    for (std::size_t i = ndim; i-- > 0;) {
        if (shape[i] == 1) continue;
        if (strides[i] != expected) return count() == 0;
        expected *= static_cast<std::ptrdiff_t>(shape[i]);
    }
    return true;
}

inline std::size_t tensor_layout::checked_count(const std::size_t* shape, std::size_t ndim) {
    std::size_t span = 1, count = 1;
    for (std::size_t i = 0; i < ndim; ++i) {
        const std::size_t extent = shape[i] == 0 ? 1 : shape[i];
        if (span > max_count / extent) {
            throw conversion_error("tensor_layout: shape " + tuple_text(shape, ndim) +
                                   " spans more elements than memory can hold (at most " + std::to_string(max_count) +
                                   ")");
        }
        span *= extent;
        count *= shape[i];
    }
    return count;
}

inline tensor_layout tensor_layout::contiguous(const std::size_t* shape, std::size_t ndim) {
    if (ndim > NPYBRIDGE_MAX_NDIM) {
        throw conversion_error("tensor_layout: " + std::to_string(ndim) + " dimensions, at most " +
                               std::to_string(NPYBRIDGE_MAX_NDIM) + " (NPYBRIDGE_MAX_NDIM)");
    }
    checked_count(shape, ndim);
    tensor_layout layout;
    layout.ndim = ndim;
    std::ptrdiff_t stride = 1;
    for (std::size_t i = ndim; i-- > 0;) {
        layout.shape[i] = shape[i];
        layout.strides[i] = stride;
        stride *= static_cast<std::ptrdiff_t>(shape[i] == 0 ? 1 : shape[i]);
    }
    return layout;
}

inline tensor_layout::element_span tensor_layout::span() const noexcept {
    if (count() == 0) return {0, 0};
    element_span reach{0, 1};
    for (std::size_t i = 0; i < ndim; ++i) {
        const std::ptrdiff_t last = static_cast<std::ptrdiff_t>(shape[i] - 1) * strides[i];
        (last < 0 ? reach.low : reach.high) += last;
    }
    return reach;
}

inline tensor_layout tensor_layout::row_aligned(unsigned bits, const std::size_t* shape, std::size_t ndim) {
    tensor_layout layout = contiguous(shape, ndim);
    if (ndim == 0) return layout;
    const std::size_t per_byte = 8 / bits;
    const std::size_t padded = (shape[ndim - 1] + per_byte - 1) / per_byte * per_byte;
    auto stride = static_cast<std::ptrdiff_t>(padded == 0 ? 1 : padded);
    for (std::size_t i = ndim - 1; i-- > 0;) {
        layout.strides[i] = stride;
        stride *= static_cast<std::ptrdiff_t>(shape[i] == 0 ? 1 : shape[i]);
    }
    return layout;
}

inline bool tensor_layout::is_dense_packed(dtype_enum id, lowbit_layout packing) const {
    if (is_contiguous()) return true;
    if (packing != lowbit_layout::row_aligned || ndim == 0) return false;
    const tensor_layout padded = row_aligned(id, shape.data(), ndim);
    for (std::size_t i = 0; i < ndim; ++i) {
        if (shape[i] != 1 && strides[i] != padded.strides[i]) return false;
    }
    return true;
}

}  // namespace npybridge
