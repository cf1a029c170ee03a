// npybridge/megbrain_compat.hpp — MegEngine's helper names (npy::np2tensor, npy::ndarray_from_tensor, ...) with
// MegBrain's own types (mgb::HostTensorND, mgb::DType, mgb::CompNode), as MegEngine 1.13's
// imperative/python/src/helper.h declares them, over npybridge. A MegBrain-based project replaces its helper
// with `#include <npybridge/megbrain_compat.hpp>` and `namespace npy = npybridge::megbrain::npy;`
// (docs/megbrain.md says where npybridge differs on purpose).
#pragma once

#include <npybridge/megbrain.hpp>
#include <npybridge/megengine_compat.hpp>

#include <optional>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace megbrain {
namespace npy {

/// How np2tensor gets its tensor: Meth::borrow(cn), Meth::must_borrow(cn) (cn defaults to MegBrain's
/// default CPU) or Meth::copy_into(&tensor) (the copy is made on that tensor's comp node).
using Meth = ::npybridge::npy::Meth<mgb::HostTensorND>;
/// Whether ndarray_from_tensor shares the tensor's memory, as MegEngine's npy::ShareType.
using ShareType = ::npybridge::npy::ShareType;
/// MegEngine's PyExceptionForward.
using ::npybridge::npy::PyExceptionForward;
/// MegEngine's OprPyTracker for any key (npybridge::npy::OprPyTracker: enter / on_create / blame).
template <class Key>
using OprPyTracker = ::npybridge::npy::OprPyTracker<Key>;
/// The dtype MegBrain stores a numpy dtype as (int64 -> Int32, float64 -> Float32), as MegEngine's.
using ::npybridge::npy::to_mgb_supported_dtype;

/// numpy (or anything numpy can make an array of) -> HostTensorND. An invalid `dtype` means the array's own.
inline mgb::HostTensorND np2tensor(PyObject* obj, const Meth& meth, mgb::DType dtype) {
    const std::optional<npybridge::dtype> wanted =
        dtype.valid() ? std::optional<npybridge::dtype>(from_megdnn(dtype)) : std::nullopt;
    return ::npybridge::npy::np2tensor(obj, meth, wanted);
}

/// HostTensorND -> numpy; a new reference.
inline PyObject* ndarray_from_tensor(const mgb::HostTensorND& value, ShareType share) {
    return ::npybridge::npy::ndarray_from_tensor(value, share);
}

/// mgb::DType -> numpy.dtype (None for an invalid DType, as MegEngine's); a new reference.
inline PyObject* dtype_mgb2np(mgb::DType dtype) {
    if (!dtype.valid()) {
        Py_INCREF(Py_None);
        return Py_None;
    }
    return ::npybridge::npy::dtype_mgb2np(from_megdnn(dtype));
}

/// Anything numpy.dtype() accepts (quantized metadata included) -> mgb::DType.
inline mgb::DType dtype_np2mgb(PyObject* obj) { return to_megdnn(::npybridge::npy::dtype_np2mgb(obj)); }

}  // namespace npy
}  // namespace megbrain
}  // namespace npybridge
