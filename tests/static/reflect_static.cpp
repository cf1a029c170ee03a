// Compile-time facts of the param structs and their reflection (docs/metadata.md): compiling is passing.
#include <npybridge/core/reflect.hpp>
#include <npybridge/core/quantization.hpp>

namespace npb = npybridge;

static_assert(npb::reflect::field_count<npb::scale_param> == 1);
static_assert(npb::reflect::field_count<npb::asymm_param> == 2);
static_assert(npb::reflect::field_count<npb::no_param> == 0);
static_assert(npb::reflect::keys_match_fields<npb::scale_param>());
static_assert(npb::reflect::keys_match_fields<npb::asymm_param>());
static_assert(npb::asymm_param::field_names[0] == "scale" && npb::asymm_param::field_names[1] == "zero_point");
// MegDNN's param layouts: float scale; uint8 zero_point.
static_assert(std::is_same_v<decltype(npb::asymm_param::scale), float>);
static_assert(std::is_same_v<decltype(npb::asymm_param::zero_point), std::uint8_t>);
// Every quantized row's param struct has its keys listed (derived check over the table).
template <std::size_t... I>
constexpr bool all_params_reflect(std::index_sequence<I...>) {
    return (npb::reflect::keys_match_fields<typename npb::detail::row_t<I>::param_type>() && ...);
}
static_assert(all_params_reflect(std::make_index_sequence<npb::dtype_count>{}));
