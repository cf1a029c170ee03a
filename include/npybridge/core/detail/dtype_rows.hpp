// npybridge/core/detail/dtype_rows.hpp — the dtype table's rows and the dtype_info made of each.
#pragma once

#include <npybridge/core/config.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

template <class Element>
constexpr value_range natural_range() noexcept {
    constexpr scalar_kind kind = scalar_kind_of<Element>();
    if constexpr (kind == scalar_kind::boolean) {
        return {0, 1};
    } else if constexpr (kind == scalar_kind::byte) {
        return {0, 255};
    } else if constexpr (kind == scalar_kind::half) {
        return {-65504.0, 65504.0};
    } else if constexpr (kind == scalar_kind::bfloat16) {
        return {-3.38953138925153547590470800371487866880e+38, 3.38953138925153547590470800371487866880e+38};
    } else if constexpr (kind == scalar_kind::complex) {
        using real = typename Element::value_type;
        return {-static_cast<double>(std::numeric_limits<real>::max()),
                static_cast<double>(std::numeric_limits<real>::max())};
    } else if constexpr (kind == scalar_kind::floating) {
        return {-static_cast<double>(std::numeric_limits<Element>::max()),
                static_cast<double>(std::numeric_limits<Element>::max())};
    } else {
        return {static_cast<double>(std::numeric_limits<Element>::min()),
                static_cast<double>(std::numeric_limits<Element>::max())};
    }
}

constexpr value_range lowbit_range(lowbit_coding coding, unsigned bits) noexcept {
    const double top = static_cast<double>((1u << bits) - 1u);
    switch (coding) {
        case lowbit_coding::odd: return {-top, top};
        case lowbit_coding::twos_complement:
            return {-static_cast<double>(1u << (bits - 1)), static_cast<double>((1u << (bits - 1)) - 1u)};
        case lowbit_coding::unsigned_value: return {0, top};
        case lowbit_coding::none: break;
    }
    return {0, 0};
}

/// One row of the table: Element is one unpacked element's C++ type, Param the param struct; the rest derives from
/// them.
template <class Element, class Param>
struct dtype_row {
    using element_type = Element;
    using param_type = Param;

    dtype_enum id;
    std::string_view name;
    dtype_category category;
    numpy_form form;
    lowbit_coding coding;  ///< none unless packed
    unsigned packed_bits;  ///< 0 unless packed
    value_range range;
};

template <class Element, class Param = no_param>
constexpr dtype_row<Element, Param> plain_row(dtype_enum id, std::string_view name, dtype_category category,
                                              numpy_form form = numpy_form::builtin) {
    return {id, name, category, form, lowbit_coding::none, 0, natural_range<Element>()};
}

template <class Element, class Param = no_param>
constexpr dtype_row<Element, Param> packed_row(dtype_enum id, std::string_view name, dtype_category category,
                                               numpy_form form, lowbit_coding coding, unsigned bits) {
    return {id, name, category, form, coding, bits, lowbit_range(coding, bits)};
}

template <class Element, class Param>
constexpr dtype_row<Element, Param> with_range(dtype_row<Element, Param> row, value_range range) {
    row.range = range;
    return row;
}

/// The rows, each of its own type, in a tuple lighter to parse than std::tuple (rows are only read by index).
template <std::size_t I, class Row>
struct row_leaf {
    Row row;
};

template <class Indices, class... Rows>
struct row_list_base;
template <std::size_t... I, class... Rows>
struct row_list_base<std::index_sequence<I...>, Rows...> : row_leaf<I, Rows>... {
    constexpr explicit row_list_base(Rows... rows) : row_leaf<I, Rows>{rows}... {}
};

template <class... Rows>
struct row_list : row_list_base<std::index_sequence_for<Rows...>, Rows...> {
    using row_list_base<std::index_sequence_for<Rows...>, Rows...>::row_list_base;
    static constexpr std::size_t size = sizeof...(Rows);
};

template <class... Rows>
constexpr row_list<Rows...> make_row_list(Rows... rows) {
    return row_list<Rows...>(rows...);
}

template <std::size_t I, class Row>
constexpr const Row& row_at(const row_leaf<I, Row>& leaf) noexcept {
    return leaf.row;
}

// One row per dtype (docs/dtypes.md); the macro writes the enum value and the name from one token.
#define NPYBRIDGE_DTYPE(name) dtype_enum::name, #name
inline constexpr auto dtype_rows = make_row_list(
    plain_row<float>(NPYBRIDGE_DTYPE(Float32), dtype_category::floating),
    plain_row<std::uint8_t>(NPYBRIDGE_DTYPE(Uint8), dtype_category::integer),
    plain_row<std::int8_t>(NPYBRIDGE_DTYPE(Int8), dtype_category::integer),
    plain_row<std::int16_t>(NPYBRIDGE_DTYPE(Int16), dtype_category::integer),
    plain_row<std::int32_t>(NPYBRIDGE_DTYPE(Int32), dtype_category::integer),
    packed_row<std::int8_t>(NPYBRIDGE_DTYPE(IntB1), dtype_category::lowbit, numpy_form::user_dtype, lowbit_coding::odd,
                            1),
    packed_row<std::int8_t>(NPYBRIDGE_DTYPE(IntB2), dtype_category::lowbit, numpy_form::user_dtype, lowbit_coding::odd,
                            2),
    packed_row<std::int8_t>(NPYBRIDGE_DTYPE(IntB4), dtype_category::lowbit, numpy_form::user_dtype, lowbit_coding::odd,
                            4),
    plain_row<std::byte>(NPYBRIDGE_DTYPE(Byte), dtype_category::other, numpy_form::none),
    plain_row<half>(NPYBRIDGE_DTYPE(Float16), dtype_category::floating),
    packed_row<std::int8_t>(NPYBRIDGE_DTYPE(UintB4), dtype_category::lowbit, numpy_form::none, lowbit_coding::odd, 4),
    plain_row<bfloat16>(NPYBRIDGE_DTYPE(BFloat16), dtype_category::floating, numpy_form::user_dtype),
    plain_row<bool>(NPYBRIDGE_DTYPE(Bool), dtype_category::boolean),
    plain_row<std::uint16_t>(NPYBRIDGE_DTYPE(Uint16), dtype_category::integer),
    plain_row<std::complex<float>>(NPYBRIDGE_DTYPE(Complex64), dtype_category::complex),
    plain_row<std::uint8_t, asymm_param>(NPYBRIDGE_DTYPE(Quantized8Asymm), dtype_category::quantized),
    plain_row<std::int32_t, scale_param>(NPYBRIDGE_DTYPE(QuantizedS32), dtype_category::quantized),
    plain_row<std::int8_t, scale_param>(NPYBRIDGE_DTYPE(QuantizedS8), dtype_category::quantized),
    packed_row<std::uint8_t, asymm_param>(NPYBRIDGE_DTYPE(Quantized4Asymm), dtype_category::quantized,
                                          numpy_form::builtin, lowbit_coding::unsigned_value, 4),
    packed_row<std::int8_t, scale_param>(NPYBRIDGE_DTYPE(QuantizedS4), dtype_category::quantized, numpy_form::builtin,
                                         lowbit_coding::twos_complement, 4),
    plain_row<std::int16_t, scale_param>(NPYBRIDGE_DTYPE(QuantizedS16), dtype_category::quantized),
    with_range(plain_row<std::int8_t, scale_param>(NPYBRIDGE_DTYPE(QuantizedS1), dtype_category::quantized), {0, 1}));
#undef NPYBRIDGE_DTYPE

template <std::size_t I>
using row_t = std::remove_const_t<std::remove_reference_t<decltype(row_at<I>(dtype_rows))>>;

template <std::size_t I>
constexpr dtype_info make_info() {
    using row = row_t<I>;
    using element = typename row::element_type;
    constexpr row r = row_at<I>(dtype_rows);
    constexpr scalar_kind kind = scalar_kind_of<element>();
    constexpr bool is_packed = r.packed_bits != 0;
    constexpr bool is_signed = kind == scalar_kind::signed_int || kind == scalar_kind::floating ||
                               kind == scalar_kind::half || kind == scalar_kind::bfloat16 ||
                               kind == scalar_kind::complex;
    constexpr short_name numpy = r.form == numpy_form::builtin      ? make_short_name(facts_of<element>().numpy_name)
                                 : r.form == numpy_form::user_dtype ? make_short_name(r.name, true)
                                                                    : short_name{};
    return dtype_info{r.id,
                      r.name,
                      r.category,
                      r.form,
                      r.coding,
                      is_signed,
                      is_packed,
                      r.category == dtype_category::quantized,
                      is_packed ? r.packed_bits : static_cast<unsigned>(sizeof(element) * 8),
                      is_packed ? 0 : sizeof(element),
                      r.range,
                      facts_of<element>().cpp_name,
                      std::tuple_size_v<decltype(row::param_type::field_names)>,
                      row::param_type::field_names.data(),
                      numpy};
}

template <std::size_t... I>
constexpr std::array<dtype_info, sizeof...(I)> make_table(std::index_sequence<I...>) {
    return {make_info<I>()...};
}

}  // namespace detail
}  // namespace npybridge
