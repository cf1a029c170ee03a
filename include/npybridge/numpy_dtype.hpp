// npybridge/numpy_dtype.hpp — np.dtype ↔ npybridge dtype, quantized params carried in metadata["mgb_dtype"].
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The npybridge dtype of a numpy dtype (GIL and import_numpy() required). dtype_error when it has no MegBrain dtype,
/// metadata_error for bad quantized metadata, naming the dtype and key.
inline numpy_dtype_match from_numpy_dtype(PyArray_Descr* descr, narrowing mode = narrowing::checked);

/// A quantized dtype from Python values of its params (nullptr or None: not given), validated as metadata['mgb_dtype']
/// is. GIL required; throws metadata_error or the error a __float__ / __index__ raised.
inline dtype quantized_dtype(dtype_enum id, PyObject* scale, PyObject* zero_point = nullptr);

/// The same for anything np.dtype() accepts.
inline numpy_dtype_match from_numpy_dtype(PyObject* dtype_like, narrowing mode = narrowing::checked);

/// The numpy dtype of an npybridge dtype (new reference, cached per dtype). Quantized dtypes carry metadata
/// {"mgb_dtype": {"name", "scale"[, "zero_point"]}} as MegEngine writes it; user dtypes are `choice`'s.
inline object to_numpy_dtype(const dtype& type, user_dtype_choice choice = user_dtype_choice::preferred);

/// Example: a numpy dtype's npybridge dtype, and back (quantized dtypes keep MegEngine's metadata).
/// ```cpp
/// #include <npybridge/numpy_dtype.hpp>
///
/// PyObject* same_dtype(PyObject* numpy_dtype) {
///     const npybridge::numpy_dtype_match match = npybridge::from_numpy_dtype(numpy_dtype);
///     return npybridge::to_numpy_dtype(match.type).release();
/// }
/// ```

}  // namespace npybridge

// ---- Definitions ------------------------------------------------------------------------------------------------

#include <npybridge/detail/numpy_dtypes.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

inline numpy_dtype_match from_numpy_dtype(PyArray_Descr* descr, narrowing mode) {
    return detail::dtype_of_descr(descr, mode);
}

inline dtype quantized_dtype(dtype_enum id, PyObject* scale, PyObject* zero_point) {
    return detail::quantized_dtype_of(id, scale, zero_point);
}

inline numpy_dtype_match from_numpy_dtype(PyObject* dtype_like, narrowing mode) {
    return detail::dtype_of_object(dtype_like, mode);
}

inline object to_numpy_dtype(const dtype& type, user_dtype_choice choice) {
    return detail::numpy_dtype_of(type, choice);
}

/// Removed (a compile error): use from_numpy_dtype.
template <class... Args>
detail::from_numpy_removed<Args...> from_numpy(Args&&...);
/// Removed (a compile error): use to_numpy_dtype.
template <class... Args>
detail::to_numpy_removed<Args...> to_numpy(Args&&...);

}  // namespace npybridge
