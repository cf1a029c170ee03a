// npybridge/array_quantization.hpp — whole arrays quantized into tensors, tensors dequantized into arrays, with
// MegDNN's arithmetic bit for bit (the scalar quantize / dequantize of core/quantization.hpp, element by element).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/core/quantization.hpp>
#include <npybridge/core/detail/float_mode.hpp>
#include <npybridge/core/detail/quantize_kernels.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// The dtype's quantization arithmetic, or a dtype_error naming the call and the dtype.
inline quantize_rule rule_for(const dtype& type, const char* call) {
    if (!type.is_quantized())
        throw dtype_error(std::string(call) + ": " + type.to_string() + " is not a quantized dtype");
    return quantize_rule_of(type.info(), *type.scale(), type.zero_point().value_or(0));
}

/// Real values as a C-contiguous native float32 array, MegDNN's input: a float32 array as it is, bool, integer and
/// float arrays (and array-likes) through NumPy's cast; anything else a dtype_error naming its dtype.
inline object float32_values(PyObject* values) {
    object array = as_array(values);
    auto* read = reinterpret_cast<PyArrayObject*>(array.get());
    const char kind = descr_kind(PyArray_DESCR(read));
    if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f') {
        throw dtype_error("quantize: values must be real numbers, got a " + descr_text(PyArray_DESCR(read)) + " array");
    }
    PyObject* floats = PyArray_FROM_OTF(array.get(), NPY_FLOAT32, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
    if (floats == nullptr) throw_numpy_failure("quantize: reading the values as float32");
    return object::steal(floats);
}

/// Codes of `rule` for n floats into fresh memory of `type` (packed dtypes through one byte per code).
inline void quantize_into(const dtype& type, const quantize_rule& rule, const float* in, std::size_t n, void* out,
                          const tensor_layout& layout, lowbit_layout packing) {
    const dtype_info& info = type.info();
    if (info.is_packed) {
        const std::unique_ptr<std::uint8_t[]> codes(new std::uint8_t[n > 0 ? n : 1]);  // not zeroed: all written
        without_gil_if_large(n * sizeof(float), [&] {
            if (info.range.lo < 0) {
                quantize_floats(in, n, rule, reinterpret_cast<std::int8_t*>(codes.get()));
            } else {
                quantize_floats(in, n, rule, codes.get());
            }
            pack_fresh(type.id(), codes.get(), {n, layout.innermost()}, out, packing);
        });
        return;
    }
    without_gil_if_large(n * sizeof(float), [&] {
        switch (static_cast<int>(info.element_size) * (info.range.lo < 0 ? 1 : -1)) {
            case 1: quantize_floats(in, n, rule, static_cast<std::int8_t*>(out)); break;
            case -1: quantize_floats(in, n, rule, static_cast<std::uint8_t*>(out)); break;
            case 2: quantize_floats(in, n, rule, static_cast<std::int16_t*>(out)); break;
            default: quantize_floats(in, n, rule, static_cast<std::int32_t*>(out)); break;
        }
    });
}

/// The first code of n outside the dtype's codes (QuantizedS1's byte holds more than 0 and 1); n when none is.
template <class Code>
std::size_t first_invalid_code(const Code* codes, std::size_t n, const value_range& range) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        if (codes[i] < range.lo || codes[i] > range.hi) return i;
    }
    return n;
}

/// Codes of `type` at `data` (C order, one element each: packed dtypes unpacked) as float32 values into `out`.
inline void dequantize_into(const dtype& type, const void* data, std::size_t n, float* out,
                            const tensor_layout& layout) {
    const dtype_info& info = type.info();
    const auto zero_point = static_cast<std::int32_t>(type.zero_point().value_or(0));
    const float scale = *type.scale();
    const auto run = [&](const auto* codes) {
        if (codes_narrower_than_storage(info)) {
            const std::size_t bad = first_invalid_code(codes, n, info.range);
            if (bad != n) {
                throw value_range_error("dequantize: code " + std::to_string(static_cast<long long>(codes[bad])) +
                                        " at index " + index_text(bad, layout) + " is not a " + type.to_string() +
                                        " code (" + std::to_string(static_cast<long long>(info.range.lo)) + ".." +
                                        std::to_string(static_cast<long long>(info.range.hi)) + ")");
            }
        }
        without_gil_if_large(n * sizeof(float), [&] { dequantize_codes(codes, n, zero_point, scale, out); });
    };
    const std::size_t size = info.is_packed ? 1 : info.element_size;
    if (size == 1) {
        info.range.lo < 0 ? run(static_cast<const std::int8_t*>(data)) : run(static_cast<const std::uint8_t*>(data));
    } else if (size == 2) {
        run(static_cast<const std::int16_t*>(data));
    } else {
        run(static_cast<const std::int32_t*>(data));
    }
}

}  // namespace detail

/// Quantizes real values (an array or anything NumPy makes one of: bool, integers, floats) into a new tensor
/// of a quantized dtype, the array's shape: each value made float32 (MegDNN's input), then MegDNN's
/// clamp(round_half_away(x / scale) + zero_point), NaN -> the lowest code, bit for bit the scalar
/// quantize(type, x). Packed dtypes (QuantizedS4, Quantized4Asymm) go straight into packed storage. Runs
/// without the GIL from 1 MiB and in IEEE mode whatever the thread's FPU mode. Throws dtype_error for a dtype
/// that is not quantized and for values that are not real numbers (complex, text, objects), naming them.
template <class Tensor = tensor>
Tensor quantize(PyObject* values, const dtype& type, const placement_t<Tensor>& where = default_placement<Tensor>()) {
    static_assert(check_adapter<Tensor>());
    using adapter = tensor_adapter<Tensor>;
    const detail::quantize_rule rule = detail::rule_for(type, "quantize");
    const detail::ieee_float_mode ieee;
    const object floats = detail::float32_values(values);
    auto* array = reinterpret_cast<PyArrayObject*>(floats.get());
    tensor_layout layout;
    detail::checked_layout<Tensor>(array, layout);
    const tensor_layout contiguous = tensor_layout::contiguous(layout.shape.data(), layout.ndim);
    Tensor made = detail::make_dense<Tensor>(type, contiguous, default_layout(type.id()), where);
    const lowbit_layout packing = type.info().is_packed ? adapter::packed_layout(made) : lowbit_layout::compact;
    detail::quantize_into(type, rule, static_cast<const float*>(PyArray_DATA(array)), contiguous.count(),
                          adapter::data(made), contiguous, packing);
    return made;
}

/// The real values a quantized tensor stands for, as a new float32 array of its shape: MegDNN's
/// (code - zero_point) * scale for each code, bit for bit the scalar dequantize(type, code). Any layout and
/// packing. Throws dtype_error for a tensor that is not quantized, and value_range_error naming the code and
/// its index for a byte that is not one of the dtype's codes (a QuantizedS1 5).
template <class Tensor>
object dequantize(const Tensor& source) {
    static_assert(check_adapter<Tensor>());
    const dtype type = tensor_adapter<Tensor>::dtype_of(source);
    detail::rule_for(type, "dequantize");
    const detail::ieee_float_mode ieee;
    object codes = to_array(source, share_policy::try_share);
    codes = detail::contiguous_copy(reinterpret_cast<PyArrayObject*>(codes.get()), "dequantize: reading the codes");
    auto* read = reinterpret_cast<PyArrayObject*>(codes.get());
    PyObject* made = PyArray_SimpleNew(PyArray_NDIM(read), PyArray_DIMS(read), NPY_FLOAT32);
    if (made == nullptr) detail::throw_numpy_failure("dequantize: allocating the float32 array");
    object result = object::steal(made);
    detail::dequantize_into(type, PyArray_DATA(read), static_cast<std::size_t>(PyArray_SIZE(read)),
                            static_cast<float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(made))),
                            tensor_adapter<Tensor>::layout_of(source));
    return result;
}

}  // namespace npybridge
