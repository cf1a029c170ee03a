// npybridge/detail/array_quantizing.hpp — quantize() and dequantize()'s parts: arithmetic, float32 input, kernels.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/array_from_tensor.hpp>
#include <npybridge/detail/tensor_from_array.hpp>
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

/// The dtype's quantization arithmetic; dtype_error names the call and dtype.
inline quantize_rule rule_for(const dtype& type, const char* call) {
    if (!type.is_quantized()) throw_not_quantized(call, type);
    return quantize_rule_of(type.info(), *type.scale(), type.zero_point().value_or(0));
}

/// Real values as a contiguous native float32 array (NumPy casts bools, integers, floats); dtype_error names any other
/// dtype.
inline object float32_values(PyObject* values) {
    object array = as_array(values);
    auto* read = reinterpret_cast<PyArrayObject*>(array.get());
    const char kind = descr_kind(PyArray_DESCR(read));
    if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f') {
        throw_not_real_values(PyArray_DESCR(read));
    }
    PyObject* floats = PyArray_FROM_OTF(array.get(), NPY_FLOAT32, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
    if (floats == nullptr) throw_numpy_failure("quantize: reading the values as float32");
    return object::steal(floats);
}

/// Codes for n floats packed straight into fresh packed memory, a chunk (8192 codes, or whole rows when rows start
/// bytes) at a time, packed while in cache.
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
        // quantize_floats makes only valid codes: the packer's validity answer is always true.
        pack_rows(active_lowbit_kernels(), codec, info.id, codes.get(), count, row_length,
                  one_stream ? lowbit_layout::compact : packing, out + offset);
    }
}

/// Codes for n floats into fresh memory of `type`.
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

/// The first of n codes outside the dtype's (a QuantizedS1 byte above 1), with the code as read; n when none.
template <class Code>
std::size_t first_invalid_code(const Code* codes, std::size_t n, const value_range& range, long long& code) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        const Code read = codes[i];
        if (read < range.lo || read > range.hi) {
            code = static_cast<long long>(read);
            return i;
        }
    }
    return n;
}

/// Codes at `data` (C order, unpacked) as float32 values into `out`.
inline void dequantize_into(const dtype& type, const void* data, std::size_t n, float* out,
                            const tensor_layout& layout) {
    const dtype_info& info = type.info();
    const auto zero_point = static_cast<std::int32_t>(type.zero_point().value_or(0));
    const float scale = *type.scale();
    const auto run = [&](const auto* codes) {
        std::size_t bad = n;
        long long code = 0;  // the invalid code, read once
        without_gil_if_large(n * sizeof(float), [&] {
            if (codes_narrower_than_storage(info)) bad = first_invalid_code(codes, n, info.range, code);
            if (bad == n) dequantize_codes(codes, n, zero_point, scale, out);
        });
        if (bad != n) {
            throw_invalid_stored_code(code, index_text(bad, layout), type);
        }
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
