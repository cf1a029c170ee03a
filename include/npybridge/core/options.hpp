// npybridge/core/options.hpp — a conversion's vocabulary: policies, narrowing, to_tensor's options and result.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// How a packed tensor's bits are laid out (docs/lowbit.md).
enum class lowbit_layout : std::uint8_t {
    compact,      ///< one bit stream
    row_aligned,  ///< each innermost row starts a byte
};

/// What happens to values the dtype may not hold (docs/policies.md). checked: a value that would change beyond a
/// float's rounding is an error; wrap: NumPy's cast, like C's; reject: only NumPy's 'safe' casts.
enum class narrowing : std::uint8_t { checked, wrap, reject };

/// numpy → tensor (docs/policies.md).
enum class borrow_policy : std::uint8_t {
    try_borrow,   ///< share when the tensor type can, else copy
    must_borrow,  ///< share, or fail saying why
    copy,         ///< always copy
};

/// tensor → numpy.
enum class share_policy : std::uint8_t {
    try_share,   ///< share when numpy can (not packed), else copy
    must_share,  ///< share, or fail saying why
    copy,        ///< always copy
};

/// How to_array gives numpy a packed tensor: a byte per element (as MegEngine), or ml_dtypes' int4 / uint4
/// (QuantizedS4, Quantized4Asymm).
enum class lowbit_format : std::uint8_t { int8, ml_dtypes };

/// How to_tensor, copy_into and from_dlpack convert.
struct to_tensor_options {
    std::optional<dtype> type;  ///< the tensor's dtype; nullopt: the array's
    borrow_policy policy = borrow_policy::try_borrow;
    narrowing narrow = narrowing::checked;
    std::optional<lowbit_layout> layout;  ///< packed dtypes; nullopt: MegBrain's
    bool require_writable = false;        ///< copy a read-only array (must_borrow: fail)
    /// false: a borrow keeps no reference; the caller keeps the array alive.
    bool keep_alive = true;
    /// true: the caller only reads, so a type that cannot mark memory read-only may borrow a read-only array.
    bool reads_only = false;

    // Chainable: to_tensor_options().as(type).with(borrow_policy::copy)
    to_tensor_options& as(const dtype& wanted) {
        type = wanted;
        return *this;
    }
    to_tensor_options& with(borrow_policy wanted) {
        policy = wanted;
        return *this;
    }
    to_tensor_options& with(narrowing wanted) {
        narrow = wanted;
        return *this;
    }
    to_tensor_options& with(lowbit_layout wanted) {
        layout = wanted;
        return *this;
    }
    to_tensor_options& writable() {
        require_writable = true;
        return *this;
    }
    to_tensor_options& reading_only() {
        reads_only = true;
        return *this;
    }
    to_tensor_options& scoped() {
        keep_alive = false;
        return *this;
    }
};

/// What to_tensor made.
template <class Tensor>
struct to_tensor_result {
    to_tensor_result(Tensor made, bool shared, std::string reason = {})
        : tensor(std::move(made)), borrowed(shared), copy_reason(std::move(reason)) {}
    /// Builds the tensor in place from `make()`.
    template <class Make>
    to_tensor_result(std::in_place_t, Make&& make, bool shared)
        : tensor(std::forward<Make>(make)()), borrowed(shared) {}

    Tensor tensor;
    bool borrowed = false;
    std::string copy_reason;  ///< why memory was not shared
};

/// Copies from this many bytes release the GIL.
inline constexpr std::size_t release_gil_bytes = std::size_t{1} << 20;

/// Example: options for a copy into int8 that refuses unsafe casts.
/// ```cpp
/// #include <npybridge/core/options.hpp>
///
/// npybridge::to_tensor_options int8_copy() {
///     return npybridge::to_tensor_options().as(npybridge::dtype_enum::Int8).with(npybridge::narrowing::reject);
/// }
/// ```

}  // namespace npybridge
