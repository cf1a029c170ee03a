// npybridge/core/dtype.hpp — the compile-time table of every MegDNN dtype, what derives from it, and class dtype.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/element_facts.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/detail/params.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/reflect.hpp>
#include <npybridge/core/scalar_types.hpp>

#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// MegDNN's DTypeEnum with MegDNN's values, so the two enums cast into each other.
enum class dtype_enum : std::uint32_t {
    Float32 = 0,
    Uint8 = 1,
    Int8 = 2,
    Int16 = 3,
    Int32 = 4,
    IntB1 = 5,
    IntB2 = 6,
    IntB4 = 7,
    Byte = 8,
    Float16 = 9,
    UintB4 = 10,
    BFloat16 = 11,
    Bool = 12,
    Uint16 = 13,
    Complex64 = 14,
    Quantized8Asymm = 100000,
    QuantizedS32 = 100001,
    QuantizedS8 = 100002,
    Quantized4Asymm = 100003,
    QuantizedS4 = 100004,
    QuantizedS16 = 100005,
    QuantizedS1 = 100006,
};

/// The family of a dtype.
enum class dtype_category : std::uint8_t { floating, integer, boolean, complex, lowbit, quantized, other };

/// The category's word in messages and tables ("float", "int", "quantized", ...).
constexpr std::string_view category_name(dtype_category category) noexcept {
    constexpr std::string_view names[] = {"float", "int", "bool", "complex", "lowbit", "quantized", "other"};
    return names[static_cast<std::size_t>(category)];
}

/// How NumPy sees a dtype: a built-in dtype (quantized ones with `metadata`), a registered user dtype, or not at all.
enum class numpy_form : std::uint8_t { builtin, user_dtype, none };

/// How a packed dtype stores one value in `bits` bits.
enum class lowbit_coding : std::uint8_t {
    none,             ///< not packed
    odd,              ///< odd -(2^b-1)..2^b-1 as (v + 2^b-1) / 2 (IntB1/2/4, UintB4)
    twos_complement,  ///< -(2^(b-1))..2^(b-1)-1 as v & mask (QuantizedS4)
    unsigned_value,   ///< 0..2^b-1 as is (Quantized4Asymm)
};

/// Smallest and largest value of a dtype (quantized: the clamp range).
struct value_range {
    double lo;
    double hi;
    friend constexpr bool operator==(value_range a, value_range b) noexcept { return a.lo == b.lo && a.hi == b.hi; }
};

// ---- Param structs, walked with Boost.PFR. PFR (Boost 1.81) cannot reflect field names, so each struct lists its
// metadata keys; core/reflect.hpp checks the counts agree.

/// No params (every non-quantized dtype).
struct no_param {
    static constexpr std::array<std::string_view, 0> field_names{};
};

/// Symmetric quantization: real = scale * q.
struct scale_param {
    float scale = 1.0f;
    static constexpr std::array<std::string_view, 1> field_names{"scale"};
};

/// Asymmetric quantization: real = scale * (q - zero_point).
struct asymm_param {
    float scale = 1.0f;
    std::uint8_t zero_point = 0;
    static constexpr std::array<std::string_view, 2> field_names{"scale", "zero_point"};
};

/// What npybridge knows of one dtype, as plain data.
struct dtype_info {
    dtype_enum id;
    std::string_view name;
    dtype_category category;
    numpy_form form;
    lowbit_coding coding;
    bool is_signed;
    bool is_packed;
    bool is_quantized;
    unsigned bits;             ///< bits per element (packed: 1, 2 or 4)
    std::size_t element_size;  ///< bytes per element; 0 when packed
    value_range range;
    std::string_view storage;            ///< C++ element type (unpacked)
    std::size_t param_fields;            ///< 0 without params
    const std::string_view* param_keys;  ///< metadata keys of the param struct
    detail::short_name numpy;            ///< numpy's name; empty when form is none

    constexpr std::string_view numpy_name() const noexcept { return numpy.view(); }
    constexpr std::uint32_t value() const noexcept { return static_cast<std::uint32_t>(id); }
};

}  // namespace npybridge

#include <npybridge/core/detail/dtype_rows.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// How many dtypes npybridge has.
inline constexpr std::size_t dtype_count = decltype(detail::dtype_rows)::size;

/// The table, in MegDNN's enum order.
inline constexpr std::array<dtype_info, dtype_count> dtype_table =
    detail::make_table(std::make_index_sequence<dtype_count>{});

}  // namespace npybridge

#include <npybridge/core/detail/dtype_index.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// A dtype's row in dtype_table; dtype_count when `id` is not a dtype.
constexpr std::size_t table_index(dtype_enum id) noexcept { return detail::row_of(id); }

/// Whether `id` is one of MegDNN's dtypes.
constexpr bool is_valid(dtype_enum id) noexcept { return table_index(id) != dtype_count; }

/// The entry of a valid dtype (an invalid one: a compile error in a constant expression, std::terminate at run time).
constexpr const dtype_info& info(dtype_enum id) noexcept { return dtype_table[table_index(id)]; }

/// A dtype by MegDNN's name ("QuantizedS8"); nullptr when unknown.
constexpr const dtype_info* find_dtype(std::string_view name) noexcept {
    for (const dtype_info& entry : dtype_table) {
        if (entry.name == name) return &entry;
    }
    return nullptr;
}

/// A dtype by MegDNN's enum value; nullptr when none has it.
constexpr const dtype_info* find_dtype(std::uint32_t value) noexcept {
    const std::size_t index = table_index(static_cast<dtype_enum>(value));
    return index == dtype_count ? nullptr : &dtype_table[index];
}

/// MegDNN's name of a valid dtype.
constexpr std::string_view name_of(dtype_enum id) noexcept { return info(id).name; }

/// Bytes of `count` elements (packed: ceil(count * bits / 8)); conversion_error past size_t.
constexpr std::size_t byte_size(dtype_enum id, std::size_t count) {
    const dtype_info& entry = info(id);
    const std::size_t unit = entry.is_packed ? entry.bits : entry.element_size;
    if (unit != 0 && count > (SIZE_MAX - 7) / unit)
        throw conversion_error("byte_size: " + std::to_string(count) + " elements overflow");
    return entry.is_packed ? (count * entry.bits + 7) / 8 : count * entry.element_size;
}

// ---- Per-dtype types.

/// table_index(Id) as a constant.
template <dtype_enum Id>
inline constexpr std::size_t table_index_v = table_index(Id);

/// C++ type of one unpacked element of Id.
template <dtype_enum Id>
using element_t = typename detail::row_t<table_index_v<Id>>::element_type;

/// Param struct of Id.
template <dtype_enum Id>
using param_t = typename detail::row_t<table_index_v<Id>>::param_type;

/// Every param struct the rows use, once each, no_param first: what a dtype can carry.
using params_variant = detail::params_variant_t;

/// Bytes of one element; a compile error for packed dtypes.
template <dtype_enum Id>
constexpr std::size_t element_size() noexcept {
    static_assert(!info(Id).is_packed,
                  "npybridge: a packed low-bit dtype has no per-element byte size; "
                  "use byte_size(id, count) for a whole buffer");
    return info(Id).element_size;
}

// ---- C++ type -> dtype.

/// True when T has a dtype (possibly by narrowing).
template <class T>
inline constexpr bool has_dtype_v = detail::type_mapping<T>::index != dtype_count;

/// The dtype of T; a compile error when it has none.
template <class T>
struct dtype_of {
    static_assert(has_dtype_v<T>,
                  "npybridge: this C++ type has no MegDNN dtype. Supported: float, double (narrowed to "
                  "Float32), npybridge::half, npybridge::bfloat16, int8/16/32, int64 (narrowed to Int32), "
                  "uint8/16, bool, std::complex<float>. Convert to one of those first.");
    static constexpr dtype_enum value = dtype_table[has_dtype_v<T> ? detail::type_mapping<T>::index : 0].id;
    /// True when T is wider than its dtype.
    static constexpr bool narrowing = detail::type_mapping<T>::narrows;
};

/// dtype_of<T>::value.
template <class T>
inline constexpr dtype_enum dtype_of_v = dtype_of<T>::value;

/// dtype_of<T>::narrowing.
template <class T>
inline constexpr bool is_narrowing_v = dtype_of<T>::narrowing;

// ---- The dtype object.

/// A dtype with its params (scale, and zero_point for the Asymm dtypes), always validated.
class dtype {
public:
    using params = params_variant;

    /// A dtype without params; dtype_error for a quantized dtype or an invalid enum value.
    dtype(dtype_enum id);  // NOLINT: implicit on purpose, `dtype t = dtype_enum::Int8`

    /// The plain dtype of dtype_table[row]; dtype_error for a quantized row or one past the end.
    static const dtype& of_row(std::size_t row);

    /// A quantized dtype from numbers (zero_point exactly for the Asymm dtypes); dtype_error / metadata_error name the
    /// culprit.
    static dtype quantized(dtype_enum id, double scale, std::optional<long long> zero_point = std::nullopt);

    /// A dtype from `id`'s param struct, validated.
    template <class Param>
    static dtype with(dtype_enum id, const Param& param);

    dtype_enum id() const noexcept { return m_id; }
    const dtype_info& info() const noexcept { return npybridge::info(m_id); }
    std::string_view name() const noexcept { return info().name; }
    bool is_quantized() const noexcept { return info().is_quantized; }

    /// The param struct (Param must be param_t of this dtype).
    template <class Param>
    const Param& param() const {
        return std::get<Param>(m_params);
    }
    const params& all_params() const noexcept { return m_params; }

    /// Scale of a quantized dtype; nullopt otherwise.
    std::optional<float> scale() const noexcept { return field<float>("scale"); }
    /// Zero point of an Asymm dtype; nullopt otherwise.
    std::optional<int> zero_point() const noexcept { return field<int>("zero_point"); }

    /// "Int8", "QuantizedS8(scale=0.5)", "Quantized8Asymm(scale=0.25, zero_point=128)".
    std::string to_string() const;

    /// Equal when the dtype and every param field are (floats exactly).
    friend bool operator==(const dtype& a, const dtype& b) noexcept {
        if (a.m_id != b.m_id || a.m_params.index() != b.m_params.index()) return false;
        return detail::values_equal(detail::variant_values(a.m_params), detail::variant_values(b.m_params));
    }
    friend bool operator!=(const dtype& a, const dtype& b) noexcept { return !(a == b); }

    /// Mixes the dtype and its params (std::hash<dtype> calls it).
    std::size_t hash() const noexcept;

    /// Calls f(param_t<id>{}): runtime id to compile-time struct.
    template <class F>
    static void with_params(dtype_enum id, F&& f);

private:
    template <class T>
    std::optional<T> field(std::string_view key) const noexcept;

    struct no_check {};
    constexpr dtype(dtype_enum id, no_check) noexcept : m_id(id) {}

    /// One plain dtype per row, made at compile time (quantized rows hold a placeholder of_row never returns).
    template <std::size_t... I>
    static constexpr std::array<dtype, dtype_count> make_plain_rows(std::index_sequence<I...>) noexcept {
        return {dtype(dtype_table[I].is_quantized ? dtype_enum::Float32 : dtype_table[I].id, no_check{})...};
    }
    static const std::array<dtype, dtype_count> plain_rows;

    dtype_enum m_id;
    params m_params{};
};

/// Example: a QuantizedS8 dtype with its scale.
/// ```cpp
/// #include <npybridge/core/dtype.hpp>
///
/// std::string int8_codes(float scale) {
///     const npybridge::dtype q = npybridge::dtype::quantized(npybridge::dtype_enum::QuantizedS8, scale);
///     return q.to_string();  // "QuantizedS8(scale=0.5)" for 0.5
/// }
/// ```

// ---- Definitions

inline dtype::dtype(dtype_enum id) : m_id(id) {
    if (!is_valid(id))
        throw dtype_error("npybridge: enum value " + std::to_string(static_cast<std::uint32_t>(id)) +
                          " is not a MegDNN dtype");
    if (npybridge::info(id).is_quantized) {
        throw dtype_error(std::string(npybridge::info(id).name) + " needs params: use dtype::quantized(id, scale" +
                          (npybridge::info(id).param_fields > 1 ? ", zero_point)" : ")"));
    }
}

inline const dtype& dtype::of_row(std::size_t row) {
    if (row >= dtype_count || dtype_table[row].is_quantized) {
        throw dtype_error("npybridge: dtype table row " + std::to_string(row) + " is not a plain dtype");
    }
    return plain_rows[row];
}

inline dtype dtype::quantized(dtype_enum id, double scale, std::optional<long long> zero_point) {
    if (!is_valid(id) || !npybridge::info(id).is_quantized) {
        throw dtype_error(std::string(is_valid(id) ? npybridge::info(id).name : "this enum value") +
                          " is not a quantized dtype");
    }
    detail::param_values values = detail::default_values(detail::param_slots[table_index(id)]);
    detail::fill_values(npybridge::info(id), values, scale, zero_point);
    return detail::dtype_from_values(id, values);
}

template <class Param>
dtype dtype::with(dtype_enum id, const Param& param) {
    if (!is_valid(id)) throw dtype_error("npybridge: not a MegDNN dtype");
    constexpr std::size_t slot = detail::alternative_index<Param>(static_cast<params_variant*>(nullptr));
    if constexpr (slot < std::variant_size_v<params_variant>) {
        if (detail::param_slots[table_index(id)] == slot) {
            detail::check_values(npybridge::info(id), detail::values_of(param));
            dtype result(id, no_check{});
            result.m_params = param;
            return result;
        }
    }
    throw dtype_error(std::string(npybridge::info(id).name) + ": wrong param struct for this dtype");
}

inline std::string dtype::to_string() const {
    const std::string fields = detail::params_text(detail::variant_values(m_params));
    return std::string(name()) + (fields.empty() ? "" : "(" + fields + ")");
}

inline std::size_t dtype::hash() const noexcept {
    const std::size_t seed = static_cast<std::size_t>(m_id) * 0x9e3779b97f4a7c15ULL;
    return detail::params_hash(seed, detail::variant_values(m_params));
}

template <class F>
void dtype::with_params(dtype_enum id, F&& f) {
    const std::size_t row = table_index(id);
    if (row != dtype_count)
        detail::call_with_alternative(detail::param_slots[row], f, static_cast<params_variant*>(nullptr));
}

template <class T>
std::optional<T> dtype::field(std::string_view key) const noexcept {
    const detail::maybe<double> value = detail::field_value(detail::variant_values(m_params), key);
    if (!value) return std::nullopt;
    if constexpr (std::is_same_v<T, float>) {
        return narrow_to_float(*value);  // by bits: a subnormal scale survives flush-to-zero
    } else {
        return static_cast<T>(*value);
    }
}

// Constant-initialized: no start-up code.
inline const std::array<dtype, dtype_count> dtype::plain_rows =
    dtype::make_plain_rows(std::make_index_sequence<dtype_count>{});

inline dtype detail::dtype_from_values(dtype_enum id, const param_values& values) {
    std::optional<dtype> result;
    dtype::with_params(id, [&](auto param) { result = dtype::with(id, param_from_values<decltype(param)>(values)); });
    if (!result)
        throw dtype_error("npybridge: enum value " + std::to_string(static_cast<std::uint32_t>(id)) +
                          " is not a MegDNN dtype");
    return *std::move(result);
}

}  // namespace npybridge

template <>
struct std::hash<npybridge::dtype> {
    std::size_t operator()(const npybridge::dtype& type) const noexcept { return type.hash(); }
};
