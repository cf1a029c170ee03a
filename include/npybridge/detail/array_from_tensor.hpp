// npybridge/detail/array_from_tensor.hpp — to_array's steps: share a tensor's memory, or unpack a packed tensor.
#pragma once

#include <npybridge/detail/numpy_dtypes.hpp>
#include <npybridge/detail/tensor_from_array.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// to_array of a packed tensor, unpacked into a new array (out of line).
template <class Tensor>
[[gnu::noinline]] object unpacked_array(const Tensor& source, const dtype& type, const tensor_layout& layout,
                                        share_policy policy, lowbit_format format) {
    using adapter = tensor_adapter<Tensor>;
    const dtype_info& entry = type.info();
    if (policy == share_policy::must_share) {
        throw_must_share_packed(entry);
    }
    if (entry.form == numpy_form::none) {
        throw_no_numpy_form(entry);
    }
    const bool ml_4bit = format == lowbit_format::ml_dtypes;
    if (ml_4bit && (entry.bits != 4 || entry.coding == lowbit_coding::odd)) {
        const std::string four_bit_integers =
            dtype_names([](const dtype_info& row) { return row.bits == 4 && row.coding != lowbit_coding::odd; });
        throw_not_ml_dtypes_4_bit(entry, four_bit_integers);
    }
    npy_intp dims[NPYBRIDGE_MAX_NDIM + 1];
    for (std::size_t i = 0; i < layout.ndim; ++i) dims[i] = static_cast<npy_intp>(layout.shape[i]);
    object descr;
    if (ml_4bit) {
        descr = ml_dtypes_4bit_descr(entry.coding == lowbit_coding::twos_complement);
        object quantized = numpy_dtype_of(type);  // the same metadata
        PyObject* metadata = descr_metadata(reinterpret_cast<PyArray_Descr*>(quantized.get()));
        Py_XINCREF(metadata);
        set_metadata(reinterpret_cast<PyArray_Descr*>(descr.get()), metadata);
    } else {
        PyArray_Descr* user = !type.is_quantized() && user_dtype_descr_hook
                                  ? user_dtype_descr_hook(entry.id, user_dtype_choice::preferred)
                                  : nullptr;
        descr = type.is_quantized() ? numpy_dtype_of(type)
                : user != nullptr   ? object::steal(reinterpret_cast<PyObject*>(user))  // intbN
                                    : object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(NPY_INT8)));
    }
    PyObject* array = PyArray_NewFromDescr(&PyArray_Type, reinterpret_cast<PyArray_Descr*>(descr.release()),
                                           static_cast<int>(layout.ndim), dims, nullptr, nullptr, 0, nullptr);
    if (array == nullptr) throw_numpy_failure("npybridge: allocating the unpacked array");
    object result = object::steal(array);
    auto* out = static_cast<std::uint8_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(array)));
    const std::size_t count = layout.count();
    const lowbit_layout packing = adapter::packed_layout(source);
    without_gil_if_large(count, [&] {
        if (layout.is_dense_packed(entry.id, packing)) {
            unpack(entry.id, adapter::data(source), {count, layout.innermost()}, out, packing);
        } else {  // a sub-tensor: by strides
            unpack_strided(entry.id, adapter::data(source), layout.shape.data(), layout.strides.data(), layout.ndim,
                           out);
        }
        if (ml_4bit) {
            for (std::size_t i = 0; i < count; ++i) out[i] &= 0x0F;  // ml_dtypes keeps upper bits zero
        }
    });
    return result;
}

/// Whether the adapter has take_owner.
template <class Tensor, class = void>
struct can_take_owner : std::false_type {};
template <class Tensor>
struct can_take_owner<Tensor, std::void_t<decltype(tensor_adapter<Tensor>::take_owner(std::declval<Tensor&>()))>>
    : std::true_type {};

/// to_array for both overloads. `consumed` (rvalue) lets a shared array take the owner over (no count updates), only
/// once the array exists, so a failure leaves the tensor as it was.
template <class Tensor>
object to_array(const Tensor& source, share_policy policy, Tensor* consumed, lowbit_format format) {
    using adapter = tensor_adapter<Tensor>;
    const dtype type = adapter::dtype_of(source);
    const tensor_layout layout = adapter::layout_of(source);
    if (type.info().is_packed) return unpacked_array(source, type, layout, policy, format);
    // A dtype without numpy form (Byte) fails in array_over, named.
    object view =
        array_over(type, adapter::data(source), layout, adapter::writable(source), user_dtype_choice::preferred);
    if (policy == share_policy::copy) {
        auto* from = reinterpret_cast<PyArrayObject*>(view.get());
        if (layout.is_contiguous()) {
            PyObject* copied = PyArray_NewCopy(from, NPY_CORDER);
            if (copied == nullptr) throw_numpy_failure("npybridge: copying the tensor");
            return object::steal(copied);
        }
        return contiguous_copy(from, "npybridge: copying the tensor");  // strided: the tiled copier
    }
    owner_handle owner;
    if constexpr (can_take_owner<Tensor>::value) {
        owner = consumed != nullptr ? adapter::take_owner(*consumed) : adapter::owner(source);
    } else {
        owner = adapter::owner(source);
    }
    if (owner.read_only()) {  // read-only stays read-only
        PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(view.get()), NPY_ARRAY_WRITEABLE);
    }
    object base = base_object_for(std::move(owner));
    if (base && PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(view.get()), base.release()) != 0) {
        throw_numpy_failure("npybridge: could not attach the tensor's owner to the array");
    }
    return view;
}

}  // namespace detail
}  // namespace npybridge
