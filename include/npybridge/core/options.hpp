// npybridge/core/options.hpp — to_tensor's options and result, over core/vocabulary.hpp's enums.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/vocabulary.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

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

/// Example: options for a copy into int8 that refuses unsafe casts.
/// ```cpp
/// #include <npybridge/core/options.hpp>
///
/// npybridge::to_tensor_options int8_copy() {
///     return npybridge::to_tensor_options().as(npybridge::dtype_enum::Int8).with(npybridge::narrowing::reject);
/// }
/// ```

}  // namespace npybridge
