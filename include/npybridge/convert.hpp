// npybridge/convert.hpp — ndarray ↔ tensor: borrow and share when memory can be shared, copy (and say why) when not.
#pragma once

#include <npybridge/core/adapter.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/core/tensor.hpp>
#include <npybridge/python.hpp>

#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// numpy (or anything numpy can make an array of) → Tensor, borrowing the array's memory when the options and the
/// memory allow it, else a copy whose result says why. Requires the GIL. Throws conversion_error (or a subclass)
/// naming the dtype, shape, index or flag at fault; on error nothing is left behind.
template <class Tensor = tensor>
to_tensor_result<Tensor> to_tensor(PyObject* obj, const to_tensor_options& options = {},
                                   const placement_t<Tensor>& where = default_placement<Tensor>());

/// Tensor → numpy. Requires the GIL. A shared array keeps the tensor's storage alive through its base object; a
/// packed tensor is unpacked into a new array (one byte per element, int8 or uint8, with metadata when quantized;
/// or ml_dtypes' int4 / uint4 with lowbit_format::ml_dtypes).
template <class Tensor>
object to_array(const Tensor& source, share_policy policy = share_policy::try_share,
                lowbit_format format = lowbit_format::int8);

/// The same for a tensor you are done with (`to_array(std::move(t))`): when the adapter has take_owner
/// (npybridge::tensor's does), the shared array takes the tensor's owner over and the tensor is left empty;
/// otherwise this is the copy above.
template <class Tensor, class = std::enable_if_t<!std::is_reference_v<Tensor> && !std::is_const_v<Tensor>>>
object to_array(Tensor&& source, share_policy policy = share_policy::try_share,
                lowbit_format format = lowbit_format::int8);

/// Copies the array into an existing tensor of the same shape, converting values to the tensor's dtype by
/// to_tensor's rules (the same planner, the options' narrowing). Throws conversion_error for another shape or a
/// read-only tensor; on any error the tensor is left as it was.
template <class Tensor>
void copy_into(PyObject* obj, Tensor& destination, const to_tensor_options& options = {});

/// Example: a tensor over a float32 array's memory, and an array sharing a tensor's.
/// ```cpp
/// #include <npybridge/convert.hpp>
///
/// npybridge::tensor borrow_floats(PyObject* array) {
///     npybridge::to_tensor_options options;
///     options.as(npybridge::dtype(npybridge::dtype_enum::Float32)).with(npybridge::borrow_policy::must_borrow);
///     return npybridge::to_tensor(array, options).tensor;  // throws, saying why, if it cannot borrow
/// }
///
/// PyObject* share(npybridge::tensor t) { return npybridge::to_array(std::move(t)).release(); }
/// ```

}  // namespace npybridge

// ---- Definitions ------------------------------------------------------------------------------------------------

#include <npybridge/detail/array_from_tensor.hpp>
#include <npybridge/detail/tensor_from_array.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

template <class Tensor>
to_tensor_result<Tensor> to_tensor(PyObject* obj, const to_tensor_options& options, const placement_t<Tensor>& where) {
    static_assert(check_adapter<Tensor>());
    if (options.policy != borrow_policy::copy && PyArray_Check(obj)) {
        auto* array = reinterpret_cast<PyArrayObject*>(obj);
        tensor_layout layout;
        if (const dtype* type = detail::quick_borrow<Tensor>(array, options, layout)) {
            return {std::in_place,
                    [&] {
                        return detail::adapter_borrow_at<Tensor>(
                            *type, PyArray_DATA(array), layout, true,
                            options.keep_alive ? detail::python_owner(obj, false) : owner_handle(), where);
                    },
                    true};
        }
    }
    return detail::to_tensor_general<Tensor>(obj, options, where);
}

template <class Tensor>
object to_array(const Tensor& source, share_policy policy, lowbit_format format) {
    static_assert(check_adapter<Tensor>());
    return detail::to_array<Tensor>(source, policy, nullptr, format);
}

template <class Tensor, class>
object to_array(Tensor&& source, share_policy policy, lowbit_format format) {
    static_assert(check_adapter<Tensor>());
    return detail::to_array<Tensor>(source, policy, &source, format);
}

template <class Tensor>
void copy_into(PyObject* obj, Tensor& destination, const to_tensor_options& options) {
    static_assert(check_adapter<Tensor>());
    detail::copy_into_tensor(obj, destination, options);
}

}  // namespace npybridge
