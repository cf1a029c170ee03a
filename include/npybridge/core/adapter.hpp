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

namespace detail {

template <class T, class = void>
struct is_complete : std::false_type {};
template <class T>
struct is_complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

// A detector per contract member: true when it exists with a usable type.
#define NPYBRIDGE_ADAPTER_MEMBER(name, wanted, ...)                 \
    template <class A, class T, class = void>                       \
    struct adapter_##name : std::false_type {};                     \
    template <class A, class T>                                     \
    struct adapter_##name<A, T, std::void_t<decltype(__VA_ARGS__)>> \
        : std::is_convertible<decltype(__VA_ARGS__), wanted> {};
NPYBRIDGE_ADAPTER_MEMBER(max_ndim, std::size_t, std::integral_constant<std::size_t, A::max_ndim>::value)
NPYBRIDGE_ADAPTER_MEMBER(has_scalar, bool, std::bool_constant<A::has_scalar>::value)
NPYBRIDGE_ADAPTER_MEMBER(accepts_strides, bool, A::accepts_strides(std::declval<const tensor_layout&>()))
NPYBRIDGE_ADAPTER_MEMBER(dtype_of, dtype, A::dtype_of(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(layout_of, tensor_layout, A::layout_of(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(data, void*, A::data(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(writable, bool, A::writable(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(packed_layout, lowbit_layout, A::packed_layout(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(owner, owner_handle, A::owner(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(borrow, T,
                         A::borrow(std::declval<const dtype&>(), std::declval<void*>(),
                                   std::declval<const tensor_layout&>(), true, std::declval<owner_handle>()))
NPYBRIDGE_ADAPTER_MEMBER(make, T,
                         A::make(std::declval<const dtype&>(), std::declval<const tensor_layout&>(), lowbit_layout{}))
NPYBRIDGE_ADAPTER_MEMBER(placed_borrow, T,
                         A::borrow(std::declval<const dtype&>(), std::declval<void*>(),
                                   std::declval<const tensor_layout&>(), true, std::declval<owner_handle>(),
                                   std::declval<const typename A::placement&>()))
NPYBRIDGE_ADAPTER_MEMBER(placed_make, T,
                         A::make(std::declval<const dtype&>(), std::declval<const tensor_layout&>(), lowbit_layout{},
                                 std::declval<const typename A::placement&>()))
NPYBRIDGE_ADAPTER_MEMBER(default_placement, typename A::placement, A::default_placement())
NPYBRIDGE_ADAPTER_MEMBER(placement_of, typename A::placement, A::placement_of(std::declval<const T&>()))
#undef NPYBRIDGE_ADAPTER_MEMBER

template <class A, class = void>
struct adapter_placement {
    using type = void;
};
template <class A>
struct adapter_placement<A, std::void_t<typename A::placement>> {
    using type = typename A::placement;
};

}  // namespace detail

/// What a tensor type without places takes as placement.
struct no_placement {
    friend constexpr bool operator==(no_placement, no_placement) noexcept { return true; }
};

/// The placement type of Tensor's adapter (no_placement when none).
template <class Tensor>
using placement_t = std::conditional_t<std::is_void_v<typename detail::adapter_placement<tensor_adapter<Tensor>>::type>,
                                       no_placement, typename detail::adapter_placement<tensor_adapter<Tensor>>::type>;

/// Where new tensors go unless told otherwise.
template <class Tensor>
placement_t<Tensor> default_placement() {
    using A = tensor_adapter<Tensor>;
    if constexpr (detail::adapter_default_placement<A, Tensor>::value) {
        return A::default_placement();
    } else {
        return placement_t<Tensor>{};
    }
}

/// Where a tensor is (default_placement() when it cannot say).
template <class Tensor>
placement_t<Tensor> placement_of(const Tensor& t) {
    using A = tensor_adapter<Tensor>;
    if constexpr (detail::adapter_placement_of<A, Tensor>::value) {
        return A::placement_of(t);
    } else {
        return default_placement<Tensor>();
    }
}

/// Whether a tensor's memory may be written: its adapter says so and its owner does not know it read-only.
template <class Tensor>
bool is_writable(const Tensor& t) {
    return tensor_adapter<Tensor>::writable(t) && !tensor_adapter<Tensor>::owner(t).read_only();
}

namespace detail {

template <class Tensor>
inline constexpr bool has_placement = !std::is_same_v<placement_t<Tensor>, no_placement>;

/// adapter::borrow, with the placement when taken; always inlined (the hot path).
template <class Tensor>
[[gnu::always_inline]] inline Tensor adapter_borrow_at(const dtype& type, void* data, const tensor_layout& layout,
                                                       bool writable, owner_handle owner,
                                                       const placement_t<Tensor>& where) {
    using A = tensor_adapter<Tensor>;
    if constexpr (has_placement<Tensor>) {
        return A::borrow(type, data, layout, writable, std::move(owner), where);
    } else {
        return A::borrow(type, data, layout, writable, std::move(owner));
    }
}

/// adapter::make, with the placement when taken.
template <class Tensor>
Tensor adapter_make_at(const dtype& type, const tensor_layout& layout, lowbit_layout packing,
                       const placement_t<Tensor>& where) {
    using A = tensor_adapter<Tensor>;
    if constexpr (has_placement<Tensor>) {
        return A::make(type, layout, packing, where);
    } else {
        return A::make(type, layout, packing);
    }
}

}  // namespace detail

/// Checks tensor_adapter<Tensor> against the contract at compile time, naming every missing or ill-typed member. Every
/// entry point runs it; `static_assert(npybridge::check_adapter<MyTensor>())` checks it where the adapter is written.
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
