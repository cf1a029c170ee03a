// npybridge/core/detail/adapter_members.hpp — a detector per contract member, the placement type, borrow / make.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/layout.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/core/owner.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
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
struct placement_of_adapter {
    using type = no_placement;
};
template <class A>
struct placement_of_adapter<A, std::void_t<typename A::placement>> {
    using type = typename A::placement;
};

/// The placement type of Tensor's adapter.
template <class Tensor>
using placement_type = typename placement_of_adapter<tensor_adapter<Tensor>>::type;

template <class Tensor>
inline constexpr bool has_placement = !std::is_same_v<placement_type<Tensor>, no_placement>;

/// adapter::borrow, with the placement when taken; always inlined (the hot path).
template <class Tensor>
[[gnu::always_inline]] inline Tensor adapter_borrow_at(const dtype& type, void* data, const tensor_layout& layout,
                                                       bool writable, owner_handle owner,
                                                       const placement_type<Tensor>& where) {
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
                       const placement_type<Tensor>& where) {
    using A = tensor_adapter<Tensor>;
    if constexpr (has_placement<Tensor>) {
        return A::make(type, layout, packing, where);
    } else {
        return A::make(type, layout, packing);
    }
}

}  // namespace detail
}  // namespace npybridge
