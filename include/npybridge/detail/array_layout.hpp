// npybridge/detail/array_layout.hpp — an ndarray's memory: element strides, span, copy plans, contiguous copies.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/source_view.hpp>
#include <npybridge/core/detail/strided_copy.hpp>
#include <npybridge/core/tensor.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/detail/numpy_dtypes.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/python.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// A plain ndarray over `data` in `type`'s numpy form (new reference); user dtypes as `choice` names.
inline object array_over(const dtype& type, void* data, const tensor_layout& layout, bool writable,
                         user_dtype_choice choice) {
    object descr = numpy_dtype_of(type, choice);
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

/// Whether the array's elements (any strides) meet [begin, begin + bytes).
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

/// The bytes a layout's elements occupy (data is element 0).
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

/// Bytes to reverse per element of a non-native array (a complex number's halves); 0 when native.
inline std::size_t swap_unit_of(PyArrayObject* array) noexcept {
    if (PyArray_ISNOTSWAPPED(array)) return 0;
    const auto size = static_cast<std::size_t>(PyArray_ITEMSIZE(array));
    return descr_kind(PyArray_DESCR(array)) == 'c' ? size / 2 : size;
}

/// The array's values as the kernels read them; a user dtype's values are source_type::other.
template <class = void>
source_view source_view_of(PyArrayObject* array) noexcept {
    source_view view;
    PyArray_Descr* descr = PyArray_DESCR(array);
    view.data = PyArray_DATA(array);
    view.kind = descr_kind(descr);
    view.itemsize = static_cast<std::size_t>(PyArray_ITEMSIZE(array));
    view.type = descr_type_num(descr) >= NPY_USERDEF ? source_type::other : source_type_of(view.kind, view.itemsize);
    view.shown = view.type;
    view.count = static_cast<std::size_t>(PyArray_SIZE(array));
    view.native = PyArray_ISNOTSWAPPED(array);
    view.aligned = PyArray_ISALIGNED(array);
    view.ndim = static_cast<std::size_t>(PyArray_NDIM(array));
    if (!view.described() && PyArray_IS_C_CONTIGUOUS(array)) {  // one run
        view.ndim = 1;
        view.shape[0] = view.count;
        view.strides[0] = static_cast<std::ptrdiff_t>(view.itemsize);
    }
    if (!view.described()) return view;
    for (std::size_t i = 0; i < view.ndim; ++i) {
        view.shape[i] = static_cast<std::size_t>(PyArray_DIM(array, static_cast<int>(i)));
        view.strides[i] = PyArray_STRIDE(array, static_cast<int>(i));
    }
    return view;
}

/// A copy plan from the array into memory of `into`'s element strides and `out_size`-byte elements (0-d: one element);
/// false past the copier's dimensions.
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

/// The same into fresh C-ordered memory.
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

/// Runs `copy` without the GIL from release_gil_bytes.
template <class Copy>
decltype(auto) without_gil_if_large(std::size_t bytes, Copy&& copy) {
    return without_gil(bytes >= release_gil_bytes, std::forward<Copy>(copy));
}

/// The array's values in a new array of its own dtype, read once: private to the caller.
inline object private_copy(PyArrayObject* array, const std::string& purpose) {
    PyObject* copy = PyArray_NewCopy(array, NPY_KEEPORDER);
    if (copy == nullptr) throw_numpy_failure(purpose);
    return object::steal(copy);
}

/// The array's values in a new C-ordered native array by the tiled copier; the array itself when it is one.
template <class = void>
object contiguous_copy(PyArrayObject* array, const std::string& purpose) {
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

/// layout_of_array's strides loop: power-of-two itemsizes mask and shift; the other instantiation divides, out of line.
template <bool PowerOfTwo>
inline bool element_strides(const npy_intp* dims, const npy_intp* byte_strides, int ndim, npy_intp itemsize,
                            tensor_layout& layout) noexcept {
    const npy_intp mask = itemsize - 1;
    const int shift = PowerOfTwo ? __builtin_ctzll(static_cast<unsigned long long>(itemsize)) : 0;
    npy_intp misfit = 0;  // nonzero once a stride is not whole elements
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

/// The array's shape and element strides into `layout` (0-d: shape (1,) for types without 0-d); false when a stride
/// that matters is not whole elements.
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

/// A C-contiguous, aligned, native array of `type_num` (the array itself when it is one), cast under `casting`.
inline object contiguous_as(PyArrayObject* array, int type_num, NPY_CASTING casting, const std::string& purpose) {
    PyArray_Descr* descr = PyArray_DescrFromType(type_num);
    if (!PyArray_CanCastArrayTo(array, descr, casting)) {
        const object held = object::steal(reinterpret_cast<PyObject*>(descr));
        throw_cannot_cast(purpose, PyArray_DESCR(array), descr, casting == NPY_UNSAFE_CASTING);
    }
    PyObject* result = PyArray_FromArray(array, descr, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
    if (result == nullptr) throw_numpy_failure(purpose);
    return object::steal(result);
}

}  // namespace detail
}  // namespace npybridge
