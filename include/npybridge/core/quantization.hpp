// npybridge/core/quantization.hpp — quantize / dequantize for a dtype object or a dtype known at compile time.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/detail/float_mode.hpp>
#include <npybridge/core/detail/quantize_kernels.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

// ---- MegDNN's arithmetic (dtype.h): q = clamp(round_half_away(x / scale) + zero_point), NaN -> lo; x = (q -
// zero_point) * scale.

namespace detail {

/// Clamp bounds as floats: QuantizedS32 clamps at 2147483520, as MegDNN (2^31-1 is no float).
inline float clamp_hi(const dtype_info& type) noexcept {
    return type.id == dtype_enum::QuantizedS32 ? 2147483520.0f : static_cast<float>(type.range.hi);
}

/// MegDNN's quantization arithmetic for a dtype and its params.
inline quantize_rule quantize_rule_of(const dtype_info& type, float scale, int zero_point) noexcept {
    return quantize_rule{scale, static_cast<float>(zero_point), static_cast<float>(type.range.lo), clamp_hi(type)};
}

inline std::int32_t quantize_value(const dtype_info& type, float scale, int zero_point, float value) noexcept {
    const ieee_float_mode ieee;  // subnormals count in any thread mode
    return quantize_rule_of(type, scale, zero_point)(value);
}

/// (q - zero_point) * scale, subnormals kept in any thread mode.
inline float dequantize_value(std::int32_t offset, float scale) noexcept {
    const ieee_float_mode ieee;
    return static_cast<float>(offset) * scale;
}

}  // namespace detail

/// Quantizes one real value; the result is in the dtype's range, as int32.
inline std::int32_t quantize(const dtype& type, float value) {
    if (!type.is_quantized()) throw dtype_error("quantize: " + type.to_string() + " is not a quantized dtype");
    return detail::quantize_value(type.info(), *type.scale(), type.zero_point().value_or(0), value);
}

/// The real value of a code; value_range_error names a code outside the range (a QuantizedS4 100).
inline float dequantize(const dtype& type, std::int32_t q) {
    if (!type.is_quantized()) throw dtype_error("dequantize: " + type.to_string() + " is not a quantized dtype");
    const value_range range = type.info().range;
    if (static_cast<double>(q) < range.lo || static_cast<double>(q) > range.hi) {
        throw value_range_error("dequantize: code " + std::to_string(q) + " is not a " + type.to_string() + " code (" +
                                std::to_string(static_cast<long long>(range.lo)) + ".." +
                                std::to_string(static_cast<long long>(range.hi)) + ")");
    }
    // In range, q - zero_point cannot overflow.
    return detail::dequantize_value(q - type.zero_point().value_or(0), *type.scale());
}

/// Typed form, for a dtype known at compile time.
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
    return detail::dequantize_value(static_cast<std::int32_t>(q) - zero_point, param.scale);
}

}  // namespace npybridge
