// npybridge/quantization.hpp — dtypes with their params (scale, zero_point): validation, equality, quantize / dequantize.
#pragma once

#include <npybridge/config.hpp>
#include <npybridge/dtype.hpp>
#include <npybridge/errors.hpp>
#include <npybridge/reflect.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

namespace detail {

inline std::string number_text(double value) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.9g", value);
    return buffer;
}

/// What one reflected param field accepts, decided by its C++ type: a float
/// field is a finite real > 0 (scale), an integer field an integer inside the
/// dtype's value range (zero_point). Throws metadata_error naming dtype and key.
template <class Field>
void check_field(const dtype_info& type, std::string_view key, double value) {
    auto fail = [&](const char* why) {
        throw metadata_error(std::string(type.name) + ": " + std::string(key) + " " + number_text(value) + why);
    };
    if constexpr (std::is_floating_point_v<Field>) {
        if (!std::isfinite(value)) fail(" is not finite");
        const auto narrowed = static_cast<Field>(value);
        if (!std::isfinite(narrowed)) fail(" does not fit a float32");
        if (value > 0 && !(narrowed > 0)) {
            fail((" is too small for a float32 (it rounds to 0; the smallest positive one is " +
                  number_text(static_cast<double>(std::numeric_limits<Field>::denorm_min())) + ")").c_str());
        }
        if (!(narrowed > 0)) fail(" must be > 0");
    } else {
        static_assert(std::is_integral_v<Field>, "npybridge: a param field must be a float or an integer");
        if (value != std::floor(value)) fail(" is not an integer");
        if (value < type.range.lo || value > type.range.hi) {
            fail((" is outside [" + number_text(type.range.lo) + ", " + number_text(type.range.hi) + "]").c_str());
        }
    }
}

template <class P, class = void>
struct has_scale : std::false_type {};
template <class P>
struct has_scale<P, std::void_t<decltype(std::declval<const P&>().scale)>> : std::true_type {};
template <class P, class = void>
struct has_zero_point : std::false_type {};
template <class P>
struct has_zero_point<P, std::void_t<decltype(std::declval<const P&>().zero_point)>> : std::true_type {};

}  // namespace detail

/// A dtype together with its params. Plain dtypes have none; quantized ones
/// carry scale (and zero_point for the two Asymm dtypes), always validated.
class dtype {
public:
    using params = params_variant;  // derived from the table's rows

    /// A dtype without params. Throws dtype_error for a quantized dtype or an
    /// enum value that is not a dtype.
    dtype(dtype_enum id) : m_id(id) {  // NOLINT: implicit on purpose, `dtype t = dtype_enum::Int8`
        if (!is_valid(id)) throw dtype_error("npybridge: enum value " + std::to_string(static_cast<std::uint32_t>(id)) + " is not a MegDNN dtype");
        if (npybridge::info(id).is_quantized) {
            throw dtype_error(std::string(npybridge::info(id).name) + " needs params: use dtype::quantized(id, scale" +
                              (npybridge::info(id).param_fields > 1 ? ", zero_point)" : ")"));
        }
    }

    /// The plain dtype of dtype_table[row], for code that already found the
    /// row in a table. Throws dtype_error for a quantized row or one past the end.
    static const dtype& of_row(std::size_t row) {
        if (row >= dtype_count || dtype_table[row].is_quantized) {
            throw dtype_error("npybridge: dtype table row " + std::to_string(row) + " is not a plain dtype");
        }
        return plain_rows[row];
    }

    /// A quantized dtype from plain numbers. zero_point must be given exactly
    /// for the Asymm dtypes. Throws dtype_error / metadata_error naming the culprit.
    static dtype quantized(dtype_enum id, double scale, std::optional<long long> zero_point = std::nullopt) {
        if (!is_valid(id) || !npybridge::info(id).is_quantized) {
            throw dtype_error(std::string(is_valid(id) ? npybridge::info(id).name : "this enum value") + " is not a quantized dtype");
        }
        dtype result(id, no_check{});
        with_params(id, [&](auto param) {
            bool takes_zero_point = false;
            reflect::for_each_field(param, [&](std::string_view key, auto& field) {
                using field_t = std::remove_reference_t<decltype(field)>;
                if (key == "scale") {
                    detail::check_field<field_t>(npybridge::info(id), key, scale);
                    field = static_cast<field_t>(scale);
                } else if (key == "zero_point") {
                    takes_zero_point = true;
                    if (!zero_point) throw metadata_error(std::string(npybridge::info(id).name) + ": zero_point is missing");
                    detail::check_field<field_t>(npybridge::info(id), key, static_cast<double>(*zero_point));
                    field = static_cast<field_t>(*zero_point);
                }
            });
            if (zero_point && !takes_zero_point) {
                throw metadata_error(std::string(npybridge::info(id).name) + ": zero_point is not a param of a symmetric dtype");
            }
            result.m_params = param;
        });
        return result;
    }

    /// A dtype from a param struct of the right type for `id` (validated).
    template <class Param>
    static dtype with(dtype_enum id, const Param& param) {
        if (!is_valid(id)) throw dtype_error("npybridge: not a MegDNN dtype");
        dtype result(id, no_check{});
        bool matched = false;
        with_params(id, [&](auto expected) {
            if constexpr (std::is_same_v<decltype(expected), Param>) {
                Param copy = param;
                reflect::for_each_field(copy, [&](std::string_view key, auto& field) {
                    using field_t = std::remove_reference_t<decltype(field)>;
                    detail::check_field<field_t>(npybridge::info(id), key, static_cast<double>(field));
                });
                result.m_params = copy;
                matched = true;
            }
        });
        if (!matched) throw dtype_error(std::string(npybridge::info(id).name) + ": wrong param struct for this dtype");
        return result;
    }

    dtype_enum id() const noexcept { return m_id; }
    const dtype_info& info() const noexcept { return npybridge::info(m_id); }
    std::string_view name() const noexcept { return info().name; }
    bool is_quantized() const noexcept { return info().is_quantized; }

    /// The param struct; Param must be param_t of this dtype.
    template <class Param>
    const Param& param() const {
        return std::get<Param>(m_params);
    }
    const params& all_params() const noexcept { return m_params; }

    /// Scale of a quantized dtype (its params' `scale` field); nullopt otherwise.
    std::optional<float> scale() const noexcept {
        return std::visit(
            [](const auto& p) -> std::optional<float> {
                if constexpr (detail::has_scale<std::decay_t<decltype(p)>>::value) return p.scale;
                return std::nullopt;
            },
            m_params);
    }
    /// Zero point of an Asymm dtype (its params' `zero_point` field); nullopt otherwise.
    std::optional<int> zero_point() const noexcept {
        return std::visit(
            [](const auto& p) -> std::optional<int> {
                if constexpr (detail::has_zero_point<std::decay_t<decltype(p)>>::value) return p.zero_point;
                return std::nullopt;
            },
            m_params);
    }

    /// "Int8", "QuantizedS8(scale=0.5)", "Quantized8Asymm(scale=0.25, zero_point=128)".
    std::string to_string() const {
        std::string text(name());
        std::visit(
            [&](auto param) {
                std::string fields;
                reflect::for_each_field(param, [&](std::string_view key, auto& field) {
                    if (!fields.empty()) fields += ", ";
                    fields += std::string(key) + "=" + detail::number_text(static_cast<double>(field));
                });
                if (!fields.empty()) text += "(" + fields + ")";
            },
            m_params);
        return text;
    }

    /// Equal when the dtype and every param field are equal (floats exactly).
    friend bool operator==(const dtype& a, const dtype& b) noexcept {
        if (a.m_id != b.m_id || a.m_params.index() != b.m_params.index()) return false;
        return std::visit(
            [&](const auto& pa) {
                using P = std::decay_t<decltype(pa)>;
                return reflect::fields_equal(pa, std::get<P>(b.m_params));
            },
            a.m_params);
    }
    friend bool operator!=(const dtype& a, const dtype& b) noexcept { return !(a == b); }

    std::size_t hash() const noexcept {
        std::size_t seed = std::hash<std::uint32_t>{}(static_cast<std::uint32_t>(m_id));
        std::visit(
            [&](auto param) {
                reflect::for_each_field(param, [&](std::string_view, auto& field) {
                    using field_t = std::remove_reference_t<decltype(field)>;
                    seed ^= std::hash<field_t>{}(field) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
                });
            },
            m_params);
        return seed;
    }

    /// Calls f(param_t<id>{}) with the param struct type of `id` (runtime to
    /// compile time, derived from the table).
    template <class F>
    static void with_params(dtype_enum id, F&& f) {
        visit_row(id, std::forward<F>(f), std::make_index_sequence<dtype_count>{});
    }

private:
    struct no_check {};
    constexpr dtype(dtype_enum id, no_check) noexcept : m_id(id) {}

    /// One dtype object per table row, made at compile time (quantized rows
    /// hold a placeholder that of_row never hands out).
    template <std::size_t... I>
    static constexpr std::array<dtype, dtype_count> make_plain_rows(std::index_sequence<I...>) noexcept {
        return {dtype(dtype_table[I].is_quantized ? dtype_enum::Float32 : dtype_table[I].id, no_check{})...};
    }
    static const std::array<dtype, dtype_count> plain_rows;

    template <class F, std::size_t... I>
    static void visit_row(dtype_enum id, F&& f, std::index_sequence<I...>) {
        static_cast<void>(((dtype_table[I].id == id ? (f(typename detail::row_t<I>::param_type{}), true) : false) || ...));
    }

    dtype_enum m_id;
    params m_params{};
};

// Constant-initialized (the initializer is a constant expression): no start-up code.
inline const std::array<dtype, dtype_count> dtype::plain_rows = dtype::make_plain_rows(std::make_index_sequence<dtype_count>{});

// ---- quantize / dequantize, following MegDNN's C++ (dtype.h):
// q = clamp(round_half_away(x / scale) + zero_point), NaN -> the lower bound;
// x = (q - zero_point) * scale.

namespace detail {

/// Clamp bounds as floats. QuantizedS32 clamps at 2147483520, the largest
/// float below 2^31, as MegDNN does (2^31-1 is not a float).
inline float clamp_hi(const dtype_info& type) noexcept {
    return type.id == dtype_enum::QuantizedS32 ? 2147483520.0f : static_cast<float>(type.range.hi);
}

inline std::int32_t quantize_value(const dtype_info& type, float scale, int zero_point, float value) noexcept {
    const float lo = static_cast<float>(type.range.lo);
    const float hi = clamp_hi(type);
    float q = std::round(value / scale) + static_cast<float>(zero_point);
    if (std::isnan(q)) q = lo;
    q = q < lo ? lo : (q > hi ? hi : q);
    return static_cast<std::int32_t>(q);
}

}  // namespace detail

/// Quantizes one real value for a quantized dtype; the result is in the
/// dtype's range (as int32 whatever the storage).
inline std::int32_t quantize(const dtype& type, float value) {
    if (!type.is_quantized()) throw dtype_error("quantize: " + type.to_string() + " is not a quantized dtype");
    return detail::quantize_value(type.info(), *type.scale(), type.zero_point().value_or(0), value);
}

/// The real value a quantized integer stands for.
inline float dequantize(const dtype& type, std::int32_t q) {
    if (!type.is_quantized()) throw dtype_error("dequantize: " + type.to_string() + " is not a quantized dtype");
    return static_cast<float>(q - type.zero_point().value_or(0)) * *type.scale();
}

/// Typed form for code that knows the dtype at compile time.
template <dtype_enum Id>
element_t<Id> quantize(float value, const param_t<Id>& param) noexcept {
    static_assert(info(Id).is_quantized, "npybridge: quantize needs a quantized dtype");
    int zero_point = 0;
    if constexpr (std::is_same_v<param_t<Id>, asymm_param>) zero_point = param.zero_point;
    return static_cast<element_t<Id>>(detail::quantize_value(info(Id), param.scale, zero_point, value));
}

template <dtype_enum Id>
float dequantize(element_t<Id> q, const param_t<Id>& param) noexcept {
    static_assert(info(Id).is_quantized, "npybridge: dequantize needs a quantized dtype");
    int zero_point = 0;
    if constexpr (std::is_same_v<param_t<Id>, asymm_param>) zero_point = param.zero_point;
    return static_cast<float>(static_cast<std::int32_t>(q) - zero_point) * param.scale;
}

}  // namespace npybridge

template <>
struct std::hash<npybridge::dtype> {
    std::size_t operator()(const npybridge::dtype& type) const noexcept { return type.hash(); }
};
