// npybridge/megengine_compat.hpp — MegEngine's python_helper names (npy::) for any adapted tensor type (docs/guide.md).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/core/tensor.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/tracker.hpp>

#include <optional>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace npy {

/// How np2tensor gets its tensor, as MegEngine's npy::Meth: borrow, must_borrow (each placed where asked), or copy_into
/// an existing tensor.
template <class Tensor = tensor>
class Meth {
public:
    using placement = placement_t<Tensor>;
    static Meth borrow(const placement& where = default_placement<Tensor>()) {
        return Meth(borrow_policy::try_borrow, nullptr, where);
    }
    static Meth must_borrow(const placement& where = default_placement<Tensor>()) {
        return Meth(borrow_policy::must_borrow, nullptr, where);
    }
    /// `.for_reading()`: C++ only reads, so a read-only array is borrowed too (to_tensor_options::reads_only); without
    /// it a type that cannot mark memory read-only copies.
    Meth for_reading() const {
        Meth meth = *this;
        meth.m_reads_only = true;
        return meth;
    }
    static Meth copy_into(Tensor* dest) { return Meth(borrow_policy::copy, dest, placement_of(*dest)); }
    /// `.with(narrowing::wrap)`: as to_tensor's narrowing (checked by default).
    Meth with(narrowing how) const {
        Meth meth = *this;
        meth.m_narrow = how;
        meth.m_megengine = false;
        return meth;
    }
    /// `.as_megengine()`: MegEngine 1.13's own conversion, byte for byte (docs/megbrain.md).
    Meth as_megengine() const {
        Meth meth = with(narrowing::wrap);
        meth.m_megengine = true;
        return meth;
    }

    borrow_policy policy() const noexcept { return m_policy; }
    narrowing narrow() const noexcept { return m_narrow; }
    bool megengine() const noexcept { return m_megengine; }
    bool reads_only() const noexcept { return m_reads_only; }
    Tensor* destination() const noexcept { return m_dest; }
    const placement& where() const noexcept { return m_where; }

private:
    Meth(borrow_policy policy, Tensor* dest, const placement& where) : m_policy(policy), m_dest(dest), m_where(where) {}
    borrow_policy m_policy;
    Tensor* m_dest;
    placement m_where;
    narrowing m_narrow = narrowing::checked;
    bool m_megengine = false;
    bool m_reads_only = false;
};

/// numpy -> tensor, as MegEngine's npy::np2tensor: empty `type` keeps the array's dtype (int64 / float64 narrowed by
/// the Meth's narrowing: checked unless asked). copy_into gives the destination the array's shape, dtype and values, or leaves it
/// as it was on error.
template <class Tensor>
Tensor np2tensor(PyObject* obj, const Meth<Tensor>& meth, const std::optional<dtype>& type = std::nullopt);

/// MegEngine's npy::ShareType.
enum class ShareType { MUST_SHARE, MUST_UNSHARE, TRY_SHARE };

/// tensor -> numpy, as MegEngine's npy::ndarray_from_tensor (new reference): a shared array is read-only, as
/// MegEngine's; a copy is writable unless the tensor's memory is read-only.
template <class Tensor>
PyObject* ndarray_from_tensor(const Tensor& value, ShareType share);

/// dtype -> numpy, as npy::dtype_mgb2np (new reference; MegEngine's user dtypes while it is imported).
inline PyObject* dtype_mgb2np(const dtype& type);

/// numpy -> dtype, as npy::dtype_np2mgb; dtype_error for dtypes MegBrain lacks (int64, float64).
inline dtype dtype_np2mgb(PyObject* obj);

/// As npy::to_mgb_supported_dtype: the scalar type a dtype becomes in MegBrain (int64 -> int32, float64 -> float32);
/// metadata refused. New reference.
inline PyObject* to_mgb_supported_dtype(PyObject* dtype_like);

/// MegEngine's PyExceptionForward: python_error with throw_(), which throws the pending error.
class PyExceptionForward : public python_error {
public:
    using python_error::python_error;
    [[noreturn]] static void throw_() { throw PyExceptionForward(); }
};

/// MegEngine's OprPyTracker for any key: `enter(tag)` (a scope) replaces begin/end_set_tracker, `on_create(key)` tags,
/// `blame(key, message)` adds "created at".
template <class Key>
using OprPyTracker = origin_tracker<Key>;

/// Example: MegEngine's python_helper calls over npybridge's own tensor.
/// ```cpp
/// #include <npybridge/megengine_compat.hpp>
///
/// namespace npy = npybridge::npy;
///
/// PyObject* round_trip(PyObject* array) {  // numpy -> tensor (borrowed when it can) -> numpy
///     npybridge::tensor t = npy::np2tensor(array, npy::Meth<>::borrow());
///     return npy::ndarray_from_tensor(t, npy::ShareType::TRY_SHARE);
/// }
/// ```

// ---- Definitions

template <class Tensor>
Tensor np2tensor(PyObject* obj, const Meth<Tensor>& meth, const std::optional<dtype>& type) {
    to_tensor_options options;
    options.type = type;
    options.policy = meth.policy();
    options.narrow = meth.narrow();
    options.reads_only = meth.reads_only();
    // MegEngine's own types take NumPy's cast: BFloat16 a float, packed codes their storage (wrapped, then checked).
    int megengine_cast = NPY_NOTYPE;
    if (meth.megengine() && type) {
        switch (type->id()) {
            case dtype_enum::BFloat16: megengine_cast = NPY_FLOAT; break;
            case dtype_enum::QuantizedS4:
            case dtype_enum::QuantizedS1: megengine_cast = NPY_INT8; break;
            case dtype_enum::Quantized4Asymm: megengine_cast = NPY_UINT8; break;
            case dtype_enum::IntB1:
            case dtype_enum::IntB2:
            case dtype_enum::IntB4: megengine_cast = NPY_INT32; break;
            default: break;
        }
    }
    object cast;
    if (megengine_cast != NPY_NOTYPE &&
        !(PyArray_Check(obj) && (PyArray_TYPE(reinterpret_cast<PyArrayObject*>(obj)) == megengine_cast ||
                                 PyArray_TYPE(reinterpret_cast<PyArrayObject*>(obj)) >= NPY_USERDEF))) {
        cast = object::steal(
            PyArray_FromAny(obj, PyArray_DescrFromType(megengine_cast), 0, 0, NPY_ARRAY_FORCECAST, nullptr));
        if (!cast) throw python_error();
        try {
            return np2tensor(cast.get(), meth, type);
        } catch (const value_range_error& refused) {
            detail::throw_after_megengine_cast(refused, megengine_cast);
        }
    }
    Tensor made = to_tensor<Tensor>(obj, options, meth.where()).tensor;
    if (Tensor* dest = meth.destination()) {
        *dest = std::move(made);
        return *dest;
    }
    return made;
}

template <class Tensor>
PyObject* ndarray_from_tensor(const Tensor& value, ShareType share) {
    const share_policy policy = share == ShareType::MUST_SHARE     ? share_policy::must_share
                                : share == ShareType::MUST_UNSHARE ? share_policy::copy
                                                                   : share_policy::try_share;
    object array = to_array(value, policy);
    auto* made = reinterpret_cast<PyArrayObject*>(array.get());
    if (policy != share_policy::copy && PyArray_SIZE(made) != 0 &&
        PyArray_DATA(made) == tensor_adapter<Tensor>::data(value)) {
        PyArray_CLEARFLAGS(made, NPY_ARRAY_WRITEABLE);
    }
    return array.release();
}

inline PyObject* dtype_mgb2np(const dtype& type) { return to_numpy_dtype(type).release(); }

inline dtype dtype_np2mgb(PyObject* obj) {
    if (obj == nullptr || obj == Py_None) throw dtype_error("cannot convert None to a numpy dtype");
    return from_numpy_dtype(obj, narrowing::reject).type;
}

inline PyObject* to_mgb_supported_dtype(PyObject* dtype_like) {
    PyArray_Descr* raw = nullptr;
    if (!PyArray_DescrConverter(dtype_like, &raw)) throw python_error();
    object descr = object::steal(reinterpret_cast<PyObject*>(raw));
    if (detail::descr_metadata(raw) != nullptr) {
        throw dtype_error("to_mgb_supported_dtype: unexpected metadata in " + safe_repr(descr.get()) +
                          " (quantized dtypes are MegBrain dtypes already)");
    }
    const dtype type = from_numpy_dtype(raw, narrowing::checked).type;
    const object supported = to_numpy_dtype(type);
    PyObject* scalar_type = reinterpret_cast<PyObject*>(reinterpret_cast<PyArray_Descr*>(supported.get())->typeobj);
    Py_INCREF(scalar_type);
    return scalar_type;
}

}  // namespace npy

/// Deprecated since 0.6: the old name of npybridge::npy.
namespace [[deprecated("npybridge: npybridge::megengine is deprecated since 0.6.0: write npybridge::npy")]] megengine {
using namespace ::npybridge::npy;
}  // namespace megengine
}  // namespace npybridge
