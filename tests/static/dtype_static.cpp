// Compile-time facts of the dtype table (docs/dtypes.md): compiling this file is passing.
#include <npybridge/core/dtype.hpp>

#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>

namespace npb = npybridge;
using npb::dtype_category;
using npb::dtype_enum;
using npb::info;

// ---- every row: MegDNN's enum value, name, bits, category, signedness, packing.
// Values from MegDNN's dtype.h (its enum and bit widths).
constexpr bool row_is(dtype_enum id, std::uint32_t value, std::string_view name, unsigned bits, dtype_category category,
                      bool is_signed, bool packed) {
    const npb::dtype_info& e = info(id);
    return e.value() == value && e.name == name && e.bits == bits && e.category == category &&
           e.is_signed == is_signed && e.is_packed == packed;
}
static_assert(npb::dtype_count == 22);
static_assert(row_is(dtype_enum::Float32, 0, "Float32", 32, dtype_category::floating, true, false));
static_assert(row_is(dtype_enum::Uint8, 1, "Uint8", 8, dtype_category::integer, false, false));
static_assert(row_is(dtype_enum::Int8, 2, "Int8", 8, dtype_category::integer, true, false));
static_assert(row_is(dtype_enum::Int16, 3, "Int16", 16, dtype_category::integer, true, false));
static_assert(row_is(dtype_enum::Int32, 4, "Int32", 32, dtype_category::integer, true, false));
static_assert(row_is(dtype_enum::IntB1, 5, "IntB1", 1, dtype_category::lowbit, true, true));
static_assert(row_is(dtype_enum::IntB2, 6, "IntB2", 2, dtype_category::lowbit, true, true));
static_assert(row_is(dtype_enum::IntB4, 7, "IntB4", 4, dtype_category::lowbit, true, true));
static_assert(row_is(dtype_enum::Byte, 8, "Byte", 8, dtype_category::other, false, false));
static_assert(row_is(dtype_enum::Float16, 9, "Float16", 16, dtype_category::floating, true, false));
static_assert(row_is(dtype_enum::UintB4, 10, "UintB4", 4, dtype_category::lowbit, true, true));
static_assert(row_is(dtype_enum::BFloat16, 11, "BFloat16", 16, dtype_category::floating, true, false));
static_assert(row_is(dtype_enum::Bool, 12, "Bool", 8, dtype_category::boolean, false, false));
static_assert(row_is(dtype_enum::Uint16, 13, "Uint16", 16, dtype_category::integer, false, false));
static_assert(row_is(dtype_enum::Complex64, 14, "Complex64", 64, dtype_category::complex, true, false));
static_assert(row_is(dtype_enum::Quantized8Asymm, 100000, "Quantized8Asymm", 8, dtype_category::quantized, false,
                     false));
static_assert(row_is(dtype_enum::QuantizedS32, 100001, "QuantizedS32", 32, dtype_category::quantized, true, false));
static_assert(row_is(dtype_enum::QuantizedS8, 100002, "QuantizedS8", 8, dtype_category::quantized, true, false));
static_assert(row_is(dtype_enum::Quantized4Asymm, 100003, "Quantized4Asymm", 4, dtype_category::quantized, false,
                     true));
static_assert(row_is(dtype_enum::QuantizedS4, 100004, "QuantizedS4", 4, dtype_category::quantized, true, true));
static_assert(row_is(dtype_enum::QuantizedS16, 100005, "QuantizedS16", 16, dtype_category::quantized, true, false));
static_assert(row_is(dtype_enum::QuantizedS1, 100006, "QuantizedS1", 8, dtype_category::quantized, true, false));

// The table is in MegDNN's enum order and each row is found by its own key.
constexpr bool lookups_agree() {
    for (std::size_t i = 0; i < npb::dtype_count; ++i) {
        const npb::dtype_info& e = npb::dtype_table[i];
        if (i > 0 && !(npb::dtype_table[i - 1].value() < e.value())) return false;
        if (npb::table_index(e.id) != i) return false;
        if (npb::find_dtype(e.name) != &e || npb::find_dtype(e.value()) != &e) return false;
        if (e.is_quantized != (e.param_fields > 0)) return false;
    }
    return true;
}
static_assert(lookups_agree());
static_assert(npb::find_dtype("Float64") == nullptr && npb::find_dtype("quantizeds8") == nullptr);
static_assert(npb::find_dtype(std::uint32_t{15}) == nullptr && !npb::is_valid(static_cast<dtype_enum>(99999)));

// ---- storage and param types.
static_assert(std::is_same_v<npb::element_t<dtype_enum::Float32>, float>);
static_assert(std::is_same_v<npb::element_t<dtype_enum::Float16>, npb::half>);
static_assert(std::is_same_v<npb::element_t<dtype_enum::BFloat16>, npb::bfloat16>);
static_assert(std::is_same_v<npb::element_t<dtype_enum::Complex64>, std::complex<float>>);
static_assert(std::is_same_v<npb::element_t<dtype_enum::Quantized8Asymm>, std::uint8_t>);
static_assert(std::is_same_v<npb::element_t<dtype_enum::QuantizedS1>, std::int8_t>);
static_assert(std::is_same_v<npb::element_t<dtype_enum::Quantized4Asymm>, std::uint8_t>);
static_assert(std::is_same_v<npb::param_t<dtype_enum::Quantized8Asymm>, npb::asymm_param>);
static_assert(std::is_same_v<npb::param_t<dtype_enum::Quantized4Asymm>, npb::asymm_param>);
static_assert(std::is_same_v<npb::param_t<dtype_enum::QuantizedS16>, npb::scale_param>);
static_assert(std::is_same_v<npb::param_t<dtype_enum::Int8>, npb::no_param>);
// The params a dtype object carries are derived from the rows: each param struct once, no_param first.
static_assert(std::is_same_v<npb::params_variant, std::variant<npb::no_param, npb::asymm_param, npb::scale_param>>);
static_assert(info(dtype_enum::Quantized8Asymm).param_fields == 2 &&
              info(dtype_enum::Quantized8Asymm).param_keys[1] == "zero_point");
static_assert(info(dtype_enum::QuantizedS4).param_fields == 1 &&
              info(dtype_enum::QuantizedS4).param_keys[0] == "scale");

// ---- sizes: ceil(n*bits/8) for packed dtypes, n*sizeof otherwise.
static_assert(npb::byte_size(dtype_enum::IntB4, 5) == 3);
static_assert(npb::byte_size(dtype_enum::IntB2, 5) == 2);
static_assert(npb::byte_size(dtype_enum::IntB1, 9) == 2);
static_assert(npb::byte_size(dtype_enum::IntB1, 0) == 0);
static_assert(npb::byte_size(dtype_enum::QuantizedS1, 1) == 1);
static_assert(npb::byte_size(dtype_enum::QuantizedS4, 27) == 14);
static_assert(npb::byte_size(dtype_enum::Complex64, 3) == 24);
static_assert(npb::byte_size(dtype_enum::Float16, 3) == 6);
static_assert(npb::element_size<dtype_enum::Int16>() == 2 && npb::element_size<dtype_enum::BFloat16>() == 2);
static_assert(info(dtype_enum::IntB4).element_size == 0, "a packed dtype has no element size");

// ---- value ranges (MegDNN's clamps: quint8, qint8, qint16, qint32, quint4, qint4, qint1; IntB odd values).
static_assert(info(dtype_enum::Quantized8Asymm).range == npb::value_range{0, 255});
static_assert(info(dtype_enum::QuantizedS8).range == npb::value_range{-128, 127});
static_assert(info(dtype_enum::QuantizedS16).range == npb::value_range{-32768, 32767});
static_assert(info(dtype_enum::QuantizedS32).range == npb::value_range{-2147483648.0, 2147483647.0});
static_assert(info(dtype_enum::Quantized4Asymm).range == npb::value_range{0, 15});
static_assert(info(dtype_enum::QuantizedS4).range == npb::value_range{-8, 7});
static_assert(info(dtype_enum::QuantizedS1).range == npb::value_range{0, 1});
static_assert(info(dtype_enum::IntB1).range == npb::value_range{-1, 1});
static_assert(info(dtype_enum::IntB2).range == npb::value_range{-3, 3});
static_assert(info(dtype_enum::IntB4).range == npb::value_range{-15, 15});
static_assert(info(dtype_enum::UintB4).coding == npb::lowbit_coding::odd);
static_assert(info(dtype_enum::QuantizedS4).coding == npb::lowbit_coding::twos_complement);
static_assert(info(dtype_enum::Quantized4Asymm).coding == npb::lowbit_coding::unsigned_value);

// ---- numpy forms and names.
static_assert(info(dtype_enum::Float16).numpy_name() == "float16");
static_assert(info(dtype_enum::Complex64).numpy_name() == "complex64");
static_assert(info(dtype_enum::Bool).numpy_name() == "bool");
static_assert(info(dtype_enum::QuantizedS16).numpy_name() == "int16");
static_assert(info(dtype_enum::Quantized4Asymm).numpy_name() == "uint8");
static_assert(info(dtype_enum::QuantizedS4).numpy_name() == "int8");
static_assert(info(dtype_enum::BFloat16).numpy_name() == "bfloat16" &&
              info(dtype_enum::BFloat16).form == npb::numpy_form::user_dtype);
static_assert(info(dtype_enum::IntB2).numpy_name() == "intb2");
static_assert(info(dtype_enum::Byte).form == npb::numpy_form::none && info(dtype_enum::Byte).numpy_name().empty());
static_assert(info(dtype_enum::UintB4).form == npb::numpy_form::none);

// ---- C++ type -> dtype, derived from kind and size (long and long long need no rows).
static_assert(npb::dtype_of_v<float> == dtype_enum::Float32 && !npb::is_narrowing_v<float>);
static_assert(npb::dtype_of_v<double> == dtype_enum::Float32 && npb::is_narrowing_v<double>);
static_assert(npb::dtype_of_v<std::int64_t> == dtype_enum::Int32 && npb::is_narrowing_v<std::int64_t>);
static_assert(npb::dtype_of_v<long> == dtype_enum::Int32 && npb::dtype_of_v<long long> == dtype_enum::Int32);
static_assert(npb::dtype_of_v<int> == dtype_enum::Int32 && !npb::is_narrowing_v<int>);
static_assert(npb::dtype_of_v<short> == dtype_enum::Int16);
static_assert(npb::dtype_of_v<signed char> == dtype_enum::Int8);
static_assert(npb::dtype_of_v<unsigned char> == dtype_enum::Uint8);
static_assert(npb::dtype_of_v<unsigned short> == dtype_enum::Uint16);
static_assert(npb::dtype_of_v<const std::uint8_t> == dtype_enum::Uint8);
static_assert(npb::dtype_of_v<bool> == dtype_enum::Bool);
static_assert(npb::dtype_of_v<npb::half> == dtype_enum::Float16);
static_assert(npb::dtype_of_v<npb::bfloat16> == dtype_enum::BFloat16);
static_assert(npb::dtype_of_v<std::complex<float>> == dtype_enum::Complex64);
static_assert(!npb::has_dtype_v<std::uint32_t> && !npb::has_dtype_v<std::uint64_t> && !npb::has_dtype_v<unsigned long>);
static_assert(!npb::has_dtype_v<long double> && !npb::has_dtype_v<std::complex<double>>);
static_assert(!npb::has_dtype_v<char32_t> && !npb::has_dtype_v<std::byte> && !npb::has_dtype_v<std::string>);

// ---- param structs stay plain aggregates (PFR reflects them).
static_assert(std::is_aggregate_v<npb::scale_param> && std::is_aggregate_v<npb::asymm_param>);

// The version's two spellings agree (version.hpp checks it too); a wrong spelling is refused.
#include <npybridge/core/version.hpp>
static_assert(NPYBRIDGE_VERSION_MAJOR >= 0 && NPYBRIDGE_VERSION_MINOR >= 0 && NPYBRIDGE_VERSION_PATCH >= 0);
static_assert(npybridge::detail::version_text_is("0.5.0", 0, 5, 0));
static_assert(!npybridge::detail::version_text_is("0.5.1", 0, 5, 0));
static_assert(!npybridge::detail::version_text_is("0.5", 0, 5, 0));
static_assert(!npybridge::detail::version_text_is("10.5.0x", 10, 5, 0));
