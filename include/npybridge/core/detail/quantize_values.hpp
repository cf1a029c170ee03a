// npybridge/core/detail/quantize_values.hpp — one value quantized or dequantized by MegDNN's arithmetic.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/float_mode.hpp>
#include <npybridge/core/detail/quantize_kernels.hpp>
#include <npybridge/core/dtype.hpp>

#include <cstdint>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

// MegDNN's arithmetic (dtype.h): q = clamp(round_half_away(x / scale) + zero_point), NaN -> lo;
// x = (q - zero_point) * scale.

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
}  // namespace npybridge
