// npybridge/core/adapter.hpp — the tensor customization point: the adapter contract, its compile-time check, placement.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/layout.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/core/owner.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

// ---------------------------------------------------------------------------
// The customization point: specialize npybridge::tensor_adapter<T> for your tensor type T with
//   static constexpr std::size_t max_ndim;     // most dimensions T holds
//   static constexpr bool has_scalar;          // can T be 0-d? (else 0-d -> shape (1,))
//   static bool accepts_strides(const tensor_layout&);  // negative only if T keeps an offset
//   static npybridge::dtype dtype_of(const T&);
//   static tensor_layout layout_of(const T&);  // element strides (packed: in elements)
//   static void* data(const T&);               // first element (packed: its byte)
//   static bool writable(const T&);            // false if T knows it is read-only
//   static lowbit_layout packed_layout(const T&);  // packed dtypes only
//   static owner_handle owner(const T&);       // keeps T's memory alive
//   static owner_handle take_owner(T&);        // optional, for to_array(std::move(t))
//   static T borrow(const dtype&, void* data, const tensor_layout&, bool writable, owner_handle);
//   static T make(const dtype&, const tensor_layout& contiguous, lowbit_layout);  // fresh, writable
//
// A type whose memory has a place adds `using placement = ...;`, taken last by borrow and make. docs/extending.md
// explains each member; npybridge::tensor is the reference.
// ---------------------------------------------------------------------------
/// How npybridge makes, reads and borrows into a tensor type (the contract above).
template <class Tensor>
struct tensor_adapter;

/// What a tensor type without places takes as placement.
struct no_placement {
    friend constexpr bool operator==(no_placement, no_placement) noexcept { return true; }
};

}  // namespace npybridge

#include <npybridge/core/detail/adapter_members.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The placement type of Tensor's adapter (no_placement when none).
template <class Tensor>
using placement_t = detail::placement_type<Tensor>;

/// Where new tensors go unless told otherwise.
template <class Tensor>
placement_t<Tensor> default_placement();

/// Where a tensor is (default_placement() when it cannot say).
template <class Tensor>
placement_t<Tensor> placement_of(const Tensor& t);

/// Whether a tensor's memory may be written: its adapter says so and its owner does not know it read-only.
template <class Tensor>
bool is_writable(const Tensor& t);

/// Checks tensor_adapter<Tensor> against the contract at compile time, naming every missing or ill-typed member. Every
/// entry point runs it; `static_assert(npybridge::check_adapter<MyTensor>())` checks it where the adapter is written.
template <class Tensor>
constexpr bool check_adapter();

/// Example: an adapter checked where it is written (npybridge::tensor's, the reference adapter).
/// ```cpp
/// #include <npybridge/core/tensor.hpp>
///
/// static_assert(npybridge::check_adapter<npybridge::tensor>(), "npybridge::tensor meets the contract");
/// ```

}  // namespace npybridge

// ---- Definitions ------------------------------------------------------------------------------------------------

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

template <class Tensor>
placement_t<Tensor> default_placement() {
    using A = tensor_adapter<Tensor>;
    if constexpr (detail::adapter_default_placement<A, Tensor>::value) {
        return A::default_placement();
    } else {
        return placement_t<Tensor>{};
    }
}

template <class Tensor>
placement_t<Tensor> placement_of(const Tensor& t) {
    using A = tensor_adapter<Tensor>;
    if constexpr (detail::adapter_placement_of<A, Tensor>::value) {
        return A::placement_of(t);
    } else {
        return default_placement<Tensor>();
    }
}

template <class Tensor>
bool is_writable(const Tensor& t) {
    return tensor_adapter<Tensor>::writable(t) && !tensor_adapter<Tensor>::owner(t).read_only();
}

template <class Tensor>
constexpr bool check_adapter() {
    using A = tensor_adapter<Tensor>;
    if constexpr (!detail::is_complete<A>::value) {
        static_assert(detail::always_false<Tensor>,
                      "npybridge: this tensor type has no tensor_adapter: specialize npybridge::tensor_adapter<T> "
                      "(the contract is in npybridge/core/adapter.hpp and docs/extending.md)");
        return false;
    } else {
        using namespace detail;
        static_assert(
            adapter_max_ndim<A, Tensor>::value,
            "npybridge: tensor_adapter<T> needs `static constexpr std::size_t max_ndim` (most dimensions T holds)");
        static_assert(adapter_has_scalar<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static constexpr bool has_scalar` (can T be 0-d?)");
        static_assert(adapter_accepts_strides<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static bool accepts_strides(const tensor_layout&)`");
        static_assert(adapter_dtype_of<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static npybridge::dtype dtype_of(const T&)`");
        static_assert(adapter_layout_of<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static tensor_layout layout_of(const T&)` (shape and "
                      "element strides)");
        static_assert(adapter_data<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static void* data(const T&)`");
        static_assert(adapter_writable<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static bool writable(const T&)`");
        static_assert(adapter_packed_layout<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static lowbit_layout packed_layout(const T&)`");
        static_assert(
            adapter_owner<A, Tensor>::value,
            "npybridge: tensor_adapter<T> needs `static owner_handle owner(const T&)` (keeps T's memory alive)");
        if constexpr (has_placement<Tensor>) {
            static_assert(
                adapter_placed_borrow<A, Tensor>::value,
                "npybridge: tensor_adapter<T> declares a placement, so it needs `static T borrow(const dtype&, "
                "void* data, const tensor_layout&, bool writable, owner_handle, const placement&)`");
            static_assert(adapter_placed_make<A, Tensor>::value,
                          "npybridge: tensor_adapter<T> declares a placement, so it needs `static T make(const dtype&, "
                          "const tensor_layout&, lowbit_layout, const placement&)`");
        } else {
            static_assert(
                adapter_borrow<A, Tensor>::value,
                "npybridge: tensor_adapter<T> needs `static T borrow(const dtype&, void* data, const tensor_layout&, "
                "bool writable, owner_handle)`");
            static_assert(adapter_make<A, Tensor>::value,
                          "npybridge: tensor_adapter<T> needs `static T make(const dtype&, const tensor_layout&, "
                          "lowbit_layout)`");
        }
        return true;
    }
}

}  // namespace npybridge
