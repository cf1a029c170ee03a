// Compile-time facts of the param structs and their reflection (docs/metadata.md): compiling is passing.
#include <npybridge/reflect.hpp>
#include <npybridge/quantization.hpp>

namespace nb = npybridge;

static_assert(nb::reflect::field_count<nb::scale_param> == 1);
static_assert(nb::reflect::field_count<nb::asymm_param> == 2);
static_assert(nb::reflect::field_count<nb::no_param> == 0);
static_assert(nb::reflect::keys_match_fields<nb::scale_param>());
static_assert(nb::reflect::keys_match_fields<nb::asymm_param>());
static_assert(nb::asymm_param::field_names[0] == "scale" && nb::asymm_param::field_names[1] == "zero_point");
// MegDNN's param layouts: float scale; uint8 zero_point.
static_assert(std::is_same_v<decltype(nb::asymm_param::scale), float>);
static_assert(std::is_same_v<decltype(nb::asymm_param::zero_point), std::uint8_t>);
// Every quantized row's param struct has its keys listed (derived check over the table).
template <std::size_t... I>
constexpr bool all_params_reflect(std::index_sequence<I...>) {
    return (nb::reflect::keys_match_fields<typename nb::detail::row_t<I>::param_type>() && ...);
}
static_assert(all_params_reflect(std::make_index_sequence<nb::dtype_count>{}));
