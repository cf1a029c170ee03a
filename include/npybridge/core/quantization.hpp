// npybridge/core/quantization.hpp — quantize / dequantize, for a dtype object (dtype.hpp) or a dtype known at compile time.
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

// ---- quantize / dequantize, following MegDNN's C++ (dtype.h):
// q = clamp(round_half_away(x / scale) + zero_point), NaN -> the lower bound;
// x = (q - zero_point) * scale.

namespace detail {

/// Clamp bounds as floats. QuantizedS32 clamps at 2147483520, the largest
/// float below 2^31, as MegDNN does (2^31-1 is not a float).
inline float clamp_hi(const dtype_info& type) noexcept {
    return type.id == dtype_enum::QuantizedS32 ? 2147483520.0f : static_cast<float>(type.range.hi);
}

/// MegDNN's quantization arithmetic for one dtype and its params.
inline quantize_rule quantize_rule_of(const dtype_info& type, float scale, int zero_point) noexcept {
    return quantize_rule{scale, static_cast<float>(zero_point), static_cast<float>(type.range.lo), clamp_hi(type)};
}

inline std::int32_t quantize_value(const dtype_info& type, float scale, int zero_point, float value) noexcept {
    const ieee_float_mode ieee;  // a subnormal value or scale counts, whatever the thread's mode
    return quantize_rule_of(type, scale, zero_point)(value);
}

/// (q - zero_point) * scale, a subnormal product or scale kept whatever the thread's mode.
inline float dequantize_value(std::int32_t offset, float scale) noexcept {
    const ieee_float_mode ieee;
    return static_cast<float>(offset) * scale;
}

}  // namespace detail

/// Quantizes one real value for a quantized dtype; the result is in the
/// dtype's range (as int32 whatever the storage).
inline std::int32_t quantize(const dtype& type, float value) {
    if (!type.is_quantized()) throw dtype_error("quantize: " + type.to_string() + " is not a quantized dtype");
    return detail::quantize_value(type.info(), *type.scale(), type.zero_point().value_or(0), value);
}

/// The real value a quantized integer stands for. A code outside the dtype's
/// range (a QuantizedS4 100) is a value_range_error naming it.
inline float dequantize(const dtype& type, std::int32_t q) {
    if (!type.is_quantized()) throw dtype_error("dequantize: " + type.to_string() + " is not a quantized dtype");
    const value_range range = type.info().range;
    if (static_cast<double>(q) < range.lo || static_cast<double>(q) > range.hi) {
        throw value_range_error("dequantize: code " + std::to_string(q) + " is not a " + type.to_string() + " code (" +
                                std::to_string(static_cast<long long>(range.lo)) + ".." +
                                std::to_string(static_cast<long long>(range.hi)) + ")");
    }
    // In range, q - zero_point cannot overflow (zero points lie inside the range too).
    return detail::dequantize_value(q - type.zero_point().value_or(0), *type.scale());
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
    return detail::dequantize_value(static_cast<std::int32_t>(q) - zero_point, param.scale);
}

}  // namespace npybridge
