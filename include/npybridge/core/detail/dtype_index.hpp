// npybridge/core/detail/dtype_index.hpp — enum -> row, the param structs as one variant, C++ type -> row.
#pragma once

#include <npybridge/core/config.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

class dtype;

namespace detail {

/// MegDNN's enum has two dense blocks (0.. and 100000..): a slot per value makes enum -> row one read.
inline constexpr std::uint32_t quantized_base = 100000;
inline constexpr std::size_t block_size = 16;
inline constexpr std::size_t no_slot = 2 * block_size;

constexpr std::size_t enum_slot(std::uint32_t value) noexcept {
    if (value < block_size) return value;
    if (value >= quantized_base && value - quantized_base < block_size) return block_size + (value - quantized_base);
    return no_slot;
}

constexpr std::array<std::uint8_t, no_slot + 1> make_enum_slots() {
    std::array<std::uint8_t, no_slot + 1> slots{};
    for (auto& slot : slots) slot = static_cast<std::uint8_t>(dtype_count);
    for (std::size_t i = 0; i < dtype_count; ++i)
        slots[enum_slot(dtype_table[i].value())] = static_cast<std::uint8_t>(i);
    slots[no_slot] = static_cast<std::uint8_t>(dtype_count);
    return slots;
}

inline constexpr std::array<std::uint8_t, no_slot + 1> enum_slots = make_enum_slots();

constexpr bool every_row_has_a_slot() noexcept {
    for (std::size_t i = 0; i < dtype_count; ++i) {
        if (enum_slot(dtype_table[i].value()) == no_slot || enum_slots[enum_slot(dtype_table[i].value())] != i)
            return false;
    }
    return true;
}
static_assert(every_row_has_a_slot(),
              "npybridge: a dtype's enum value falls outside MegDNN's two enum blocks; widen enum_slot()");

/// The row of `id`, or dtype_count.
constexpr std::size_t row_of(dtype_enum id) noexcept { return enum_slots[enum_slot(static_cast<std::uint32_t>(id))]; }

template <class Variant, class T>
struct with_alternative;
template <class... Ts, class T>
struct with_alternative<std::variant<Ts...>, T> {
    using type = std::conditional_t<(std::is_same_v<T, Ts> || ...), std::variant<Ts...>, std::variant<Ts..., T>>;
};

template <class Variant, std::size_t I, std::size_t N>
struct row_params {
    using type =
        typename row_params<typename with_alternative<Variant, typename row_t<I>::param_type>::type, I + 1, N>::type;
};
template <class Variant, std::size_t N>
struct row_params<Variant, N, N> {
    using type = Variant;
};

/// Every param struct the rows use, once each, no_param first.
using params_variant_t = typename row_params<std::variant<no_param>, 0, dtype_count>::type;

template <class T, class... Ts>
constexpr std::size_t alternative_index(std::variant<Ts...>*) noexcept {
    constexpr bool same[] = {std::is_same_v<T, Ts>...};
    for (std::size_t i = 0; i < sizeof...(Ts); ++i) {
        if (same[i]) return i;
    }
    return sizeof...(Ts);
}

template <std::size_t... I>
constexpr std::array<std::uint8_t, sizeof...(I)> make_param_slots(std::index_sequence<I...>) noexcept {
    return {static_cast<std::uint8_t>(
        alternative_index<typename row_t<I>::param_type>(static_cast<params_variant_t*>(nullptr)))...};
}

/// Each row's param struct as its index in params_variant_t, so with_params dispatches over a few structs, not every row.
inline constexpr std::array<std::uint8_t, dtype_count> param_slots =
    make_param_slots(std::make_index_sequence<dtype_count>{});

template <class F, class... Ts>
void call_with_alternative(std::size_t slot, F& f, std::variant<Ts...>*) {
    std::size_t i = 0;
    static_cast<void>(((i++ == slot ? (f(Ts{}), true) : false) || ...));
}

/// The defaults of params_variant_t's struct at `slot`, as numbers.
inline param_values default_values(std::size_t slot) noexcept {
    param_values values;
    auto read = [&](auto param) { values = values_of(param); };
    call_with_alternative(slot, read, static_cast<params_variant_t*>(nullptr));
    return values;
}

/// The params a dtype holds, as numbers.
inline param_values variant_values(const params_variant_t& params) noexcept {
    param_values values;
    auto read = [&](auto param) { values = values_of(*std::get_if<decltype(param)>(&params)); };
    call_with_alternative(params.index(), read, static_cast<params_variant_t*>(nullptr));
    return values;
}

template <class T, std::size_t I>
constexpr bool row_holds_plain() noexcept {
    using element = typename row_t<I>::element_type;
    constexpr dtype_category category = dtype_table[I].category;
    return scalar_kind_of<element>() == scalar_kind_of<T>() && sizeof(element) == sizeof(T) &&
           (category == dtype_category::floating || category == dtype_category::integer ||
            category == dtype_category::boolean || category == dtype_category::complex);
}

template <class T, std::size_t... I>
constexpr std::size_t find_row_for_type(std::index_sequence<I...>) noexcept {
    constexpr std::array<bool, sizeof...(I)> matches{row_holds_plain<T, I>()...};
    for (std::size_t i = 0; i < matches.size(); ++i) {
        if (matches[i]) return i;
    }
    return dtype_count;
}

/// C++ type -> row, by scalar_kind and sizeof. MegBrain has no 64-bit dtypes: int64 narrows to Int32, double to
/// Float32; unsigned 32/64-bit types have none.
template <class T>
struct type_mapping {
    static constexpr std::size_t exact =
        scalar_kind_of<T>() == scalar_kind::none || scalar_kind_of<T>() == scalar_kind::byte
            ? dtype_count
            : find_row_for_type<T>(std::make_index_sequence<dtype_count>{});
    static constexpr bool narrows =
        exact == dtype_count && sizeof(T) == 8 &&
        (scalar_kind_of<T>() == scalar_kind::signed_int || scalar_kind_of<T>() == scalar_kind::floating);
    static constexpr std::size_t index =
        !narrows ? exact
                 : row_of(scalar_kind_of<T>() == scalar_kind::floating ? dtype_enum::Float32 : dtype_enum::Int32);
};

/// The dtype `id` with params made from `values`, validated.
dtype dtype_from_values(dtype_enum id, const param_values& values);

}  // namespace detail
}  // namespace npybridge
