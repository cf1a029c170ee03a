// npybridge/detail/dlpack_import.hpp — a producer's DLPack tensor read: capsule, deleter's owner, checks, copies.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/array_from_tensor.hpp>
#include <npybridge/detail/messages_dlpack.hpp>
#include <npybridge/detail/numpy_dtypes.hpp>
#include <npybridge/detail/tensor_from_array.hpp>
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
#include <string_view>
#include <utility>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

namespace detail {

/// Keeps an imported DLPack tensor alive and calls the producer's deleter once, when the last owner goes (any thread:
/// DLPack's deleters need no GIL); not after the interpreter finalizes, as Python owners leak then.
struct dlpack_owner_block : owner_block {
    void* managed;
    bool versioned;

    dlpack_owner_block(void* m, bool v) noexcept : owner_block(&release_block), managed(m), versioned(v) {}

    static void release_block(owner_block* base) noexcept {
        auto* self = static_cast<dlpack_owner_block*>(base);
        if (Py_IsInitialized()) self->call_deleter();
        delete self;
    }

    void call_deleter() noexcept {
        if (versioned) {
            auto* m = static_cast<dlpack::DLManagedTensorVersioned*>(managed);
            if (m->deleter != nullptr) m->deleter(m);
        } else {
            auto* m = static_cast<dlpack::DLManagedTensor*>(managed);
            if (m->deleter != nullptr) m->deleter(m);
        }
    }
};

/// The capsule of `obj`: obj itself, or obj.__dlpack__() asked for DLPack 1.1 (the legacy call for older producers).
/// The device is checked on the tensor: a CPU consumer passes no stream.
inline object dlpack_capsule_of(PyObject* obj) {
    if (PyCapsule_CheckExact(obj)) return object::borrow(obj);
    // Interned name, keywords and version, made once.
    static PyObject* const method = PyUnicode_InternFromString("__dlpack__");
    static PyObject* const keywords = Py_BuildValue("(s)", "max_version");
    static PyObject* const version = Py_BuildValue("(II)", dlpack::supported.major, dlpack::supported.minor);
    if (method == nullptr || keywords == nullptr || version == nullptr) throw python_error();
    PyObject* args[] = {obj, version};
    PyObject* capsule = PyObject_VectorcallMethod(method, args, 1, keywords);
    if (capsule == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();  // DLPack < 1.0: the legacy call
        capsule = PyObject_VectorcallMethod(method, args, 1, nullptr);
    }
    if (capsule == nullptr) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError) && !PyObject_HasAttr(obj, method)) {
            PyErr_Clear();
            throw_not_a_producer(obj);
        }
        throw python_error();
    }
    return object::steal(capsule);
}

/// The DLPack type of each plain row: borrowed without asking numpy.
struct plain_dlpack_rows {
    std::array<dlpack::DLDataType, dtype_count> types{};
    std::array<bool, dtype_count> present{};
};
constexpr plain_dlpack_rows make_plain_dlpack_rows() noexcept {
    plain_dlpack_rows rows{};
    for (std::size_t i = 0; i < dtype_count; ++i) {
        const dtype_info& entry = dtype_table[i];
        if (entry.is_packed || entry.is_quantized || entry.category == dtype_category::other) continue;
        if (const auto type = dlpack_type_of(entry, false)) {
            rows.types[i] = *type;
            rows.present[i] = true;
        }
    }
    return rows;
}
inline constexpr plain_dlpack_rows plain_dlpack = make_plain_dlpack_rows();

/// The plain dtype of a DLPack type; nullptr when none (64-bit types narrow through numpy, sub-byte are packed).
inline const dtype* plain_dtype_of(dlpack::DLDataType type) noexcept {
    for (std::size_t i = 0; i < dtype_count; ++i) {
        if (plain_dlpack.present[i] && plain_dlpack.types[i] == type) return &dtype::of_row(i);
    }
    return nullptr;
}

/// The first byte of a DLPack tensor's data; nullptr for NULL data (no elements).
inline char* dlpack_first_byte(const dlpack::DLTensor& view) noexcept {
    return view.data == nullptr ? nullptr : static_cast<char*>(view.data) + view.byte_offset;
}

/// The sub-byte DLPack types of npybridge's packed dtypes.
inline bool is_packed_dlpack_type(dlpack::DLDataType type) noexcept {
    for (const dtype_info& entry : dtype_table) {
        if (entry.is_packed && dlpack_type_of(entry, true) == std::optional(type)) return true;
    }
    return false;
}

/// Checks a producer's claims before anything is read: data for its elements, a known type, and strides whose reach
/// fits memory (computed without overflow). Each refusal names the field.
inline void check_dlpack_view(const dlpack::DLTensor& view, std::uint64_t flags) {
    const dlpack::DLDataType type = view.dtype;
    if (type.bits == 0) throw_dlpack_type(type, " has 0 bits");
    if (type.bits < 8 && !is_packed_dlpack_type(type)) {
        throw_dlpack_type(type, std::string(flags & dlpack::flag_subbyte_padded ? " (padded)" : "") +
                                    " has no MegDNN dtype (sub-byte types npybridge reads: int4, uint4, uint2, uint1)");
    }
    std::size_t count = 1;
    for (std::int32_t i = 0; i < view.ndim; ++i) count *= static_cast<std::size_t>(view.shape[i]);
    if (count != 0 && view.data == nullptr) {
        throw_dlpack_field("data is NULL with " + std::to_string(count) +
                           " elements (NULL data is valid for zero elements only)");
    }
    if (count == 0) return;
    const bool packed = type.bits < 8 && (flags & dlpack::flag_subbyte_padded) == 0;
    // Bits for packed data, bytes otherwise.
    const std::int64_t unit =
        packed ? type.bits : std::max<std::int64_t>(1, (static_cast<std::int64_t>(type.bits) * type.lanes + 7) / 8);
    std::int64_t reach = 0, contiguous = 1;
    for (std::int32_t i = view.ndim; i-- > 0;) {
        const std::int64_t stride = view.strides != nullptr ? view.strides[i] : contiguous;
        std::int64_t step = 0, span = 0;
        if (__builtin_mul_overflow(stride < 0 ? -stride : stride, unit, &step) ||
            __builtin_mul_overflow(view.shape[i] - 1, step, &span) || __builtin_add_overflow(reach, span, &reach) ||
            __builtin_mul_overflow(contiguous, view.shape[i], &contiguous) || reach > PTRDIFF_MAX / 2) {
            throw_dlpack_field("strides[" + std::to_string(i) + "] = " + std::to_string(stride) + " with shape[" +
                               std::to_string(i) + "] = " + std::to_string(view.shape[i]) + " reaches past any memory");
        }
    }
    std::int64_t end = 0;
    if (view.byte_offset > static_cast<std::uint64_t>(PTRDIFF_MAX) ||
        __builtin_add_overflow(static_cast<std::int64_t>(view.byte_offset), packed ? reach / 8 + 1 : reach + unit,
                               &end) ||
        end > PTRDIFF_MAX / 2) {
        throw_dlpack_field("byte_offset " + std::to_string(view.byte_offset) + " plus its strides' reach " +
                           std::to_string(reach) + " reaches past any memory");
    }
}

/// Takes the managed tensor out of a capsule (renamed "used_...") with an owner that calls its deleter once.
struct consumed_capsule {
    dlpack::DLTensor view;
    std::uint64_t flags;
    owner_handle owner;
};

inline consumed_capsule consume_capsule(PyObject* capsule) {
    const char* name = PyCapsule_GetName(capsule);
    if (name == nullptr && PyErr_Occurred()) throw python_error();
    // Compared in place: no copy of the name.
    const std::string_view text = name ? name : "";
    if (text == dlpack::used_capsule_name || text == dlpack::used_versioned_capsule_name) {
        throw_dlpack_capsule(text);
    }
    consumed_capsule result{};
    if (text == dlpack::versioned_capsule_name) {
        auto* managed = static_cast<dlpack::DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, name));
        if (managed == nullptr) throw python_error();
        if (managed->version.major != dlpack::supported.major) {
            // Not readable: left unconsumed, so the capsule frees it.
            throw_dlpack_capsule(text, static_cast<int>(managed->version.major),
                                 static_cast<int>(managed->version.minor));
        }
        if (PyCapsule_SetName(capsule, dlpack::used_versioned_capsule_name) != 0) throw python_error();
        result.view = managed->dl_tensor;
        result.flags = managed->flags;
        result.owner = owner_handle::adopt(new dlpack_owner_block(managed, true));
    } else if (text == dlpack::capsule_name) {
        auto* managed = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule, name));
        if (managed == nullptr) throw python_error();
        if (PyCapsule_SetName(capsule, dlpack::used_capsule_name) != 0) throw python_error();
        result.view = managed->dl_tensor;
        result.flags = 0;
        result.owner = owner_handle::adopt(new dlpack_owner_block(managed, false));
    } else {
        throw_dlpack_capsule(text);
    }
    result.owner.get()->read_only = (result.flags & dlpack::flag_read_only) != 0;
    return result;
}

/// The numpy dtype (new reference) holding DLPack elements of `type`; the conversion then decides the npybridge dtype.
inline object numpy_descr_for(dlpack::DLDataType type) {
    using namespace dlpack;
    int type_num = -1;
    switch (type.code) {
        case kDLInt:
            type_num = type.bits == 8    ? NPY_INT8
                       : type.bits == 16 ? NPY_INT16
                       : type.bits == 32 ? NPY_INT32
                       : type.bits == 64 ? NPY_INT64
                                         : -1;
            break;
        case kDLUInt:
            type_num = type.bits == 8    ? NPY_UINT8
                       : type.bits == 16 ? NPY_UINT16
                       : type.bits == 32 ? NPY_UINT32
                       : type.bits == 64 ? NPY_UINT64
                                         : -1;
            break;
        case kDLFloat:
            type_num = type.bits == 16 ? NPY_HALF : type.bits == 32 ? NPY_FLOAT : type.bits == 64 ? NPY_DOUBLE : -1;
            break;
        case kDLComplex: type_num = type.bits == 64 ? NPY_COMPLEX64 : type.bits == 128 ? NPY_COMPLEX128 : -1; break;
        case kDLBool: type_num = type.bits == 8 ? NPY_BOOL : -1; break;
        case kDLBfloat:
            if (type.bits == 16) return numpy_dtype_of(dtype(dtype_enum::BFloat16), user_dtype_choice::own);
            break;
        default: break;
    }
    if (type_num < 0 || type.lanes != 1) {
        throw_dlpack_type(type, " has no MegBrain dtype");
    }
    return object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(type_num)));
}

/// A numpy array over DLPack memory whose base holds `owner`.
inline object array_over_dlpack(const dlpack::DLTensor& view, PyObject* descr_object, std::size_t itemsize,
                                bool writable, owner_handle& owner) {
    npy_intp dims[copy_max_ndim], strides[copy_max_ndim];
    std::int64_t stride = 1;
    bool empty = false;
    for (std::int32_t i = 0; i < view.ndim; ++i) empty |= view.shape[i] == 0;
    for (std::int32_t i = view.ndim; i-- > 0;) {
        dims[i] = static_cast<npy_intp>(view.shape[i]);
        // A stride that never steps is not read.
        const std::int64_t elements = view.strides && !empty && view.shape[i] > 1 ? view.strides[i] : stride;
        strides[i] = static_cast<npy_intp>(elements * static_cast<std::int64_t>(itemsize));
        stride *= view.shape[i] == 0 ? 1 : view.shape[i];
    }
    Py_INCREF(descr_object);
    PyObject* array =
        PyArray_NewFromDescr(&PyArray_Type, reinterpret_cast<PyArray_Descr*>(descr_object), view.ndim, dims, strides,
                             dlpack_first_byte(view), writable ? NPY_ARRAY_WRITEABLE : 0, nullptr);
    if (array == nullptr) throw_numpy_failure("from_dlpack: numpy could not describe the DLPack tensor");
    object result = object::steal(array);
    object base = owner_object::wrap(owner);
    if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), base.release()) != 0) {
        throw_numpy_failure("from_dlpack: could not attach the DLPack owner to the array");
    }
    return result;
}

/// The packing of packed DLPack data of `layout`'s shape: compact or MegBrain's row-aligned, else an error.
inline lowbit_layout packing_of(const dlpack::DLTensor& view, const tensor_layout& layout, const std::string& what) {
    std::int64_t compact[copy_max_ndim], aligned[copy_max_ndim];
    packed_strides(layout, view.dtype.bits, lowbit_layout::compact, compact);
    packed_strides(layout, view.dtype.bits, lowbit_layout::row_aligned, aligned);
    auto matches = [&](const std::int64_t* expected) {
        if (view.strides == nullptr) return expected == compact;
        for (std::int32_t i = 0; i < view.ndim; ++i) {
            if (view.shape[i] > 1 && view.strides[i] != expected[i]) return false;
        }
        return true;
    };
    if (matches(compact)) return lowbit_layout::compact;
    if (matches(aligned)) return lowbit_layout::row_aligned;
    throw_packed_strides(what);
}

/// The planner's copy reason for sub-byte DLPack data; under must_borrow, its refusal.
inline std::string sub_byte_copy_reason(sub_byte_source kind, const dlpack::DLTensor& view,
                                        const to_tensor_options& options) {
    memory_facts facts;
    facts.sub_byte = kind;
    const dtype any(dtype_enum::Int8);  // the facts decide before the target is asked
    const borrow_verdict verdict = plan_borrow(facts, options.type.value_or(any), options, read_only_marking::unknown);
    const std::string type = "DLPack " + dlpack::type_text(view.dtype);
    const std::string reason = sub_byte_reason_text(verdict.cause, type);
    if (verdict.refused) {
        throw_must_borrow(std::string(kind == sub_byte_source::packed ? "packed " : "padded ") + type + " tensor",
                          reason);
    }
    return reason;
}

/// Packed sub-byte DLPack data into a packed dtype: copied bytewise when compact or MegBrain's row-aligned layout, else
/// repacked.
template <class Tensor>
to_tensor_result<Tensor> packed_from_dlpack(const dlpack::DLTensor& view, const to_tensor_options& options,
                                            const placement_t<Tensor>& where) {
    using adapter = tensor_adapter<Tensor>;
    const std::string what = "from_dlpack: packed DLPack " + dlpack::type_text(view.dtype) + " data";
    if (!options.type || !options.type->info().is_packed ||
        dlpack_type_of(options.type->info(), true) != std::optional(view.dtype)) {
        std::string fits;
        for (const dtype_info& entry : dtype_table) {
            if (entry.is_packed && dlpack_type_of(entry, true) == std::optional(view.dtype)) {
                fits += (fits.empty() ? "" : ", ") + std::string(entry.name);
            }
        }
        throw_packed_needs_dtype(what, fits, options.type);
    }
    const std::string reason = sub_byte_copy_reason(sub_byte_source::packed, view, options);
    if (view.ndim < 0 || static_cast<std::size_t>(view.ndim) > ndim_limit<Tensor>) {
        throw_too_many_dimensions(what, view.ndim, ndim_limit<Tensor>);
    }
    const dtype target = *options.type;
    std::size_t shape[copy_max_ndim] = {};
    for (std::int32_t i = 0; i < view.ndim; ++i) shape[i] = static_cast<std::size_t>(view.shape[i]);
    const tensor_layout contiguous = tensor_layout::contiguous(shape, static_cast<std::size_t>(view.ndim));
    const lowbit_layout found = packing_of(view, contiguous, what);
    Tensor made = make_dense<Tensor>(target, contiguous, options.layout.value_or(default_layout(target.id())), where);
    const lowbit_layout wanted = adapter::packed_layout(made);
    const std::size_t count = contiguous.count(), inner = contiguous.innermost();
    const auto* in = reinterpret_cast<const std::uint8_t*>(dlpack_first_byte(view));
    auto* out = static_cast<std::uint8_t*>(adapter::data(made));
    if (count != 0) {  // (NULL data is valid when empty)
        std::vector<std::int8_t> values(found == wanted ? 0 : count);
        without_gil_if_large(count, [&] {
            if (found == wanted) {
                std::memcpy(out, in, packed_bytes(target.id(), count, inner, wanted));
                return;
            }
            unpack(target.id(), in, {count, inner}, values.data(), found);
            pack_fresh(target.id(), values.data(), {count, inner}, out, wanted);
        });
    }
    return to_tensor_result<Tensor>(std::move(made), false, reason);
}

/// Checks an imported tensor npybridge can read (CPU, at most copy_max_ndim dimensions, sane shape and lanes); returns
/// whether it is empty.
inline bool checked_import_view(const consumed_capsule& taken) {
    const dlpack::DLTensor& view = taken.view;
    if (view.device.device_type != dlpack::kDLCPU) {
        throw_dlpack_device(view.device);
    }
    if (view.ndim < 0 || static_cast<std::size_t>(view.ndim) > copy_max_ndim) {
        throw_too_many_dimensions("from_dlpack: a DLPack tensor", view.ndim, NPYBRIDGE_MAX_NDIM);
    }
    if (view.ndim > 0 && view.shape == nullptr) {
        throw_dlpack_field("shape is NULL with ndim = " + std::to_string(view.ndim));
    }
    std::size_t extents[copy_max_ndim] = {};
    for (std::int32_t i = 0; i < view.ndim; ++i) {
        if (view.shape[i] < 0) throw_dlpack_field("shape has a negative extent");
        extents[i] = static_cast<std::size_t>(view.shape[i]);
    }
    // A shape no memory can hold is a lie.
    const bool empty = tensor_layout::checked_count(extents, static_cast<std::size_t>(view.ndim)) == 0;
    check_dlpack_view(view, taken.flags);
    if (view.dtype.lanes != 1) {
        throw_dlpack_type(view.dtype, " (vector lanes) has no MegBrain dtype");
    }
    return empty;
}

/// The planner's first case over DLPack memory: fills `layout` and returns the dtype to borrow straight, or nullptr for
/// the general path.
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
        // Dimensions that never step get the contiguous stride.
        const bool own = view.strides != nullptr && view.shape[i] > 1 && !empty;
        layout.strides[i] = own ? static_cast<std::ptrdiff_t>(view.strides[i]) : stride;
        stride *= static_cast<std::ptrdiff_t>(view.shape[i] == 0 ? 1 : view.shape[i]);
    }
    const bool aligned = reinterpret_cast<std::uintptr_t>(dlpack_first_byte(view)) % plain->info().element_size == 0;
    return borrows_at_once(plain, aligned, adapter::accepts_strides(layout), options) ? plain : nullptr;
}

/// Padded sub-byte data (a value per byte) extracted into a new array: always a copy.
template <class Tensor>
to_tensor_result<Tensor> padded_from_dlpack(consumed_capsule& taken, const to_tensor_options& options,
                                            const placement_t<Tensor>& where) {
    const dlpack::DLTensor& view = taken.view;
    const std::string reason = sub_byte_copy_reason(sub_byte_source::padded, view, options);
    object descr = object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(NPY_UINT8)));
    const bool writable = (taken.flags & dlpack::flag_read_only) == 0;
    object bytes = array_over_dlpack(view, descr.get(), 1, writable, taken.owner);
    object values = low_bits_as_bytes(reinterpret_cast<PyArrayObject*>(bytes.get()), view.dtype.bits,
                                      view.dtype.code == dlpack::kDLInt);
    to_tensor_result<Tensor> result = to_tensor_general<Tensor>(values.get(), options, where);
    result.borrowed = false;  // it may have borrowed the extracted values
    result.copy_reason = reason;
    return result;
}

}  // namespace detail

}  // namespace npybridge
