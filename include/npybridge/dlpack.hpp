// npybridge/dlpack.hpp — DLPack 1.1 both ways: any adapted tensor to a capsule, any __dlpack__ object to a tensor.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/detail/dlpack_import.hpp>
#include <npybridge/core/detail/dlpack_types.hpp>
#include <npybridge/core/dlpack_abi.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/core/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// What to_dlpack exports, as the array API's __dlpack__ arguments say it.
struct dlpack_options {
    /// The newest DLPack version the consumer reads (max_version); none or
    /// below 1.0: the legacy capsule "dltensor".
    std::optional<dlpack::DLPackVersion> max_version;
    /// dl_device: only the CPU (kDLCPU, 0) is possible.
    std::optional<dlpack::DLDevice> device;
    /// true: always a copy (flagged IS_COPIED); false: never a copy (an error
    /// when one is needed); none: a copy only when needed.
    std::optional<bool> copy;
    /// Quantized dtypes and IntB1/2/4: export the stored codes (int8, uint4,
    /// ...). DLPack has no quantized types, so without this their export is an
    /// error rather than a silent loss of scale and zero_point.
    bool codes = false;

    /// The options from __dlpack__'s Python arguments (each nullptr or None when not given):
    /// `stream` must be None (CPU memory), `max_version` and `dl_device` are tuples of two non-negative ints
    /// (a version's numbers fit 32 bits, a device's type and id 31), `copy` and `codes` are truth values.
    /// A bad one is a conversion_error (a TypeError and ValueError in Python) naming the argument and value.
    static dlpack_options from_python(PyObject* stream, PyObject* max_version, PyObject* dl_device, PyObject* copy,
                                      PyObject* codes = nullptr);
};

namespace detail {

/// One allocation per export: the managed tensor (either kind), its shape and
/// strides, and the owner keeping the tensor's memory alive. The deleter
/// frees it on any thread (owner handles may be released anywhere).
struct dlpack_export {
    dlpack::DLManagedTensor legacy{};
    dlpack::DLManagedTensorVersioned versioned{};
    owner_handle owner;
    std::int64_t shape[copy_max_ndim];
    std::int64_t strides[copy_max_ndim];

    static void delete_legacy(dlpack::DLManagedTensor* self) noexcept {
        delete static_cast<dlpack_export*>(self->manager_ctx);
    }
    static void delete_versioned(dlpack::DLManagedTensorVersioned* self) noexcept {
        delete static_cast<dlpack_export*>(self->manager_ctx);
    }
};

/// The capsule's destructor: a capsule nobody consumed (still named
/// "dltensor[_versioned]") still owns its tensor; a consumed one does not.
inline void dlpack_capsule_destructor(PyObject* capsule) noexcept {
    if (PyCapsule_IsValid(capsule, dlpack::versioned_capsule_name)) {
        auto* managed = static_cast<dlpack::DLManagedTensorVersioned*>(
            PyCapsule_GetPointer(capsule, dlpack::versioned_capsule_name));
        if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
    } else if (PyCapsule_IsValid(capsule, dlpack::capsule_name)) {
        auto* managed = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule, dlpack::capsule_name));
        if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
    }
}

/// The message for a quantized (or IntBn) export without `codes`.
inline std::string needs_codes_text(const dtype& type) {
    const dtype_info& entry = type.info();
    const auto codes = dlpack_type_of(entry, true);
    const std::string what = entry.is_quantized
                                 ? "DLPack has no quantized types: its " +
                                       std::string(entry.param_fields == 2 ? "scale and zero_point" : "scale") +
                                       " would be lost"
                                 : "DLPack has no type for its odd values (" + valid_set_text(entry) + ")";
    return "DLPack export of " + type.to_string() + ": " + what + "; export the stored codes (" +
           (codes ? dlpack::type_text(*codes) : std::string("none")) +
           ") with the codes option (dlpack_options::codes, __dlpack__(codes=True)) and carry the rest yourself";
}

/// The DLPack type a tensor exports as, after the checks of __dlpack__'s arguments: the CPU device only, a
/// DLPack type for the dtype (quantized ones need `codes`), a read-only tensor only as a versioned capsule
/// (or a copy), packed data only dense.
inline dlpack::DLDataType exportable_type(const dtype& type, const tensor_layout& layout, lowbit_layout packing,
                                          bool writable, const dlpack_options& options) {
    if (options.device && (options.device->device_type != dlpack::kDLCPU || options.device->device_id != 0)) {
        throw dlpack_error("__dlpack__: dl_device " +
                           dlpack::device_text(options.device->device_type, options.device->device_id) +
                           " is not possible: npybridge tensors live in CPU memory (kDLCPU, 0)");
    }
    const dtype_info& entry = type.info();
    const std::optional<dlpack::DLDataType> dl_type = dlpack_types[options.codes ? 1 : 0][table_index(entry.id)];
    if (!dl_type) throw dtype_error(needs_codes_text(type));
    if (layout.ndim > copy_max_ndim) throw dlpack_error("__dlpack__: too many dimensions");
    const bool versioned = options.max_version && options.max_version->major >= 1;
    if (!versioned && !writable && !options.copy.value_or(false)) {
        throw dlpack_error(
            std::string("__dlpack__: the tensor is read-only and the legacy DLPack capsule cannot say so; ") +
            (options.copy ? "pass copy=True, or " : "") +
            "ask for max_version=(1, 0) or newer (a read-only DLPack 1.x capsule)");
    }
    if (entry.is_packed && !layout.is_dense_packed(entry.id, packing)) {
        throw dlpack_error("__dlpack__: a strided packed " + type.to_string() + " tensor cannot be described");
    }
    return *dl_type;
}

/// A fresh, dense copy of a tensor's memory for copy=True (packed: its bytes as they are).
inline tensor export_copy(const dtype& type, const void* data, const tensor_layout& layout, lowbit_layout packing) {
    const dtype_info& entry = type.info();
    tensor fresh = tensor::empty(type, layout.shape.data(), layout.ndim, packing);
    if (entry.is_packed) {
        std::memcpy(fresh.data(), data, fresh.storage_bytes());
    } else if (layout.count() != 0) {
        copy_plan plan;
        plan.ndim = layout.ndim;
        for (std::size_t i = 0; i < layout.ndim; ++i) {
            plan.shape[i] = layout.shape[i];
            plan.src[i] = layout.strides[i] * static_cast<std::ptrdiff_t>(entry.element_size);
            plan.dst[i] = fresh.layout().strides[i] * static_cast<std::ptrdiff_t>(entry.element_size);
        }
        without_gil_if_large(layout.count() * entry.element_size,
                             [&] { copy_strided(plan, data, fresh.data(), entry.element_size); });
    }
    return fresh;
}

/// The capsule over one export block (it owns the block from here on).
inline object export_capsule(std::unique_ptr<dlpack_export> made, const dlpack::DLTensor& view, bool versioned,
                             std::uint64_t flags) {
    dlpack_export* block = made.get();
    PyObject* capsule;
    if (versioned) {
        block->versioned = {dlpack::supported, block, &dlpack_export::delete_versioned, flags, view};
        capsule = PyCapsule_New(&block->versioned, dlpack::versioned_capsule_name, dlpack_capsule_destructor);
    } else {
        block->legacy = {view, block, &dlpack_export::delete_legacy};
        capsule = PyCapsule_New(&block->legacy, dlpack::capsule_name, dlpack_capsule_destructor);
    }
    if (capsule == nullptr) throw python_error();
    made.release();
    return object::steal(capsule);
}

/// Checks an imported DLPack tensor npybridge can read (CPU memory, at most copy_max_ndim dimensions, a shape,
/// no negative extents or lanes); returns whether it has no elements.
inline bool checked_import_view(const consumed_capsule& taken) {
    const dlpack::DLTensor& view = taken.view;
    if (view.device.device_type != dlpack::kDLCPU) {
        throw dlpack_error("from_dlpack: the DLPack tensor is on " +
                           dlpack::device_text(view.device.device_type, view.device.device_id) +
                           "; npybridge reads CPU memory only (kDLCPU)");
    }
    if (view.ndim < 0 || static_cast<std::size_t>(view.ndim) > copy_max_ndim) {
        throw conversion_error("from_dlpack: a DLPack tensor of " + std::to_string(view.ndim) +
                               " dimensions; npybridge holds at most " + std::to_string(NPYBRIDGE_MAX_NDIM));
    }
    if (view.ndim > 0 && view.shape == nullptr) {
        throw dlpack_error("from_dlpack: the DLPack tensor's shape is NULL with ndim = " + std::to_string(view.ndim));
    }
    std::size_t extents[copy_max_ndim] = {};
    for (std::int32_t i = 0; i < view.ndim; ++i) {
        if (view.shape[i] < 0) throw conversion_error("from_dlpack: negative extent in the DLPack tensor's shape");
        extents[i] = static_cast<std::size_t>(view.shape[i]);
    }
    // A shape no memory can hold is a lie.
    const bool empty = tensor_layout::checked_count(extents, static_cast<std::size_t>(view.ndim)) == 0;
    check_dlpack_view(view, taken.flags);
    if (view.dtype.lanes != 1) {
        throw dtype_error("from_dlpack: DLPack type " + dlpack::type_text(view.dtype) +
                          " (vector lanes) has no MegBrain dtype");
    }
    return empty;
}

/// The planner's first case over DLPack memory: a plain dtype as it is, writable, aligned, strides the tensor
/// type takes. Fills `layout` and returns the dtype to borrow straight (no numpy array in between), or nullptr
/// to leave the decision to the general path. Always inlined: from_dlpack builds the tensor in place.
template <class Tensor>
[[gnu::always_inline]] inline const dtype* dlpack_borrow_at_once(const consumed_capsule& taken, bool empty,
                                                                 const to_tensor_options& options,
                                                                 tensor_layout& layout) {
    using adapter = tensor_adapter<Tensor>;
    const dlpack::DLTensor& view = taken.view;
    const dtype* plain = view.dtype.bits >= 8 ? plain_dtype_of(view.dtype) : nullptr;
    if (plain == nullptr || (taken.flags & dlpack::flag_read_only) != 0 ||
        static_cast<std::size_t>(view.ndim) > ndim_limit<Tensor> || (view.ndim == 0 && !adapter::has_scalar)) {
        return nullptr;
    }
    layout.ndim = static_cast<std::size_t>(view.ndim);
    std::ptrdiff_t stride = 1;
    for (std::size_t i = layout.ndim; i-- > 0;) {
        layout.shape[i] = static_cast<std::size_t>(view.shape[i]);
        // Size-1 dimensions (and every one of an empty tensor) get the contiguous stride: theirs is never used.
        const bool own = view.strides != nullptr && view.shape[i] > 1 && !empty;
        layout.strides[i] = own ? static_cast<std::ptrdiff_t>(view.strides[i]) : stride;
        stride *= static_cast<std::ptrdiff_t>(view.shape[i] == 0 ? 1 : view.shape[i]);
    }
    const bool aligned = reinterpret_cast<std::uintptr_t>(dlpack_first_byte(view)) % plain->info().element_size == 0;
    return borrows_at_once(plain, aligned, adapter::accepts_strides(layout), options) ? plain : nullptr;
}

/// Padded sub-byte data (one element per byte, DLPack's IS_SUBBYTE_TYPE_PADDED): the values extracted into a
/// new array, so the tensor is always a copy.
template <class Tensor>
to_tensor_result<Tensor> padded_from_dlpack(consumed_capsule& taken, const to_tensor_options& options,
                                            const placement_t<Tensor>& where) {
    const dlpack::DLTensor& view = taken.view;
    const std::string what = "padded sub-byte DLPack " + dlpack::type_text(view.dtype) +
                             " data (one element per byte) is unpacked into a copy";
    if (options.policy == borrow_policy::must_borrow) throw conversion_error("must_borrow: " + what);
    object descr = object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(NPY_UINT8)));
    const bool writable = (taken.flags & dlpack::flag_read_only) == 0;
    object bytes = array_over_dlpack(view, descr.get(), 1, writable, taken.owner);
    object values = low_bits_as_bytes(reinterpret_cast<PyArrayObject*>(bytes.get()), view.dtype.bits,
                                      view.dtype.code == dlpack::kDLInt);
    to_tensor_result<Tensor> result = to_tensor<Tensor>(values.get(), options, where);
    result.borrowed = false;  // (it may have borrowed the extracted values)
    result.copy_reason = what;
    return result;
}

}  // namespace detail

/// Tensor → DLPack capsule (new reference), as the array API's __dlpack__ makes it: versioned (DLPack 1.1, with
/// READ_ONLY and IS_COPIED) when options.max_version allows, else legacy, which refuses a read-only tensor unless
/// copy=true. The capsule keeps the tensor's memory alive until the consumer's deleter runs, on any thread.
/// Packed dtypes export their packed bits (docs/interchange.md). Requires the GIL; throws dlpack_error.
template <class Tensor>
object to_dlpack(const Tensor& source, const dlpack_options& options = {}) {
    static_assert(check_adapter<Tensor>());
    using adapter = tensor_adapter<Tensor>;
    const dtype type = adapter::dtype_of(source);
    const tensor_layout layout = adapter::layout_of(source);
    const bool writable = is_writable(source);
    const lowbit_layout packing = type.info().is_packed ? adapter::packed_layout(source) : lowbit_layout::compact;
    const dlpack::DLDataType dl_type = detail::exportable_type(type, layout, packing, writable, options);
    const bool versioned = options.max_version && options.max_version->major >= 1;
    const bool copy = options.copy.value_or(false);
    auto made = std::make_unique<detail::dlpack_export>();
    void* data = adapter::data(source);
    if (copy) {
        tensor fresh = detail::export_copy(type, data, layout, packing);
        data = fresh.data();
        made->owner = fresh.take_owner();
    } else {
        made->owner = adapter::owner(source);
    }
    const tensor_layout& described = copy ? tensor_layout::contiguous(layout.shape.data(), layout.ndim) : layout;
    for (std::size_t i = 0; i < layout.ndim; ++i) made->shape[i] = static_cast<std::int64_t>(layout.shape[i]);
    if (type.info().is_packed) {
        detail::packed_strides(described, type.info().bits, packing, made->strides);
    } else {
        for (std::size_t i = 0; i < layout.ndim; ++i) made->strides[i] = described.strides[i];
    }
    const dlpack::DLTensor view{data,
                                dlpack::DLDevice{dlpack::kDLCPU, 0},
                                static_cast<std::int32_t>(layout.ndim),
                                dl_type,
                                made->shape,
                                made->strides,
                                0};
    const std::uint64_t flags = (writable || copy ? 0 : dlpack::flag_read_only) | (copy ? dlpack::flag_is_copied : 0);
    return detail::export_capsule(std::move(made), view, versioned, flags);
}

/// Any DLPack producer (an object with __dlpack__, or a capsule) → Tensor, with to_tensor's options, policies and
/// copy reasons. A borrow calls the producer's deleter exactly once, on whatever thread lets go last; READ_ONLY
/// memory gives a read-only tensor. Only CPU memory is read: another device is a dlpack_error naming it.
/// Requires the GIL.
template <class Tensor = tensor>
to_tensor_result<Tensor> from_dlpack(PyObject* obj, const to_tensor_options& options = {},
                                     const placement_t<Tensor>& where = default_placement<Tensor>()) {
    static_assert(check_adapter<Tensor>());
    object capsule = detail::dlpack_capsule_of(obj);
    detail::consumed_capsule taken = detail::consume_capsule(capsule.get());
    const bool empty = detail::checked_import_view(taken);
    const dlpack::DLTensor& view = taken.view;
    const bool read_only = (taken.flags & dlpack::flag_read_only) != 0;
    tensor_layout layout;
    if (const dtype* plain = detail::dlpack_borrow_at_once<Tensor>(taken, empty, options, layout)) {
        const dtype type = *plain;
        void* data = detail::dlpack_first_byte(view);
        return {
            std::in_place,
            [&] { return detail::adapter_borrow_at<Tensor>(type, data, layout, true, std::move(taken.owner), where); },
            true};
    }
    to_tensor_options kept = options;
    kept.keep_alive = true;
    if (view.dtype.bits < 8) {
        if ((taken.flags & dlpack::flag_subbyte_padded) == 0)
            return detail::packed_from_dlpack<Tensor>(view, kept, where);
        return detail::padded_from_dlpack<Tensor>(taken, kept, where);
    }
    // Anything else, read-only memory included: an ndarray over the DLPack memory, planned as any other.
    object descr = detail::numpy_descr_for(view.dtype);
    const auto itemsize = static_cast<std::size_t>(detail::descr_elsize(reinterpret_cast<PyArray_Descr*>(descr.get())));
    object array = detail::array_over_dlpack(view, descr.get(), itemsize, !read_only, taken.owner);
    return to_tensor<Tensor>(array.get(), kept, where);
}

namespace detail {

/// A (int, int) argument of __dlpack__, each part in [0, limit]; nullopt for None.
inline std::optional<std::pair<std::uint32_t, std::uint32_t>> dlpack_int_pair(PyObject* obj, const char* what,
                                                                              long long limit) {
    if (obj == nullptr || obj == Py_None) return std::nullopt;
    const auto refuse = [&](const std::string& why) {
        return conversion_error("__dlpack__: " + std::string(what) + "=" + safe_repr(obj) + ": " + why);
    };
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2) throw refuse("must be a tuple of two ints");
    long long parts[2];
    for (Py_ssize_t i = 0; i < 2; ++i) {
        PyObject* item = PyTuple_GET_ITEM(obj, i);
        if (!PyLong_Check(item) || PyBool_Check(item)) throw refuse("must be a tuple of two ints");
        int overflow = 0;
        parts[i] = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (parts[i] == -1 && PyErr_Occurred()) throw python_error();
        if (overflow != 0 || parts[i] < 0 || parts[i] > limit) {
            throw refuse("each number must be in [0, " + std::to_string(limit) + "]");
        }
    }
    return std::make_pair(static_cast<std::uint32_t>(parts[0]), static_cast<std::uint32_t>(parts[1]));
}

inline std::optional<bool> dlpack_truth(PyObject* obj) {
    if (obj == nullptr || obj == Py_None) return std::nullopt;
    const int truth = PyObject_IsTrue(obj);
    if (truth < 0) throw python_error();
    return truth == 1;
}

}  // namespace detail

inline dlpack_options dlpack_options::from_python(PyObject* stream, PyObject* max_version, PyObject* dl_device,
                                                  PyObject* copy, PyObject* codes) {
    if (stream != nullptr && stream != Py_None) {
        throw dlpack_error("__dlpack__: stream must be None for CPU memory, got " + safe_repr(stream));
    }
    dlpack_options options;
    if (auto version = detail::dlpack_int_pair(max_version, "max_version", 0xFFFFFFFFLL)) {
        options.max_version = dlpack::DLPackVersion{version->first, version->second};
    }
    if (auto device = detail::dlpack_int_pair(dl_device, "dl_device", 0x7FFFFFFFLL)) {
        options.device =
            dlpack::DLDevice{static_cast<std::int32_t>(device->first), static_cast<std::int32_t>(device->second)};
    }
    options.copy = detail::dlpack_truth(copy);
    options.codes = detail::dlpack_truth(codes).value_or(false);
    return options;
}

}  // namespace npybridge
