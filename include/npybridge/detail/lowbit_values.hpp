// npybridge/detail/lowbit_values.hpp — the one-byte values packed dtypes are filled from, checked, and packed.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/detail/array_layout.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/detail/value_checks.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <cstring>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Sub-byte elements one per byte (DLPack's padded types, ml_dtypes' int4 / uint4) as an int8 / uint8 array of their
/// low bits, sign-extended when signed.
template <class = void>
object low_bits_as_bytes(PyArrayObject* bytes, unsigned bits, bool is_signed) {
    object values = contiguous_copy(bytes, "low-bit values");
    auto* array = reinterpret_cast<PyArrayObject*>(values.get());
    if (values.get() == reinterpret_cast<PyObject*>(bytes)) {  // already contiguous: copy to change it
        PyObject* copied = PyArray_NewCopy(bytes, NPY_CORDER);
        if (copied == nullptr) throw_numpy_failure("low-bit values");
        values = object::steal(copied);
        array = reinterpret_cast<PyArrayObject*>(copied);
    }
    auto* data = static_cast<std::uint8_t*>(PyArray_DATA(array));
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
    const unsigned shift = 8 - bits;
    without_gil_if_large(n, [&] {
        for (std::size_t i = 0; i < n; ++i) {
            const auto low = static_cast<std::uint8_t>(data[i] << shift);
            data[i] = is_signed ? static_cast<std::uint8_t>(static_cast<std::int8_t>(low) >> shift)
                                : static_cast<std::uint8_t>(low >> shift);
        }
    });
    PyArray_Descr* descr = PyArray_DescrFromType(is_signed ? NPY_INT8 : NPY_UINT8);
    PyObject* typed = PyArray_View(array, descr, nullptr);
    if (typed == nullptr) throw_numpy_failure("low-bit values");
    return object::steal(typed);
}

/// One byte per element, valid for the packed dtype, C order (new reference or the array); integers of any width are
/// checked so nothing wraps into a code.
template <class = void>
object lowbit_values(PyArrayObject* array, const dtype& target, const tensor_layout& layout) {
    const dtype_info& type = target.info();
    const int byte_type = type.is_signed ? NPY_INT8 : NPY_UINT8;
    if (const maybe<ml_dtypes_subbyte> kind = ml_dtypes_subbyte_kind(PyArray_DESCR(array))) {
        // ml_dtypes' sub-byte types: the value in each byte's low bits.
        object values = low_bits_as_bytes(array, kind->bits, kind->is_signed);
        return lowbit_values(reinterpret_cast<PyArrayObject*>(values.get()), target, layout);
    }
    if (user_dtype_lookup_hook != nullptr) {
        const std::optional<dtype_enum> user = user_dtype_lookup_hook(descr_type_num(PyArray_DESCR(array)));
        if (user && info(*user).is_packed) {  // intbN holds odd values as int8
            return contiguous_copy(array, std::string(type.name));
        }
    }
    const char kind = descr_kind(PyArray_DESCR(array));
    if (kind != 'i' && kind != 'u' && kind != 'b' && kind != 'f') {  // plan_fill lets whole floats in
        throw_takes_integers(type, PyArray_DESCR(array));
    }
    if (descr_type_num(PyArray_DESCR(array)) == byte_type) return contiguous_copy(array, std::string(type.name));
    if (PyArray_ITEMSIZE(array) == 1 && (kind == 'i') == type.is_signed && kind != 'b') {
        return contiguous_as(array, byte_type, NPY_SAFE_CASTING, std::string(type.name));
    }
    // "Whole and fits a byte" checked of a private copy the cast reads; pack_values' codec judges the value set.
    const object read = private_copy(array, std::string(type.name));
    auto* values = reinterpret_cast<PyArrayObject*>(read.get());
    if (const auto unfit = first_unfit_value(values, *storage_bounds(type)))
        throw_invalid_code(type, unfit->text, index_text(unfit->index, layout));
    return contiguous_as(values, byte_type, NPY_UNSAFE_CASTING, std::string(type.name));
}

/// Packs one-byte values into fresh storage, naming a bad value's index.
template <class = void>
void pack_values(PyArrayObject* values, const dtype& target, void* out, lowbit_layout packing,
                 const tensor_layout& layout) {
    const dtype_info& type = target.info();
    const lowbit_codec codec = make_codec(type);
    const auto* in = static_cast<const std::uint8_t*>(PyArray_DATA(values));
    const std::size_t n = layout.count();
    const bool ok = without_gil_if_large(n, [&] {
        return pack_rows(active_lowbit_kernels(), codec, type.id, in, n, layout.innermost(), packing,
                         static_cast<std::uint8_t*>(out));
    });
    if (ok) return;
    // One private reading names the value, or holding none (another thread fixed it) is packed.
    const byte_buffer read(n);
    const bool none = without_gil_if_large(n, [&] {
        std::memcpy(read.get(), in, n);
        return first_invalid(codec, read.get(), n) == n &&
               pack_rows(active_lowbit_kernels(), codec, type.id, read.get(), n, layout.innermost(), packing,
                         static_cast<std::uint8_t*>(out));
    });
    if (!none) throw_first_invalid(type, codec, read.get(), n, [&](std::size_t i) { return index_text(i, layout); });
}

}  // namespace detail
}  // namespace npybridge
