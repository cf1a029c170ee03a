// npybridge/detail/array_copy.hpp — how convert.hpp reads arrays: message texts, array layouts, the copy
// plans of the tiled copier, value checks and narrowing, low-bit values for the packers (docs/copies.md,
// docs/policies.md). The fill of fresh tensor memory is detail/array_fill.hpp.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/narrowing_kernels.hpp>
#include <npybridge/core/detail/value_bounds.hpp>
#include <npybridge/core/detail/strided_copy.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/policies.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/core/scalar_types.hpp>
#include <npybridge/core/tensor.hpp>
#include <npybridge/detail/messages.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// A plain ndarray over `data` with the numpy form of `type` (new reference):
/// BFloat16 / IntBn as the user dtype `choice` names (a result: the preferred
/// one; memory npybridge casts into: its own, so casts do not depend on what
/// else is imported).
inline object array_over(const dtype& type, void* data, const tensor_layout& layout, bool writable,
                         user_dtype_choice choice) {
    object descr = to_numpy_dtype(type, choice);
    const npy_intp itemsize = descr_elsize(reinterpret_cast<PyArray_Descr*>(descr.get()));
    npy_intp dims[NPYBRIDGE_MAX_NDIM + 1];
    npy_intp strides[NPYBRIDGE_MAX_NDIM + 1];
    for (std::size_t i = 0; i < layout.ndim; ++i) {
        dims[i] = static_cast<npy_intp>(layout.shape[i]);
        strides[i] = static_cast<npy_intp>(layout.strides[i]) * itemsize;
    }
    PyObject* array = PyArray_NewFromDescr(&PyArray_Type, reinterpret_cast<PyArray_Descr*>(descr.release()),
                                           static_cast<int>(layout.ndim), dims, strides, data,
                                           writable ? NPY_ARRAY_WRITEABLE : 0, nullptr);
    if (array == nullptr) throw_numpy_failure("npybridge: numpy could not describe the tensor's memory");
    return object::steal(array);
}

/// Whether the bytes the array's elements occupy (any strides) meet
/// [begin, begin + bytes).
inline bool array_overlaps(PyArrayObject* array, const void* begin, std::size_t bytes) noexcept {
    if (bytes == 0 || PyArray_SIZE(array) == 0) return false;
    auto low = reinterpret_cast<std::intptr_t>(PyArray_DATA(array));
    std::intptr_t high = low + static_cast<std::intptr_t>(PyArray_ITEMSIZE(array));
    for (int i = 0; i < PyArray_NDIM(array); ++i) {
        const std::intptr_t reach = static_cast<std::intptr_t>(PyArray_DIM(array, i) - 1) * PyArray_STRIDE(array, i);
        (reach < 0 ? low : high) += reach;
    }
    const auto first = reinterpret_cast<std::intptr_t>(begin);
    return low < first + static_cast<std::intptr_t>(bytes) && first < high;
}

/// The bytes a layout's elements occupy (any strides; data is element 0).
struct byte_span {
    const void* begin;
    std::size_t bytes;
};
inline byte_span span_of(const void* data, const tensor_layout& layout, std::size_t itemsize) noexcept {
    if (layout.count() == 0) return {data, 0};
    std::ptrdiff_t low = 0, high = static_cast<std::ptrdiff_t>(itemsize);
    for (std::size_t i = 0; i < layout.ndim; ++i) {
        const std::ptrdiff_t reach = static_cast<std::ptrdiff_t>(layout.shape[i] - 1) * layout.strides[i] *
                                     static_cast<std::ptrdiff_t>(itemsize);
        (reach < 0 ? low : high) += reach;
    }
    return {static_cast<const unsigned char*>(data) + low, static_cast<std::size_t>(high - low)};
}

/// Same dtype up to byte order, or a quantized dtype over a plain array of its
/// base type (the array's integers are the codes, as in MegEngine).
inline bool same_storage(const numpy_dtype_match& source, const dtype& target) {
    if (source.narrowed) return false;
    if (source.type == target) return true;
    return target.is_quantized() && !source.type.is_quantized() && !target.info().is_packed &&
           numpy_type_num(source.type.id()) == numpy_type_num(target.id());
}

/// The bytes to reverse per element of a non-native array (each half of a
/// complex number), 0 for native order.
inline std::size_t swap_unit_of(PyArrayObject* array) noexcept {
    if (PyArray_ISNOTSWAPPED(array)) return 0;
    const auto size = static_cast<std::size_t>(PyArray_ITEMSIZE(array));
    return descr_kind(PyArray_DESCR(array)) == 'c' ? size / 2 : size;
}

/// A copy plan from the array (its byte strides) into memory of `into`'s
/// element strides with `out_size`-byte elements; a 0-d array is one element.
/// False when the copier cannot take it (more dimensions than it holds).
inline bool copy_plan_of(PyArrayObject* array, const tensor_layout& into, std::size_t out_size,
                         copy_plan& plan) noexcept {
    const auto ndim = static_cast<std::size_t>(PyArray_NDIM(array));
    if (ndim > copy_max_ndim || (ndim != 0 && ndim != into.ndim)) return false;
    plan.ndim = ndim;
    for (std::size_t i = 0; i < ndim; ++i) {
        plan.shape[i] = static_cast<std::size_t>(PyArray_DIM(array, static_cast<int>(i)));
        plan.src[i] = PyArray_STRIDE(array, static_cast<int>(i));
        plan.dst[i] = into.strides[i] * static_cast<std::ptrdiff_t>(out_size);
    }
    return true;
}

/// The same into fresh C-ordered memory of `out_size`-byte elements.
inline bool copy_plan_c_order(PyArrayObject* array, std::size_t out_size, copy_plan& plan) noexcept {
    const auto ndim = static_cast<std::size_t>(PyArray_NDIM(array));
    if (ndim > copy_max_ndim) return false;
    plan.ndim = ndim;
    auto stride = static_cast<std::ptrdiff_t>(out_size);
    for (std::size_t i = ndim; i-- > 0;) {
        plan.shape[i] = static_cast<std::size_t>(PyArray_DIM(array, static_cast<int>(i)));
        plan.src[i] = PyArray_STRIDE(array, static_cast<int>(i));
        plan.dst[i] = stride;
        stride *= static_cast<std::ptrdiff_t>(std::max<std::size_t>(plan.shape[i], 1));
    }
    return true;
}

/// Runs `copy` without the GIL when it moves at least release_gil_bytes.
template <class Copy>
decltype(auto) without_gil_if_large(std::size_t bytes, Copy&& copy) {
    return without_gil(bytes >= release_gil_bytes, std::forward<Copy>(copy));
}

/// The array's values in a new C-ordered array of its dtype (native byte
/// order), copied by the tiled copier; the array itself when it already is one.
inline object contiguous_copy(PyArrayObject* array, const std::string& purpose) {
    if (PyArray_IS_C_CONTIGUOUS(array) && PyArray_ISALIGNED(array) && PyArray_ISNOTSWAPPED(array)) {
        return object::borrow(reinterpret_cast<PyObject*>(array));
    }
    PyArray_Descr* descr = PyArray_DESCR(array);
    Py_INCREF(descr);
    if (!PyArray_ISNOTSWAPPED(array)) {
        PyArray_Descr* native = PyArray_DescrNewByteorder(descr, NPY_NATIVE);
        Py_DECREF(descr);
        if (native == nullptr) throw_numpy_failure(purpose);
        descr = native;
    }
    PyObject* made = PyArray_NewFromDescr(&PyArray_Type, descr, PyArray_NDIM(array), PyArray_DIMS(array), nullptr,
                                          nullptr, 0, nullptr);
    if (made == nullptr) throw_numpy_failure(purpose);
    object result = object::steal(made);
    auto* out = reinterpret_cast<PyArrayObject*>(made);
    copy_plan plan;
    if (PyArray_SIZE(array) == 0) return result;
    if (!copy_plan_c_order(array, static_cast<std::size_t>(PyArray_ITEMSIZE(array)), plan)) {
        if (PyArray_CopyInto(out, array) != 0) throw_numpy_failure(purpose);
        return result;
    }
    const auto itemsize = static_cast<std::size_t>(PyArray_ITEMSIZE(array));
    without_gil_if_large(plan.count() * itemsize, [&] {
        copy_strided(plan, PyArray_DATA(array), PyArray_DATA(out), itemsize, swap_unit_of(array));
    });
    return result;
}

namespace layout_detail {

/// The strides loop of layout_of_array. Every dtype npybridge borrows has a
/// power-of-two itemsize, so that instantiation masks and shifts; the other
/// (divides; itemsize 0 gives contiguous strides) only serves arrays the
/// general path rejects or copies, and stays out of line.
template <bool PowerOfTwo>
inline bool element_strides(const npy_intp* dims, const npy_intp* byte_strides, int ndim, npy_intp itemsize,
                            tensor_layout& layout) noexcept {
    const npy_intp mask = itemsize - 1;
    const int shift = PowerOfTwo ? __builtin_ctzll(static_cast<unsigned long long>(itemsize)) : 0;
    npy_intp misfit = 0;  // nonzero once a stride that matters is not whole elements
    std::ptrdiff_t contiguous = 1;
    for (int i = ndim; i-- > 0;) {
        const auto extent = static_cast<std::size_t>(dims[i]);
        const npy_intp stride = byte_strides[i];
        const auto at = static_cast<std::size_t>(i);
        layout.shape[at] = extent;
        if (extent > 1 && (PowerOfTwo || itemsize > 0)) {
            misfit |= PowerOfTwo ? stride & mask : stride % itemsize;
            layout.strides[at] = static_cast<std::ptrdiff_t>(PowerOfTwo ? stride >> shift : stride / itemsize);
        } else {
            layout.strides[at] = contiguous;
        }
        contiguous *= static_cast<std::ptrdiff_t>(extent == 0 ? 1 : extent);
    }
    return misfit == 0;
}

[[gnu::noinline]] inline bool element_strides_any(const npy_intp* dims, const npy_intp* byte_strides, int ndim,
                                                  npy_intp itemsize, tensor_layout& layout) noexcept {
    return element_strides<false>(dims, byte_strides, ndim, itemsize, layout);
}

}  // namespace layout_detail

/// Fills `layout` with the array's shape and element strides; size-1
/// dimensions get the contiguous stride (theirs never matters: NumPy leaves them arbitrary), a
/// 0-d array becomes shape (1,) for tensor types without 0-d. Returns false
/// when a stride that matters is not a whole number of elements (that stride
/// is then meaningless; why_not_borrow names it).
inline bool layout_of_array(PyArrayObject* array, bool has_scalar, tensor_layout& layout) noexcept {
    const int ndim = PyArray_NDIM(array);
    if (ndim == 0 && !has_scalar) {
        layout.ndim = 1;
        layout.shape[0] = 1;
        layout.strides[0] = 1;
        return true;
    }
    layout.ndim = static_cast<std::size_t>(ndim);
    const npy_intp itemsize = PyArray_ITEMSIZE(array);
    if (itemsize > 0 && (itemsize & (itemsize - 1)) == 0) {
        return layout_detail::element_strides<true>(PyArray_DIMS(array), PyArray_STRIDES(array), ndim, itemsize,
                                                    layout);
    }
    return layout_detail::element_strides_any(PyArray_DIMS(array), PyArray_STRIDES(array), ndim, itemsize, layout);
}

/// A C-contiguous, aligned, native-order array with `type_num` values
/// (the array itself when it already is one). Casting follows `casting`.
inline object contiguous_as(PyArrayObject* array, int type_num, NPY_CASTING casting, const std::string& purpose) {
    PyArray_Descr* descr = PyArray_DescrFromType(type_num);
    if (!PyArray_CanCastArrayTo(array, descr, casting)) {
        const std::string from = descr_text(PyArray_DESCR(array)), to = descr_text(descr);
        Py_DECREF(descr);
        throw dtype_error(
            purpose + ": cannot cast numpy " + from + " to " + to +
            (casting == NPY_UNSAFE_CASTING ? "" : " without losing values (pass narrowing='wrap' to cast anyway)"));
    }
    PyObject* result = PyArray_FromArray(array, descr, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
    if (result == nullptr) throw_numpy_failure(purpose);
    return object::steal(result);
}

/// The first integer of `in` that `bounds` does not hold unchanged: outside [lo, hi] for integer targets; for
/// float targets, overflowing or not held exactly.
template <class T>
std::optional<unfit_value> first_unfit_integer(const T* in, std::size_t n, const value_bounds& bounds) {
    using limits = std::numeric_limits<T>;
    std::size_t bad = n;
    if (!bounds.floating) {
        const T lo = bounds.lo <= static_cast<long double>(limits::min()) ? limits::min() : static_cast<T>(bounds.lo);
        const T hi = bounds.hi >= static_cast<long double>(limits::max()) ? limits::max()
                     : bounds.hi < 0                                      ? T{0}
                                                                          : static_cast<T>(bounds.hi);
        bad = first_outside<T>(in, n, lo, hi);
        if (bad != n) return unfit_value{bad, std::to_string(in[bad])};
        return std::nullopt;
    }
    const double limit = std::ceil(bounds.overflow) - 1;  // the largest integer below the overflow
    if (limit < static_cast<double>(limits::max())) {
        const auto top = static_cast<T>(limit);
        bad = first_outside<T>(in, n, std::is_signed_v<T> ? static_cast<T>(-top) : T{0}, top);
        if (bad != n) return unfit_value{bad, std::to_string(in[bad])};
    }
    if (sizeof(T) * 8 - (std::is_signed_v<T> ? 1 : 0) <= bounds.digits) return std::nullopt;
    bad = first_inexact(in, n, bounds.digits);
    if (bad != n) return unfit_value{bad, inexact_text(in[bad], bounds)};
    return std::nullopt;
}

/// The first float (or complex part, `parts` 2) of `in` that `bounds` does not hold: overflowing a float target;
/// not a whole number in [lo, hi] for integer, bool and quantized targets.
template <class T>
std::optional<unfit_value> first_unfit_float(const T* in, std::size_t n, std::size_t parts,
                                             const value_bounds& bounds) {
    const std::size_t count = n * parts;
    std::size_t bad =
        bounds.floating ? first_overflow<T>(in, count, static_cast<T>(bounds.overflow))
                        : first_not_whole<T>(in, count, static_cast<double>(bounds.lo), static_cast<double>(bounds.hi));
    if (bad == count) return std::nullopt;
    bad -= bad % parts;
    const auto text = [](T v) { return number_text(static_cast<double>(v)); };
    return unfit_value{bad / parts, parts == 2 ? "(" + text(in[bad]) + "+" + text(in[bad + 1]) + "j)" : text(in[bad])};
}

/// The first unfit value of `n` values at `data`, read as numpy's (kind, size of one real part) says.
inline std::optional<unfit_value> first_unfit_in(char kind, npy_intp size, const void* data, std::size_t n,
                                                 std::size_t parts, const value_bounds& bounds) {
    switch (kind == 'i' ? size : kind == 'u' ? -size : 100 + size) {
        case 1: return first_unfit_integer(static_cast<const std::int8_t*>(data), n, bounds);
        case 2: return first_unfit_integer(static_cast<const std::int16_t*>(data), n, bounds);
        case 4: return first_unfit_integer(static_cast<const std::int32_t*>(data), n, bounds);
        case 8: return first_unfit_integer(static_cast<const std::int64_t*>(data), n, bounds);
        case -1: return first_unfit_integer(static_cast<const std::uint8_t*>(data), n, bounds);
        case -2: return first_unfit_integer(static_cast<const std::uint16_t*>(data), n, bounds);
        case -4: return first_unfit_integer(static_cast<const std::uint32_t*>(data), n, bounds);
        case -8: return first_unfit_integer(static_cast<const std::uint64_t*>(data), n, bounds);
        case 104: return first_unfit_float(static_cast<const float*>(data), n, parts, bounds);
        case 108: return first_unfit_float(static_cast<const double*>(data), n, parts, bounds);
        default: return first_unfit_float(static_cast<const long double*>(data), n, parts, bounds);
    }
}

/// The numpy type first_unfit_value widens an array of `kind` to when it cannot read it in place.
inline int widened_type(char kind, std::size_t real_size) noexcept {
    const bool long_real = real_size > 8;
    if (kind == 'i' || kind == 'u') return kind == 'i' ? NPY_INT64 : NPY_UINT64;
    if (kind == 'f') return long_real ? NPY_LONGDOUBLE : NPY_DOUBLE;
    return long_real ? NPY_CLONGDOUBLE : NPY_CDOUBLE;
}

/// The first value of the array (C order) that does not go into `bounds` unchanged: its index and its text.
/// Read in its own type when the array is C-contiguous, aligned and native (no copy; float32 read as float32,
/// so flush-to-zero mode changes no subnormal on the way); else widened by numpy to int64 / uint64 / double
/// (long double when wider). Kinds other than integers, floats and complex numbers are numpy's to judge.
inline std::optional<unfit_value> first_unfit_value(PyArrayObject* array, const value_bounds& bounds) {
    const char kind = descr_kind(PyArray_DESCR(array));
    if (kind != 'i' && kind != 'u' && kind != 'f' && kind != 'c') return std::nullopt;
    const std::size_t parts = kind == 'c' ? 2 : 1;
    const auto real_size = static_cast<std::size_t>(PyArray_ITEMSIZE(array)) / parts;
    const bool in_place = PyArray_IS_C_CONTIGUOUS(array) && PyArray_ISALIGNED(array) && PyArray_ISNOTSWAPPED(array) &&
                          (kind == 'i' || kind == 'u' || real_size == 4 || real_size == 8);
    const object values =
        in_place ? object::borrow(reinterpret_cast<PyObject*>(array))
                 : contiguous_as(array, widened_type(kind, real_size), NPY_SAFE_CASTING, "checked narrowing");
    auto* read = reinterpret_cast<PyArrayObject*>(values.get());
    return first_unfit_in(kind, PyArray_ITEMSIZE(read) / static_cast<npy_intp>(parts), PyArray_DATA(read),
                          static_cast<std::size_t>(PyArray_SIZE(read)), parts, bounds);
}

/// int64 -> Int32 / float64 -> Float32 into `out` (contiguous). checked: the
/// first value that does not fit is an error naming index and value.
/// check_first: every value is checked before the first is written, so a bad
/// value leaves `out` untouched (for copy_into; costs a second read).
inline void narrow_into(PyArrayObject* array, const dtype& target, void* out, narrowing mode,
                        const tensor_layout& layout, bool check_first = false) {
    const bool to_int = target.id() == dtype_enum::Int32;
    const int type_num = descr_type_num(PyArray_DESCR(array));
    const bool wide_source = PyArray_ITEMSIZE(array) == 8 &&
                             (to_int ? type_num == NPY_LONG || type_num == NPY_LONGLONG : type_num == NPY_DOUBLE);
    // int64 / float64 of any strides and byte order are gathered and narrowed
    // in one pass (checking while gathering); anything else numpy first makes
    // one of those.
    object converted;
    if (!wide_source) converted = contiguous_as(array, to_int ? NPY_INT64 : NPY_FLOAT64, NPY_SAFE_CASTING, "narrowing");
    auto* src = wide_source ? array : reinterpret_cast<PyArrayObject*>(converted.get());
    copy_plan plan;
    if (!copy_plan_c_order(src, 4, plan)) {  // more dimensions than a plan holds: numpy flattens first
        converted = contiguous_as(src, to_int ? NPY_INT64 : NPY_FLOAT64, NPY_SAFE_CASTING, "narrowing");
        src = reinterpret_cast<PyArrayObject*>(converted.get());
        plan.ndim = 1;
        plan.shape[0] = static_cast<std::size_t>(PyArray_SIZE(src));
        plan.src[0] = 8;
        plan.dst[0] = 4;
    }
    const bool swap = !PyArray_ISNOTSWAPPED(src);
    const void* data = PyArray_DATA(src);
    const std::size_t n = plan.count();
    const std::size_t bad = without_gil_if_large(n * 8, [&]() -> std::size_t {
        auto first_bad = [&] {
            return to_int ? first_unfit_strided<std::int64_t, std::int32_t>(plan, data, swap)
                          : first_unfit_strided<double, float>(plan, data, swap);
        };
        if (check_first && mode == narrowing::checked) {
            const std::size_t found = first_bad();
            if (found != n) return found;
        }
        const bool all_fit = to_int ? narrow_strided<std::int64_t, std::int32_t>(plan, data, out, swap)
                                    : narrow_strided<double, float>(plan, data, out, swap);
        return all_fit || mode != narrowing::checked ? n : first_bad();
    });
    if (bad != n) {
        std::ptrdiff_t offset = 0;
        std::size_t rest = bad;
        for (std::size_t k = plan.ndim; k-- > 0;) {
            offset += static_cast<std::ptrdiff_t>(rest % plan.shape[k]) * plan.src[k];
            rest /= plan.shape[k];
        }
        const auto* at = static_cast<const unsigned char*>(data) + offset;
        const std::string value = to_int ? std::to_string(swap ? narrow_op<std::int64_t, std::int32_t, true>::load(at)
                                                               : narrow_op<std::int64_t, std::int32_t, false>::load(at))
                                         : number_text(swap ? narrow_op<double, float, true>::load(at)
                                                            : narrow_op<double, float, false>::load(at));
        throw value_range_error("narrowing " + descr_text(PyArray_DESCR(array)) + " to " + std::string(target.name()) +
                                ": value " + value + " at index " + index_text(bad, layout) + " does not fit " +
                                std::string(target.name()) + " (narrowing='checked'; 'wrap' casts anyway)");
    }
}

/// Sub-byte elements one per byte (DLPack's IS_SUBBYTE_TYPE_PADDED, and
/// ml_dtypes' int4 / uint4): the value sits in the low `bits` bits; int
/// codes are sign-extended. Gives an int8 / uint8 array of the values.
inline object low_bits_as_bytes(PyArrayObject* bytes, unsigned bits, bool is_signed) {
    object values = contiguous_copy(bytes, "low-bit values");
    auto* array = reinterpret_cast<PyArrayObject*>(values.get());
    if (values.get() == reinterpret_cast<PyObject*>(bytes)) {  // already contiguous: make it ours to change
        PyObject* copied = PyArray_NewCopy(bytes, NPY_CORDER);
        if (copied == nullptr) throw_numpy_failure("low-bit values");
        values = object::steal(copied);
        array = reinterpret_cast<PyArrayObject*>(copied);
    }
    auto* data = static_cast<std::uint8_t*>(PyArray_DATA(array));
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
    const unsigned shift = 8 - bits;
    for (std::size_t i = 0; i < n; ++i) {
        const auto low = static_cast<std::uint8_t>(data[i] << shift);
        data[i] = is_signed ? static_cast<std::uint8_t>(static_cast<std::int8_t>(low) >> shift)
                            : static_cast<std::uint8_t>(low >> shift);
    }
    PyArray_Descr* descr = PyArray_DescrFromType(is_signed ? NPY_INT8 : NPY_UINT8);
    PyObject* typed = PyArray_View(array, descr, nullptr);
    if (typed == nullptr) throw_numpy_failure("low-bit values");
    return object::steal(typed);
}

/// One byte per element, valid for the packed dtype, C order (new reference
/// or the array itself). Integers of any width are checked against the
/// dtype's valid set so that nothing wraps into a valid code.
inline object lowbit_values(PyArrayObject* array, const dtype& target, const tensor_layout& layout) {
    const dtype_info& type = target.info();
    const int byte_type = type.is_signed ? NPY_INT8 : NPY_UINT8;
    if (const std::optional<ml_dtypes_subbyte> kind = ml_dtypes_subbyte_kind(PyArray_DESCR(array))) {
        // ml_dtypes' int1/2/4 and uint1/2/4: the low bits of each byte hold the value.
        object values = low_bits_as_bytes(array, kind->bits, kind->is_signed);
        return lowbit_values(reinterpret_cast<PyArrayObject*>(values.get()), target, layout);
    }
    if (user_dtype_lookup_hook != nullptr) {
        const std::optional<dtype_enum> user = user_dtype_lookup_hook(descr_type_num(PyArray_DESCR(array)));
        if (user && info(*user).is_packed) {  // an intbN array holds its odd values as int8 bytes
            return contiguous_copy(array, std::string(type.name));
        }
    }
    const char kind = descr_kind(PyArray_DESCR(array));
    if (kind != 'i' && kind != 'u' && kind != 'b' && kind != 'f') {  // (floats: plan_fill lets whole ones in)
        throw dtype_error(std::string(type.name) + " takes integer values, got numpy " +
                          descr_text(PyArray_DESCR(array)));
    }
    if (descr_type_num(PyArray_DESCR(array)) == byte_type) return contiguous_copy(array, std::string(type.name));
    if (PyArray_ITEMSIZE(array) == 1 && (kind == 'i') == type.is_signed && kind != 'b') {
        return contiguous_as(array, byte_type, NPY_SAFE_CASTING, std::string(type.name));
    }
    // Only "a whole number that fits a byte" is checked here (integers of any width, uint64 too, so nothing
    // wraps into a valid code); the packer's own codec judges the value set (and names the index) in pack_values.
    const value_bounds byte_bounds = *storage_bounds(type);
    if (const auto unfit = first_unfit_value(array, byte_bounds))
        throw_invalid_code(type, unfit->text, index_text(unfit->index, layout));
    return contiguous_as(array, byte_type, NPY_UNSAFE_CASTING, std::string(type.name));
}

/// The last word on fresh memory of a dtype whose codes are fewer than its storage holds (QuantizedS1), after
/// any cast (numpy's casts from ml_dtypes' int4 / uint4 / int2 check nothing): checked / reject refuse the
/// first value that is not a code, naming its index; wrap wraps each into the code range (lo + (v - lo) mod
/// (hi - lo + 1): for QuantizedS1's 0..1, the value's low bit). So no path stores a code outside the range.
inline void settle_codes(void* out, const dtype& target, narrowing narrow, const tensor_layout& layout) {
    const dtype_info& type = target.info();
    if (!codes_narrower_than_storage(type)) return;
    const std::size_t n = layout.count();
    const auto lo = static_cast<long long>(type.range.lo), hi = static_cast<long long>(type.range.hi);
    const long long span = hi - lo + 1;
    const auto settle = [&](auto* values) {
        for (std::size_t i = 0; i < n; ++i) {
            const auto v = static_cast<long long>(values[i]);
            if (v >= lo && v <= hi) continue;
            if (narrow != narrowing::wrap) throw_invalid_code(type, std::to_string(v), index_text(i, layout));
            using value_t = std::remove_reference_t<decltype(values[i])>;
            values[i] = static_cast<value_t>(lo + (((v - lo) % span) + span) % span);
        }
    };
    const bool is_signed = type.is_signed;
    switch (type.element_size) {
        case 1: is_signed ? settle(static_cast<std::int8_t*>(out)) : settle(static_cast<std::uint8_t*>(out)); break;
        case 2: is_signed ? settle(static_cast<std::int16_t*>(out)) : settle(static_cast<std::uint16_t*>(out)); break;
        default: is_signed ? settle(static_cast<std::int32_t*>(out)) : settle(static_cast<std::uint32_t*>(out)); break;
    }
}

/// Packs one-byte values into fresh storage; a bad value is named by its index in the array.
inline void pack_values(PyArrayObject* values, const dtype& target, void* out, lowbit_layout packing,
                        const tensor_layout& layout) {
    const dtype_info& type = target.info();
    const lowbit_codec codec = make_codec(type);
    const auto* in = static_cast<const std::uint8_t*>(PyArray_DATA(values));
    const std::size_t n = layout.count();
    const bool ok = without_gil_if_large(n, [&] {
        return pack_rows(active_lowbit_kernels(), codec, type.id, in, n, layout.innermost(), packing,
                         static_cast<std::uint8_t*>(out));
    });
    if (!ok) throw_first_invalid(type, codec, in, n, [&](std::size_t i) { return index_text(i, layout); });
}

}  // namespace detail
}  // namespace npybridge
