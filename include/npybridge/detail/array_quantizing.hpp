// npybridge/detail/array_quantizing.hpp — what quantize() and dequantize() are made of: the dtype's arithmetic,
// real values as float32, and the kernels run over fresh or packed memory.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/core/quantization.hpp>
#include <npybridge/core/detail/float_mode.hpp>
#include <npybridge/core/detail/quantize_kernels.hpp>

#include <algorithm>
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

/// Codes of `rule` for n floats packed straight into fresh memory of a packed dtype, a chunk at a time: a chunk's
/// one-byte codes are packed while still in cache, so the floats are read once and the packed bytes written once.
/// A chunk is 8192 codes (whole bytes of any width), or whole rows when each of several rows starts a byte of its
/// own.
inline void quantize_packed(const dtype_info& info, const quantize_rule& rule, const float* in, std::size_t n,
                            std::size_t row_length, lowbit_layout packing, std::uint8_t* out) {
    const lowbit_codec codec = make_codec(info);
    const bool one_stream =
        packing == lowbit_layout::compact || row_length == 0 || row_length == n || (row_length * codec.bits) % 8 == 0;
    const std::size_t chunk = one_stream ? 8192 : std::max<std::size_t>(1, 8192 / row_length) * row_length;
    const std::unique_ptr<std::uint8_t[]> codes(new std::uint8_t[std::min(chunk, n > 0 ? n : 1)]);  // all written
    for (std::size_t start = 0; start < n; start += chunk) {
        const std::size_t count = std::min(chunk, n - start);
        if (info.range.lo < 0) {
            quantize_floats(in + start, count, rule, reinterpret_cast<std::int8_t*>(codes.get()));
        } else {
            quantize_floats(in + start, count, rule, codes.get());
        }
        const std::size_t offset =
            one_stream ? start * codec.bits / 8 : start / row_length * row_pitch(info.id, row_length);
        // Every code quantize_floats makes is one of the dtype's (the rule clamps to them): the packer's
        // validity answer is always true here.
        pack_rows(active_lowbit_kernels(), codec, info.id, codes.get(), count, row_length,
                  one_stream ? lowbit_layout::compact : packing, out + offset);
    }
}

/// Codes of `rule` for n floats into fresh memory of `type`.
inline void quantize_into(const dtype& type, const quantize_rule& rule, const float* in, std::size_t n, void* out,
                          const tensor_layout& layout, lowbit_layout packing) {
    const dtype_info& info = type.info();
    without_gil_if_large(n * sizeof(float), [&] {
        if (info.is_packed) {
            quantize_packed(info, rule, in, n, layout.innermost(), packing, static_cast<std::uint8_t*>(out));
            return;
        }
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
}  // namespace npybridge
