// npybridge/array_quantization.hpp — whole arrays quantized into tensors and tensors dequantized, bit for bit MegDNN's.
#pragma once

#include <npybridge/convert.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Quantizes real values (an array-like of bools, integers, floats) into a new tensor: each made float32, then MegDNN's
/// clamp(round_half_away(x / scale) + zero_point), NaN -> the lowest code, as the scalar quantize(); packed dtypes
/// straight into packed storage. No GIL from 1 MiB. dtype_error names a dtype that is not quantized or values that are
/// not real.
template <class Tensor = tensor>
Tensor quantize(PyObject* values, const dtype& type, const placement_t<Tensor>& where = default_placement<Tensor>());

/// A quantized tensor's real values as a new float32 array, (code - zero_point) * scale, any layout. dtype_error when
/// not quantized; value_range_error names a byte that is no code, and its index.
template <class Tensor>
object dequantize(const Tensor& source);

/// Example: values quantized into a QuantizedS8 tensor of scale 0.5, and back.
/// ```cpp
/// #include <npybridge/array_quantization.hpp>
///
/// PyObject* round_trip(PyObject* values) {
///     const npybridge::dtype q8 = npybridge::dtype::quantized(npybridge::dtype_enum::QuantizedS8, 0.5);
///     const npybridge::tensor codes = npybridge::quantize(values, q8);
///     return npybridge::dequantize(codes).release();
/// }
/// ```

}  // namespace npybridge

// ---- Definitions ------------------------------------------------------------------------------------------------

#include <npybridge/detail/array_quantizing.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

template <class Tensor>
Tensor quantize(PyObject* values, const dtype& type, const placement_t<Tensor>& where) {
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
