// npybridge/detail/array_fill.hpp — filling fresh tensor memory from an array (convert.hpp's copies): the
// requantizing refusal, other libraries' bfloat16 / intbN seen through npybridge's own, and the casts numpy
// may make under each narrowing mode (docs/policies.md).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/array_copy.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/policies.hpp>
#include <npybridge/python.hpp>
#include <npybridge/core/tensor.hpp>

#include <optional>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// A quantized array holds codes that mean something only with its scale and
/// zero point: they go only into the same quantized dtype (packed or not).
/// Anything else would requantize or drop the parameters silently.
inline void refuse_requantizing(const std::optional<numpy_dtype_match>& source, const dtype& target) {
    if (!source || !source->type.is_quantized() || source->type == target) return;
    const std::string from = source->type.to_string();
    throw dtype_error((target.is_quantized() ? "requantizing is not supported: the array is " + from +
                                                   ", the tensor wants " + target.to_string()
                                             : "the array holds " + from + " codes; converting them to " +
                                                   target.to_string() + " would drop the quantization parameters") +
                      " (take the raw codes with a view of the plain numpy dtype, e.g. a.view(np." +
                      std::string(source->type.info().numpy_name()) + "), or dequantize first)");
}

/// An array of another library's bfloat16 / intbN (user_dtypes.hpp recognizes MegEngine's and ml_dtypes')
/// seen through npybridge's own user dtype: a view of the same bytes, so that every cast is npybridge's,
/// whichever casts that library registered. Any other array is returned as it is.
inline object through_own_user_dtype(PyArrayObject* array, const std::optional<numpy_dtype_match>& source) {
    object same = object::borrow(reinterpret_cast<PyObject*>(array));
    if (!source || source->type.info().form != numpy_form::user_dtype || user_dtype_descr_hook == nullptr) return same;
    PyArray_Descr* own = user_dtype_descr_hook(source->type.id(), user_dtype_choice::own);
    if (own == nullptr) return same;
    if (descr_type_num(own) == descr_type_num(PyArray_DESCR(array))) {
        Py_DECREF(own);
        return same;
    }
    if (!PyArray_ISNOTSWAPPED(array)) {
        PyArray_Descr* swapped = PyArray_DescrNewByteorder(own, NPY_SWAP);
        Py_DECREF(own);
        if (swapped == nullptr) throw_numpy_failure("npybridge: a byte-swapped view of the " + array_text(array));
        own = swapped;
    }
    PyObject* view = PyArray_View(array, own, nullptr);  // steals own
    if (view == nullptr) throw_numpy_failure("npybridge: a view of the " + array_text(array));
    return object::steal(view);
}

/// A bfloat16 array (any library's: the same bytes) as a fresh float32 array, widened by bits: no cast a
/// library registered and no FPU arithmetic (denormals-are-zero would flush subnormals), NaN payloads kept.
inline object bfloat16_as_float32(PyArrayObject* array) {
    PyArray_Descr* bits = PyArray_DescrFromType(NPY_UINT16);
    if (!PyArray_ISNOTSWAPPED(array)) {
        PyArray_Descr* swapped = PyArray_DescrNewByteorder(bits, NPY_SWAP);
        Py_DECREF(bits);
        if (swapped == nullptr) throw_numpy_failure("npybridge: reading bfloat16 bits");
        bits = swapped;
    }
    PyObject* view = PyArray_View(array, bits, nullptr);  // steals bits
    if (view == nullptr) throw_numpy_failure("npybridge: reading bfloat16 bits");
    const object as_bits = object::steal(view);
    const object native =
        contiguous_as(reinterpret_cast<PyArrayObject*>(as_bits.get()), NPY_UINT16, NPY_SAFE_CASTING, "bfloat16 values");
    auto* native_array = reinterpret_cast<PyArrayObject*>(native.get());
    PyObject* floats = PyArray_SimpleNew(PyArray_NDIM(native_array), PyArray_DIMS(native_array), NPY_FLOAT32);
    if (floats == nullptr) throw_numpy_failure("npybridge: widening bfloat16 values");
    object result = object::steal(floats);
    const auto* in = static_cast<const std::uint16_t*>(PyArray_DATA(native_array));
    auto* widened = static_cast<float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(floats)));
    const auto n = static_cast<std::size_t>(PyArray_SIZE(native_array));
    for (std::size_t i = 0; i < n; ++i) widened[i] = bfloat16{in[i]}.to_float();
    return result;
}

/// Fills contiguous BFloat16 memory from a builtin-typed array, each value rounded ONCE to nearest even by
/// npybridge's own conversion (docs/dtypes.md): whichever bfloat16 type NumPy knows (ml_dtypes' casts
/// round float64 twice, through float32) and whatever the FPU's mode. Bools give 1 for any nonzero byte;
/// complex numbers their real part. Returns false for an array of another kind (numpy's to cast).
inline bool fill_bfloat16(PyArrayObject* array, void* out, std::size_t count) {
    const char kind = descr_kind(PyArray_DESCR(array));
    const npy_intp itemsize = PyArray_ITEMSIZE(array);
    const bool complex = kind == 'c';
    const npy_intp real_size = complex ? itemsize / 2 : itemsize;
    const int wide = kind == 'b'                                  ? NPY_BOOL
                     : kind == 'i'                                ? NPY_INT64
                     : kind == 'u'                                ? NPY_UINT64
                     : (kind == 'f' || complex) && real_size <= 4 ? (complex ? NPY_CFLOAT : NPY_FLOAT32)
                     : (kind == 'f' || complex) && real_size == 8 ? (complex ? NPY_CDOUBLE : NPY_DOUBLE)
                     : (kind == 'f' || complex)                   ? (complex ? NPY_CLONGDOUBLE : NPY_LONGDOUBLE)
                                                                  : -1;
    if (wide < 0 || descr_type_num(PyArray_DESCR(array)) >= NPY_USERDEF) return false;
    const object values = contiguous_as(array, wide, NPY_SAFE_CASTING, "bfloat16 conversion");
    const void* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(values.get()));
    auto* result = static_cast<bfloat16*>(out);
    const std::size_t step = complex ? 2 : 1;  // the real part of each complex number
    const auto convert = [&](const auto* in) {
        for (std::size_t i = 0; i < count; ++i) result[i] = round_to_bfloat16(in[i * step]);
    };
    switch (wide) {
        case NPY_BOOL: {
            const auto* in = static_cast<const npy_bool*>(data);
            for (std::size_t i = 0; i < count; ++i)
                result[i] = bfloat16{static_cast<std::uint16_t>(in[i] ? 0x3F80u : 0u)};
            break;
        }
        case NPY_INT64: convert(static_cast<const std::int64_t*>(data)); break;
        case NPY_UINT64: convert(static_cast<const std::uint64_t*>(data)); break;
        case NPY_FLOAT32:
        case NPY_CFLOAT: convert(static_cast<const float*>(data)); break;
        case NPY_DOUBLE:
        case NPY_CDOUBLE: convert(static_cast<const double*>(data)); break;
        default: convert(static_cast<const long double*>(data)); break;
    }
    return true;
}

/// Fills fresh, contiguous tensor memory from the array (any strides, byte
/// order, alignment; casts as the options allow). `named` is the caller's
/// dtype for messages when `array` is a widened stand-in for it.
inline void fill_copy(PyArrayObject* array, const std::optional<numpy_dtype_match>& source, const dtype& target,
                      void* out, const tensor_layout& layout, lowbit_layout packing, const to_tensor_options& options,
                      PyArray_Descr* named = nullptr) {
    const std::string array_dtype_text = descr_text(named != nullptr ? named : PyArray_DESCR(array));
    if (layout.count() == 0) return;
    if (target.info().is_packed) {
        object values = lowbit_values(array, target, layout);
        pack_values(reinterpret_cast<PyArrayObject*>(values.get()), target, out, packing, layout);
        return;
    }
    if (source && source->narrowed && source->type == target) {
        narrow_into(array, target, out, options.narrow, layout);
        return;
    }
    if (source && source->type.id() == dtype_enum::BFloat16 && target.id() != dtype_enum::BFloat16 &&
        descr_type_num(PyArray_DESCR(array)) >= NPY_USERDEF) {
        // bfloat16 (npybridge's, ml_dtypes' or MegEngine's) into another dtype: its values are float32 values,
        // so it converts as a float32 array would, by the same rules on NumPy 1 and 2 whatever casts the
        // user dtype registered (float16, complex64, integers, ...).
        const object as_float = bfloat16_as_float32(array);
        fill_copy(reinterpret_cast<PyArrayObject*>(as_float.get()),
                  numpy_dtype_match{dtype(dtype_enum::Float32), false}, target, out, layout, packing, options,
                  named != nullptr ? named : PyArray_DESCR(array));
        return;
    }
    const tensor_layout contiguous = tensor_layout::contiguous(layout.shape.data(), layout.ndim);
    if (source && same_storage(*source, target) &&
        static_cast<std::size_t>(PyArray_ITEMSIZE(array)) == target.info().element_size) {
        // The same values in another layout or byte order: the tiled copier.
        copy_plan plan;
        const std::size_t itemsize = target.info().element_size;
        if (copy_plan_of(array, contiguous, itemsize, plan)) {
            without_gil_if_large(plan.count() * itemsize,
                                 [&] { copy_strided(plan, PyArray_DATA(array), out, itemsize, swap_unit_of(array)); });
            return;
        }
    }
    // The casting numpy may do: any byte order / layout change of the same
    // storage; with narrowing='wrap' anything; with 'reject' only a cast that
    // cannot lose a value; with 'checked' numpy's unsafe cast where every
    // value is checked first (integers into any integer, float or complex
    // dtype, floats into float and complex dtypes, complex into complex),
    // else a cast within the kind.
    const bool same = source && same_storage(*source, target);
    const char kind = descr_kind(PyArray_DESCR(array));
    const std::optional<value_bounds> bounds = storage_bounds(target.info());
    const bool into_complex = target.info().category == dtype_category::complex;
    const bool value_checked =
        options.narrow == narrowing::checked && !same && bounds &&
        (kind == 'i' || kind == 'u' || (kind == 'f' && bounds->floating) || (kind == 'c' && into_complex));
    if (value_checked && target.id() == dtype_enum::Float32 && (kind == 'i' || kind == 'u') &&
        PyArray_IS_C_CONTIGUOUS(array) && PyArray_ISALIGNED(array) && PyArray_ISNOTSWAPPED(array) &&
        static_cast<std::size_t>(PyArray_NDIM(array)) == layout.ndim) {
        // The common narrowing (numpy's int64 / int32 into Float32): converted and checked in one pass.
        const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
        auto* floats = static_cast<float*>(out);
        const void* data = PyArray_DATA(array);
        std::size_t bad = n;
        std::string value;
        const auto convert = [&](const auto* in) {
            bad = without_gil_if_large(n * sizeof(*in), [&] { return convert_exact_to_float32(in, floats, n); });
            if (bad != n) value = inexact_text(in[bad], *bounds);
        };
        switch (PyArray_ITEMSIZE(array) * (kind == 'i' ? 1 : -1)) {
            case 4: convert(static_cast<const std::int32_t*>(data)); break;
            case 8: convert(static_cast<const std::int64_t*>(data)); break;
            case -4: convert(static_cast<const std::uint32_t*>(data)); break;
            case -8: convert(static_cast<const std::uint64_t*>(data)); break;
            default: bad = n + 1; break;  // narrower integers: always exact, numpy's cast below
        }
        if (bad < n) {
            throw value_range_error("narrowing " + array_dtype_text + " to Float32: value " + value + " at index " +
                                    index_text(bad, layout) +
                                    " does not fit Float32 (narrowing='checked'; 'wrap' casts anyway)");
        }
        if (bad == n) return;
    }
    const NPY_CASTING casting = same || options.narrow == narrowing::wrap ? NPY_UNSAFE_CASTING
                                : options.narrow == narrowing::reject     ? NPY_SAFE_CASTING
                                : value_checked                           ? NPY_UNSAFE_CASTING
                                                                          : NPY_SAME_KIND_CASTING;
    object view = array_over(target, out, contiguous, true, user_dtype_choice::own);
    auto* destination = reinterpret_cast<PyArrayObject*>(view.get());
    if (!PyArray_CanCastArrayTo(array, PyArray_DESCR(destination), casting)) {
        const char* word = casting == NPY_SAFE_CASTING        ? "safe"
                           : casting == NPY_SAME_KIND_CASTING ? "same_kind"
                                                              : "unsafe";
        const char* advice = options.narrow == narrowing::reject
                                 ? " (narrowing='reject' allows no cast that can lose values; "
                                   "'checked' checks every value, 'wrap' casts anyway)"
                             : options.narrow == narrowing::checked ? " (narrowing='wrap' allows any cast numpy has)"
                                                                    : " (numpy has no cast between them)";
        throw dtype_error("cannot cast numpy " + array_dtype_text + " to " + target.to_string() + " with casting='" +
                          word + "'" + advice);
    }
    if (value_checked && !PyArray_CanCastArrayTo(array, PyArray_DESCR(destination), NPY_SAFE_CASTING)) {
        if (const auto unfit = first_unfit_value(array, *bounds)) {
            throw value_range_error("narrowing " + array_dtype_text + " to " + std::string(target.name()) + ": value " +
                                    unfit->second + " at index " + index_text(unfit->first, layout) + " does not fit " +
                                    std::string(target.name()) + " (narrowing='checked'; 'wrap' casts anyway)");
        }
    }
    if (target.id() == dtype_enum::BFloat16 && fill_bfloat16(array, out, layout.count())) return;
    // numpy's copy loops release the GIL themselves for large copies.
    object source_view = object::borrow(reinterpret_cast<PyObject*>(array));
    if (PyArray_NDIM(array) != PyArray_NDIM(destination)) {  // 0-d array into a shape-(1,) tensor
        PyArray_Dims dims{PyArray_DIMS(destination), PyArray_NDIM(destination)};
        PyObject* reshaped = PyArray_Newshape(array, &dims, NPY_CORDER);
        if (reshaped == nullptr) throw_numpy_failure("npybridge: reshape of a 0-d array");
        source_view = object::steal(reshaped);
    }
    if (PyArray_CopyInto(destination, reinterpret_cast<PyArrayObject*>(source_view.get())) != 0) {
        throw_numpy_failure("npybridge: copying " + array_text(array));
    }
}

/// The array for an object: the object itself when it is an ndarray, else
/// numpy's own conversion (lists, scalars, __array__, buffers).
/// Only numbers become tensors, whatever the narrowing: numpy would make an object array of None (or of
/// any object) and a string array of text, and casting those is numpy's business, not a conversion's.
inline object as_array(PyObject* obj) {
    const bool given = PyArray_Check(obj);
    PyObject* array = given ? obj : PyArray_FromAny(obj, nullptr, 0, 0, 0, nullptr);
    if (array == nullptr) throw_numpy_failure("npybridge: cannot make an array from " + safe_repr(obj));
    object made = given ? object::borrow(obj) : object::steal(array);
    const char kind = descr_kind(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(array)));
    if (kind == 'O' || kind == 'U' || kind == 'S') {
        throw dtype_error(given ? "expected an array of numbers, got a numpy " +
                                      descr_text(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(array))) + " array"
                                : "expected an array-like of numbers, got " + std::string(Py_TYPE(obj)->tp_name));
    }
    return made;
}

}  // namespace detail
}  // namespace npybridge
