// npybridge/convert.hpp — ndarray ↔ tensor: borrow and share memory when possible, copy (saying why) when not.
#pragma once

#include <npybridge/core/adapter.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/core/tensor.hpp>
#include <npybridge/python.hpp>

#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// numpy (or an array-like) → Tensor: borrows when the options and memory allow, else copies and says why. GIL
/// required. conversion_error (or a subclass) names the dtype, shape, index or flag; nothing is left behind.
template <class Tensor = tensor>
to_tensor_result<Tensor> to_tensor(PyObject* obj, const to_tensor_options& options = {},
                                   const placement_t<Tensor>& where = default_placement<Tensor>());

/// Tensor → numpy (GIL required). A shared array keeps the storage alive through its base; a packed tensor is unpacked
/// into a new array (a byte per element with metadata when quantized, or ml_dtypes' int4 / uint4).
template <class Tensor>
object to_array(const Tensor& source, share_policy policy = share_policy::try_share,
                lowbit_format format = lowbit_format::int8);

/// The same for a tensor you are done with: with take_owner (npybridge::tensor's), the array takes the owner over and
/// the tensor is left empty; otherwise as above.
template <class Tensor, class = std::enable_if_t<!std::is_reference_v<Tensor> && !std::is_const_v<Tensor>>>
object to_array(Tensor&& source, share_policy policy = share_policy::try_share,
                lowbit_format format = lowbit_format::int8);

/// Copies the array into an existing tensor of the same shape by to_tensor's rules. conversion_error for another shape
/// or a read-only tensor; on error the tensor is unchanged.
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
