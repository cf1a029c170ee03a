// npybridge/core/quantization.hpp — quantize / dequantize for a dtype object or a dtype known at compile time.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/detail/quantize_values.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Quantizes one real value; the result is in the dtype's range, as int32.
inline std::int32_t quantize(const dtype& type, float value);

/// The real value of a code; value_range_error names a code outside the range (a QuantizedS4 100).
inline float dequantize(const dtype& type, std::int32_t q);

/// Typed forms, for a dtype known at compile time.
template <dtype_enum Id>
element_t<Id> quantize(float value, const param_t<Id>& param) noexcept;

template <dtype_enum Id>
float dequantize(element_t<Id> q, const param_t<Id>& param) noexcept;

/// Example: MegDNN's rounding (half away from zero) and clamp, and back.
/// ```cpp
/// #include <npybridge/core/quantization.hpp>
///
/// float through_int8(float x) {  // 1.25 -> code 3 -> 1.5 at scale 0.5
///     const npybridge::dtype q8 = npybridge::dtype::quantized(npybridge::dtype_enum::QuantizedS8, 0.5f);
///     return npybridge::dequantize(q8, npybridge::quantize(q8, x));
/// }
/// ```

// ---- Definitions

inline std::int32_t quantize(const dtype& type, float value) {
    if (!type.is_quantized()) throw dtype_error("quantize: " + type.to_string() + " is not a quantized dtype");
    return detail::quantize_value(type.info(), *type.scale(), type.zero_point().value_or(0), value);
}

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
