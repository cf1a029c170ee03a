// npybridge/megbrain_compat.hpp — MegEngine 1.13 helper.h's names with MegBrain's types (docs/megbrain.md).
#pragma once

#include <npybridge/megbrain.hpp>
#include <npybridge/megengine_compat.hpp>

#include <optional>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace megbrain {
namespace npy {

/// How np2tensor gets its tensor: Meth::borrow(cn), Meth::must_borrow(cn) (cn: MegBrain's default CPU) or
/// Meth::copy_into(&tensor).
using Meth = ::npybridge::npy::Meth<mgb::HostTensorND>;
/// Whether ndarray_from_tensor shares memory.
using ShareType = ::npybridge::npy::ShareType;
/// MegEngine's PyExceptionForward.
using ::npybridge::npy::PyExceptionForward;
/// MegEngine's OprPyTracker for any key.
template <class Key>
using OprPyTracker = ::npybridge::npy::OprPyTracker<Key>;
/// The dtype MegBrain stores a numpy dtype as (int64 -> Int32, float64 -> Float32).
using ::npybridge::npy::to_mgb_supported_dtype;

/// numpy (or an array-like) -> HostTensorND; an invalid `dtype` keeps the array's.
inline mgb::HostTensorND np2tensor(PyObject* obj, const Meth& meth, mgb::DType dtype);

/// HostTensorND -> numpy; a new reference.
inline PyObject* ndarray_from_tensor(const mgb::HostTensorND& value, ShareType share);

/// mgb::DType -> numpy.dtype (None for an invalid DType); a new reference.
inline PyObject* dtype_mgb2np(mgb::DType dtype);

/// Anything numpy.dtype() accepts -> mgb::DType.
inline mgb::DType dtype_np2mgb(PyObject* obj);

/// Example: MegEngine's helper calls, unchanged but for the namespace alias.
/// ```cpp
/// #include <npybridge/megbrain_compat.hpp>
///
/// namespace npy = npybridge::megbrain::npy;
///
/// PyObject* round_trip(PyObject* array) {  // numpy -> HostTensorND (borrowed when it can) -> numpy
///     mgb::HostTensorND t = npy::np2tensor(array, npy::Meth::borrow(), mgb::DType());
///     return npy::ndarray_from_tensor(t, npy::ShareType::TRY_SHARE);
/// }
/// ```

// ---- Definitions

inline mgb::HostTensorND np2tensor(PyObject* obj, const Meth& meth, mgb::DType dtype) {
    const std::optional<npybridge::dtype> wanted =
        dtype.valid() ? std::optional<npybridge::dtype>(from_megdnn(dtype)) : std::nullopt;
    return ::npybridge::npy::np2tensor(obj, meth, wanted);
}

inline PyObject* ndarray_from_tensor(const mgb::HostTensorND& value, ShareType share) {
    return ::npybridge::npy::ndarray_from_tensor(value, share);
}

inline PyObject* dtype_mgb2np(mgb::DType dtype) {
    if (!dtype.valid()) {
        Py_INCREF(Py_None);
        return Py_None;
    }
    return ::npybridge::npy::dtype_mgb2np(from_megdnn(dtype));
}

inline mgb::DType dtype_np2mgb(PyObject* obj) { return to_megdnn(::npybridge::npy::dtype_np2mgb(obj)); }

}  // namespace npy
}  // namespace megbrain
}  // namespace npybridge
