// npybridge/detail/dlpack_export.hpp — to_dlpack's parts: export block, capsule, argument checks, copy=True.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/array_from_tensor.hpp>
#include <npybridge/detail/messages_dlpack.hpp>
#include <npybridge/detail/tensor_from_array.hpp>
#include <npybridge/detail/dlpack_import.hpp>
#include <npybridge/core/detail/dlpack_types.hpp>
#include <npybridge/core/dlpack_abi.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/python.hpp>
#include <npybridge/core/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// One allocation per export: managed tensor, shape, strides, owner; freed by the deleter on any thread.
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

/// The capsule's destructor: an unconsumed capsule still owns its tensor.
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

/// The DLPack type of an export after the checks: CPU only, a type for the dtype (quantized: `codes`), read-only only
/// versioned or copied, packed only dense.
inline dlpack::DLDataType exportable_type(const dtype& type, const tensor_layout& layout, lowbit_layout packing,
                                          bool writable, const dlpack_options& options) {
    if (options.device && (options.device->device_type != dlpack::kDLCPU || options.device->device_id != 0)) {
        throw_export_device(*options.device);
    }
    const dtype_info& entry = type.info();
    const std::optional<dlpack::DLDataType> dl_type = dlpack_types[options.codes ? 1 : 0][table_index(entry.id)];
    if (!dl_type) throw_export_needs_codes(type);
    if (layout.ndim > copy_max_ndim)
        throw_too_many_dimensions("__dlpack__: the tensor", static_cast<long long>(layout.ndim), copy_max_ndim);
    const bool versioned = options.max_version && options.max_version->major >= 1;
    if (!versioned && !writable && !options.copy.value_or(false)) {
        throw_export_read_only_legacy(options.copy.has_value());
    }
    if (entry.is_packed && !layout.is_dense_packed(entry.id, packing)) {
        throw_export_strided_packed(type);
    }
    return *dl_type;
}

/// A dense copy for copy=True (packed: the bytes as they are).
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

/// The capsule owning one export block.
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

/// An (int, int) argument of __dlpack__, parts in [0, limit]; nullopt for None.
inline std::optional<std::pair<std::uint32_t, std::uint32_t>> dlpack_int_pair(PyObject* obj, const char* what,
                                                                              long long limit) {
    if (obj == nullptr || obj == Py_None) return std::nullopt;
    const auto refuse = [&](const char* why) { return dlpack_argument_refusal(what, obj, why); };
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2) throw refuse("must be a tuple of two ints");
    long long parts[2];
    for (Py_ssize_t i = 0; i < 2; ++i) {
        PyObject* item = PyTuple_GET_ITEM(obj, i);
        if (!PyLong_Check(item) || PyBool_Check(item)) throw refuse("must be a tuple of two ints");
        int overflow = 0;
        parts[i] = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (parts[i] == -1 && PyErr_Occurred()) throw python_error();
        if (overflow != 0 || parts[i] < 0 || parts[i] > limit) {
            throw dlpack_argument_refusal(what, obj, "each number must be in [0, " + std::to_string(limit) + "]");
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
}  // namespace npybridge
