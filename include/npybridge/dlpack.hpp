// npybridge/dlpack.hpp — DLPack 1.1 both ways: any adapted tensor to a capsule, any __dlpack__ object to a tensor.
#pragma once

#include <npybridge/config.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/dlpack_abi.hpp>
#include <npybridge/errors.hpp>
#include <npybridge/lowbit.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The DLPack type of a dtype's elements, derived from its table row: the C++
/// element type for unpacked dtypes, the bit coding for packed ones. Quantized
/// dtypes and the odd-valued IntB1/2/4 have no DLPack type of their own: with
/// `codes` they export their stored codes (int8, uint4, ...), else nullopt.
constexpr std::optional<dlpack::data_type> dlpack_type_of(const dtype_info& entry, bool codes) noexcept {
    using namespace dlpack;
    const bool needs_codes = entry.is_quantized || entry.coding == lowbit_coding::odd;
    if (needs_codes && !codes) return std::nullopt;
    if (entry.is_packed) {
        const auto bits = static_cast<std::uint8_t>(entry.bits);
        return data_type{entry.coding == lowbit_coding::twos_complement ? int_code : uint_code, bits, 1};
    }
    const std::string_view s = entry.storage;
    const auto bits = static_cast<std::uint8_t>(entry.element_size * 8);
    if (s == "bool") return data_type{bool_code, 8, 1};
    if (s == "half" || s == "float" || s == "double") return data_type{float_code, bits, 1};
    if (s == "bfloat16") return data_type{bfloat_code, 16, 1};
    if (s == "complex<float>") return data_type{complex_code, 64, 1};
    if (s == "byte" || s.substr(0, 4) == "uint") return data_type{uint_code, bits, 1};
    if (s.substr(0, 3) == "int") return data_type{int_code, bits, 1};
    return std::nullopt;
}

namespace detail {

/// dlpack_type_of for every row, without and with codes (computed once, at compile time).
constexpr std::array<std::array<std::optional<dlpack::data_type>, dtype_count>, 2> make_dlpack_types() noexcept {
    std::array<std::array<std::optional<dlpack::data_type>, dtype_count>, 2> types{};
    for (std::size_t i = 0; i < dtype_count; ++i) {
        types[0][i] = dlpack_type_of(dtype_table[i], false);
        types[1][i] = dlpack_type_of(dtype_table[i], true);
    }
    return types;
}
inline constexpr auto dlpack_types = make_dlpack_types();

}  // namespace detail

/// What to_dlpack exports, as the array API's __dlpack__ arguments say it.
struct dlpack_options {
    /// The newest DLPack version the consumer reads (max_version); none or
    /// below 1.0: the legacy capsule "dltensor".
    std::optional<dlpack::api_version> max_version;
    /// dl_device: only the CPU (kDLCPU, 0) is possible.
    std::optional<dlpack::device_spec> device;
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
    dlpack::managed_tensor legacy{};
    dlpack::managed_tensor_versioned versioned{};
    owner_handle owner;
    std::int64_t shape[copy_max_ndim];
    std::int64_t strides[copy_max_ndim];

    static void delete_legacy(dlpack::managed_tensor* self) noexcept { delete static_cast<dlpack_export*>(self->manager_ctx); }
    static void delete_versioned(dlpack::managed_tensor_versioned* self) noexcept {
        delete static_cast<dlpack_export*>(self->manager_ctx);
    }
};

/// The capsule's destructor: a capsule nobody consumed (still named
/// "dltensor[_versioned]") still owns its tensor; a consumed one does not.
inline void dlpack_capsule_destructor(PyObject* capsule) noexcept {
    if (PyCapsule_IsValid(capsule, dlpack::versioned_capsule_name)) {
        auto* managed = static_cast<dlpack::managed_tensor_versioned*>(
            PyCapsule_GetPointer(capsule, dlpack::versioned_capsule_name));
        if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
    } else if (PyCapsule_IsValid(capsule, dlpack::capsule_name)) {
        auto* managed = static_cast<dlpack::managed_tensor*>(PyCapsule_GetPointer(capsule, dlpack::capsule_name));
        if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
    }
}

/// Element strides of a packed tensor as DLPack reads them: compact is C
/// order; MegBrain's row-aligned layout starts each row at a byte, i.e. pads
/// the innermost dimension to whole bytes, which element strides describe.
inline void packed_strides(const tensor_layout& layout, unsigned bits, lowbit_layout packing, std::int64_t* strides) {
    if (layout.ndim == 0) return;
    const std::size_t inner = layout.shape[layout.ndim - 1];
    const std::size_t per_byte = 8 / bits;
    std::int64_t stride = 1;
    for (std::size_t i = layout.ndim; i-- > 0;) {
        strides[i] = stride;
        std::size_t extent = layout.shape[i] == 0 ? 1 : layout.shape[i];
        if (i == layout.ndim - 1 && packing == lowbit_layout::row_aligned) extent = (inner + per_byte - 1) / per_byte * per_byte;
        stride *= static_cast<std::int64_t>(extent == 0 ? 1 : extent);
    }
}

/// The message for a quantized (or IntBn) export without `codes`.
inline std::string needs_codes_text(const dtype& type) {
    const dtype_info& entry = type.info();
    const auto codes = dlpack_type_of(entry, true);
    const std::string what = entry.is_quantized ? "DLPack has no quantized types: its " +
                                                       std::string(entry.param_fields == 2 ? "scale and zero_point" : "scale") +
                                                       " would be lost"
                                                 : "DLPack has no type for its odd values (" + valid_set_text(entry) + ")";
    return "DLPack export of " + type.to_string() + ": " + what + "; export the stored codes (" +
           (codes ? dlpack::type_text(*codes) : std::string("none")) +
           ") with the codes option (dlpack_options::codes, __dlpack__(codes=True)) and carry the rest yourself";
}

}  // namespace detail

/// Tensor → DLPack capsule (new reference), with the semantics of the array
/// API's __dlpack__: a "dltensor_versioned" capsule (DLPack 1.1, READ_ONLY
/// and IS_COPIED flags) when options.max_version is 1.0 or newer, else the
/// legacy "dltensor" capsule, which cannot say read-only: a read-only tensor
/// is then refused unless copy=true (NumPy's rule). The capsule keeps the
/// tensor's memory alive through its owner until the consumer's deleter call
/// (any thread, no GIL needed) or, if nobody consumes it, the capsule's end.
/// Packed dtypes export their packed bits (element i at bit i * bits, as
/// MegBrain's compact layout); row-aligned tensors give the padded rows as
/// element strides. Requires the GIL.
template <class Tensor>
object to_dlpack(const Tensor& source, const dlpack_options& options = {}) {
    static_assert(check_adapter<Tensor>());
    using adapter = tensor_adapter<Tensor>;
    if (options.device && (options.device->device_type != dlpack::cpu || options.device->device_id != 0)) {
        throw dlpack_error("__dlpack__: dl_device " + dlpack::device_text(options.device->device_type, options.device->device_id) +
                           " is not possible: npybridge tensors live in CPU memory (kDLCPU, 0)");
    }
    const dtype type = adapter::dtype_of(source);
    const dtype_info& entry = type.info();
    const std::optional<dlpack::data_type> dl_type = detail::dlpack_types[options.codes ? 1 : 0][table_index(entry.id)];
    if (!dl_type) throw dtype_error(detail::needs_codes_text(type));
    const tensor_layout layout = adapter::layout_of(source);
    if (layout.ndim > detail::copy_max_ndim) throw dlpack_error("__dlpack__: too many dimensions");
    const bool versioned = options.max_version && options.max_version->major >= 1;
    const bool writable = is_writable(source);
    bool copy = options.copy.value_or(false);
    if (!versioned && !writable && !copy) {
        throw dlpack_error(std::string("__dlpack__: the tensor is read-only and the legacy DLPack capsule cannot say so; ") +
                           (options.copy ? "pass copy=True, or " : "") +
                           "ask for max_version=(1, 0) or newer (a read-only DLPack 1.x capsule)");
    }
    const lowbit_layout packing = entry.is_packed ? adapter::packed_layout(source) : lowbit_layout::compact;
    if (entry.is_packed && !layout.is_dense_packed(entry.id, packing)) {
        throw dlpack_error("__dlpack__: a strided packed " + type.to_string() + " tensor cannot be described");
    }

    auto made = std::make_unique<detail::dlpack_export>();
    void* data = adapter::data(source);
    if (copy) {
        tensor fresh = tensor::empty(type, layout.shape.data(), layout.ndim, packing);
        if (entry.is_packed) {
            std::memcpy(fresh.data(), data, fresh.storage_bytes());
        } else if (layout.count() != 0) {
            detail::copy_plan plan;
            plan.ndim = layout.ndim;
            for (std::size_t i = 0; i < layout.ndim; ++i) {
                plan.shape[i] = layout.shape[i];
                plan.src[i] = layout.strides[i] * static_cast<std::ptrdiff_t>(entry.element_size);
                plan.dst[i] = fresh.layout().strides[i] * static_cast<std::ptrdiff_t>(entry.element_size);
            }
            detail::without_gil_if_large(layout.count() * entry.element_size,
                                         [&] { detail::copy_strided(plan, data, fresh.data(), entry.element_size); });
        }
        data = fresh.data();
        made->owner = fresh.take_owner();
    } else {
        made->owner = adapter::owner(source);
    }
    const tensor_layout& described = copy ? tensor_layout::contiguous(layout.shape.data(), layout.ndim) : layout;
    for (std::size_t i = 0; i < layout.ndim; ++i) made->shape[i] = static_cast<std::int64_t>(layout.shape[i]);
    if (entry.is_packed) {
        detail::packed_strides(described, entry.bits, packing, made->strides);
    } else {
        for (std::size_t i = 0; i < layout.ndim; ++i) made->strides[i] = described.strides[i];
    }
    const dlpack::tensor_view view{data,          dlpack::device_spec{dlpack::cpu, 0}, static_cast<std::int32_t>(layout.ndim),
                                   *dl_type,      made->shape,                     made->strides,
                                   0};
    detail::dlpack_export* block = made.get();
    PyObject* capsule;
    if (versioned) {
        block->versioned = {dlpack::supported, block, &detail::dlpack_export::delete_versioned,
                            (writable || copy ? 0 : dlpack::flag_read_only) | (copy ? dlpack::flag_is_copied : 0), view};
        capsule = PyCapsule_New(&block->versioned, dlpack::versioned_capsule_name, detail::dlpack_capsule_destructor);
    } else {
        block->legacy = {view, block, &detail::dlpack_export::delete_legacy};
        capsule = PyCapsule_New(&block->legacy, dlpack::capsule_name, detail::dlpack_capsule_destructor);
    }
    if (capsule == nullptr) throw python_error();
    made.release();  // the capsule owns it now
    return object::steal(capsule);
}

namespace detail {

/// Keeps an imported DLPack tensor alive: calls the producer's deleter once,
/// when the last owner handle goes (any thread). The deleter is the
/// producer's to make safe without the GIL (DLPack's rule); once the
/// interpreter is finalizing it is not called at all (a Python producer's
/// deleter would take a GIL that no longer exists), as npybridge's Python
/// owners leak their references then.
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
            auto* m = static_cast<dlpack::managed_tensor_versioned*>(managed);
            if (m->deleter != nullptr) m->deleter(m);
        } else {
            auto* m = static_cast<dlpack::managed_tensor*>(managed);
            if (m->deleter != nullptr) m->deleter(m);
        }
    }
};

/// The capsule of `obj`: obj itself when it is one, else obj.__dlpack__()
/// asked for DLPack 1.1 (falling back to the legacy call for producers that
/// do not take max_version). The device is checked on the capsule's tensor:
/// a CPU consumer passes no stream, so __dlpack_device__ has nothing to decide.
inline object dlpack_capsule_of(PyObject* obj) {
    if (PyCapsule_CheckExact(obj)) return object::borrow(obj);
    // Interned name, keyword tuple and version, made once (kept for the process, like key_object's strings).
    static PyObject* const method = PyUnicode_InternFromString("__dlpack__");
    static PyObject* const keywords = Py_BuildValue("(s)", "max_version");
    static PyObject* const version = Py_BuildValue("(II)", dlpack::supported.major, dlpack::supported.minor);
    if (method == nullptr || keywords == nullptr || version == nullptr) throw python_error();
    PyObject* args[] = {obj, version};
    PyObject* capsule = PyObject_VectorcallMethod(method, args, 1, keywords);
    if (capsule == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();  // a producer older than max_version (DLPack < 1.0): the legacy call
        capsule = PyObject_VectorcallMethod(method, args, 1, nullptr);
    }
    if (capsule == nullptr) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError) && !PyObject_HasAttr(obj, method)) {
            PyErr_Clear();
            throw conversion_error("from_dlpack: " + safe_repr(obj) + " has no __dlpack__ method (not a DLPack producer)");
        }
        throw python_error();
    }
    return object::steal(capsule);
}

/// The DLPack type of each row (unpacked, not quantized, not Byte): what a
/// plain DLPack tensor is borrowed as without asking numpy.
struct plain_dlpack_rows {
    std::array<dlpack::data_type, dtype_count> types{};
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

/// The plain dtype of a DLPack type, nullptr when there is none (64-bit
/// types narrow through numpy; sub-byte ones are packed).
inline const dtype* plain_dtype_of(dlpack::data_type type) noexcept {
    for (std::size_t i = 0; i < dtype_count; ++i) {
        if (plain_dlpack.present[i] && plain_dlpack.types[i] == type) return &dtype::of_row(i);
    }
    return nullptr;
}

/// The sub-byte DLPack types npybridge reads: those of its packed dtypes (int4, uint4, uint2, uint1).
inline bool is_packed_dlpack_type(dlpack::data_type type) noexcept {
    for (const dtype_info& entry : dtype_table) {
        if (entry.is_packed && dlpack_type_of(entry, true) == std::optional(type)) return true;
    }
    return false;
}

/// Checks what a DLPack producer claims before anything is read (its shape was checked: not NULL when
/// ndim > 0, no negative extent, a count memory can hold): data for its elements (NULL only when there are none), a type npybridge has, and strides whose reach
/// (extent x stride x item size, plus byte_offset) fits memory, computed without overflow. Each refusal names
/// the field.
inline void check_dlpack_view(const dlpack::tensor_view& view, std::uint64_t flags) {
    const dlpack::data_type type = view.dtype;
    if (type.bits == 0) throw dtype_error("from_dlpack: DLPack type " + dlpack::type_text(type) + " has 0 bits");
    if (type.bits < 8 && !is_packed_dlpack_type(type)) {
        throw dtype_error("from_dlpack: DLPack type " + dlpack::type_text(type) + (flags & dlpack::flag_subbyte_padded ? " (padded)" : "") +
                          " has no MegDNN dtype (sub-byte types npybridge reads: int4, uint4, uint2, uint1)");
    }
    std::size_t count = 1;
    for (std::int32_t i = 0; i < view.ndim; ++i) count *= static_cast<std::size_t>(view.shape[i]);
    if (count != 0 && view.data == nullptr) {
        throw dlpack_error("from_dlpack: the DLPack tensor's data is NULL with " + std::to_string(count) +
                           " elements (NULL data is valid for zero elements only)");
    }
    if (count == 0) return;
    const bool packed = type.bits < 8 && (flags & dlpack::flag_subbyte_padded) == 0;
    // In bits for packed data (element i at bit i * bits), in bytes otherwise.
    const std::int64_t unit = packed ? type.bits : std::max<std::int64_t>(1, (static_cast<std::int64_t>(type.bits) * type.lanes + 7) / 8);
    std::int64_t reach = 0, contiguous = 1;
    for (std::int32_t i = view.ndim; i-- > 0;) {
        const std::int64_t stride = view.strides != nullptr ? view.strides[i] : contiguous;
        std::int64_t step = 0, span = 0;
        if (__builtin_mul_overflow(stride < 0 ? -stride : stride, unit, &step) ||
            __builtin_mul_overflow(view.shape[i] - 1, step, &span) || __builtin_add_overflow(reach, span, &reach) ||
            __builtin_mul_overflow(contiguous, view.shape[i], &contiguous) || reach > PTRDIFF_MAX / 2) {
            throw dlpack_error("from_dlpack: the DLPack tensor's strides[" + std::to_string(i) + "] = " + std::to_string(stride) +
                               " with shape[" + std::to_string(i) + "] = " + std::to_string(view.shape[i]) +
                               " reaches past any memory");
        }
    }
    std::int64_t end = 0;
    if (view.byte_offset > static_cast<std::uint64_t>(PTRDIFF_MAX) ||
        __builtin_add_overflow(static_cast<std::int64_t>(view.byte_offset), packed ? reach / 8 + 1 : reach + unit, &end) ||
        end > PTRDIFF_MAX / 2) {
        throw dlpack_error("from_dlpack: the DLPack tensor's byte_offset " + std::to_string(view.byte_offset) +
                           " plus its strides' reach " + std::to_string(reach) + " reaches past any memory");
    }
}

/// Takes the managed tensor out of a capsule (renaming it "used_...", so its
/// destructor leaves it alone) and hands back its view and an owner that
/// calls the deleter exactly once.
struct consumed_capsule {
    dlpack::tensor_view view;
    std::uint64_t flags;
    owner_handle owner;
};

inline consumed_capsule consume_capsule(PyObject* capsule) {
    const char* name = PyCapsule_GetName(capsule);
    if (name == nullptr && PyErr_Occurred()) throw python_error();
    const std::string text = name ? name : "";
    if (text == dlpack::used_capsule_name || text == dlpack::used_versioned_capsule_name) {
        throw dlpack_error("from_dlpack: the DLPack capsule was already consumed ('" + text +
                           "'): a capsule gives its tensor to one consumer, once");
    }
    consumed_capsule result{};
    if (text == dlpack::versioned_capsule_name) {
        auto* managed = static_cast<dlpack::managed_tensor_versioned*>(PyCapsule_GetPointer(capsule, name));
        if (managed == nullptr) throw python_error();
        if (managed->version.major != dlpack::supported.major) {
            // Not readable: left unconsumed, so the capsule's destructor frees it.
            throw dlpack_error("from_dlpack: DLPack " + std::to_string(managed->version.major) + "." +
                               std::to_string(managed->version.minor) + " capsule; npybridge reads DLPack 1.x");
        }
        if (PyCapsule_SetName(capsule, dlpack::used_versioned_capsule_name) != 0) throw python_error();
        result.view = managed->dl_tensor;
        result.flags = managed->flags;
        result.owner = owner_handle::adopt(new dlpack_owner_block(managed, true));
    } else if (text == dlpack::capsule_name) {
        auto* managed = static_cast<dlpack::managed_tensor*>(PyCapsule_GetPointer(capsule, name));
        if (managed == nullptr) throw python_error();
        if (PyCapsule_SetName(capsule, dlpack::used_capsule_name) != 0) throw python_error();
        result.view = managed->dl_tensor;
        result.flags = 0;
        result.owner = owner_handle::adopt(new dlpack_owner_block(managed, false));
    } else {
        throw dlpack_error("from_dlpack: a capsule named '" + text + "' is not a DLPack tensor ('dltensor' or 'dltensor_versioned')");
    }
    result.owner.get()->read_only = (result.flags & dlpack::flag_read_only) != 0;
    return result;
}

/// The numpy dtype that holds DLPack elements of `type` (one byte or more
/// each), as a new reference; the conversion then decides what npybridge
/// dtype that is (including the narrowing of int64 / float64).
inline object numpy_descr_for(dlpack::data_type type) {
    using namespace dlpack;
    int type_num = -1;
    switch (type.code) {
        case int_code: type_num = type.bits == 8 ? NPY_INT8 : type.bits == 16 ? NPY_INT16 : type.bits == 32 ? NPY_INT32
                                                  : type.bits == 64 ? NPY_INT64 : -1; break;
        case uint_code: type_num = type.bits == 8 ? NPY_UINT8 : type.bits == 16 ? NPY_UINT16 : type.bits == 32 ? NPY_UINT32
                                                   : type.bits == 64 ? NPY_UINT64 : -1; break;
        case float_code: type_num = type.bits == 16 ? NPY_HALF : type.bits == 32 ? NPY_FLOAT : type.bits == 64 ? NPY_DOUBLE : -1; break;
        case complex_code: type_num = type.bits == 64 ? NPY_COMPLEX64 : type.bits == 128 ? NPY_COMPLEX128 : -1; break;
        case bool_code: type_num = type.bits == 8 ? NPY_BOOL : -1; break;
        case bfloat_code:
            if (type.bits == 16) return to_numpy(dtype(dtype_enum::BFloat16), user_dtype_choice::own);
            break;
        default: break;
    }
    if (type_num < 0 || type.lanes != 1) {
        throw dtype_error("from_dlpack: DLPack type " + type_text(type) + " has no MegBrain dtype");
    }
    return object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(type_num)));
}

/// A numpy array over imported DLPack memory whose base holds `owner` (so
/// the deleter runs once numpy and every tensor borrowing from it are done).
inline object array_over_dlpack(const dlpack::tensor_view& view, PyObject* descr_object, std::size_t itemsize, bool writable,
                                owner_handle& owner) {
    npy_intp dims[copy_max_ndim], strides[copy_max_ndim];
    std::int64_t stride = 1;
    for (std::int32_t i = view.ndim; i-- > 0;) {
        dims[i] = static_cast<npy_intp>(view.shape[i]);
        const std::int64_t elements = view.strides ? view.strides[i] : stride;
        strides[i] = static_cast<npy_intp>(elements * static_cast<std::int64_t>(itemsize));
        stride *= view.shape[i] == 0 ? 1 : view.shape[i];
    }
    Py_INCREF(descr_object);
    PyObject* array = PyArray_NewFromDescr(&PyArray_Type, reinterpret_cast<PyArray_Descr*>(descr_object), view.ndim, dims, strides,
                                           static_cast<char*>(view.data) + view.byte_offset, writable ? NPY_ARRAY_WRITEABLE : 0,
                                           nullptr);
    if (array == nullptr) throw_numpy_failure("from_dlpack: numpy could not describe the DLPack tensor");
    object result = object::steal(array);
    object base = owner_object::wrap(owner);
    if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), base.release()) != 0) {
        throw_numpy_failure("from_dlpack: could not attach the DLPack owner to the array");
    }
    return result;
}

/// Packed sub-byte DLPack data (bits 1, 2 or 4; element i at bit i * bits)
/// into a packed dtype: copied byte for byte when its strides are compact or
/// MegBrain's row-aligned layout (repacked when the other layout is asked for).
template <class Tensor>
to_tensor_result<Tensor> packed_from_dlpack(const dlpack::tensor_view& view, const to_tensor_options& options,
                                            const placement_t<Tensor>& where) {
    using adapter = tensor_adapter<Tensor>;
    const std::string what = "from_dlpack: packed DLPack " + dlpack::type_text(view.dtype) + " data";
    if (!options.type || !options.type->info().is_packed || dlpack_type_of(options.type->info(), true) != std::optional(view.dtype)) {
        std::string fits;
        for (const dtype_info& entry : dtype_table) {
            if (entry.is_packed && dlpack_type_of(entry, true) == std::optional(view.dtype)) {
                fits += (fits.empty() ? "" : ", ") + std::string(entry.name);
            }
        }
        throw dtype_error(what + " needs a packed dtype of that coding as dtype (" +
                          (fits.empty() ? std::string("none has it") : fits) + "; quantized ones with their params)" +
                          (options.type ? ", got " + options.type->to_string() : std::string()));
    }
    if (options.policy == borrow_policy::must_borrow) {
        throw conversion_error("must_borrow: " + what + " is copied (tensor adapters borrow unpacked memory only)");
    }
    if (view.ndim < 0 || static_cast<std::size_t>(view.ndim) > ndim_limit<Tensor>) {
        throw conversion_error(what + " has " + std::to_string(view.ndim) + " dimensions; the tensor type holds at most " +
                               std::to_string(ndim_limit<Tensor>));
    }
    const dtype target = *options.type;
    std::size_t shape[copy_max_ndim] = {};
    for (std::int32_t i = 0; i < view.ndim; ++i) shape[i] = static_cast<std::size_t>(view.shape[i]);
    const tensor_layout contiguous = tensor_layout::contiguous(shape, static_cast<std::size_t>(view.ndim));
    std::int64_t compact[copy_max_ndim], aligned[copy_max_ndim];
    packed_strides(contiguous, view.dtype.bits, lowbit_layout::compact, compact);
    packed_strides(contiguous, view.dtype.bits, lowbit_layout::row_aligned, aligned);
    auto matches = [&](const std::int64_t* expected) {
        if (view.strides == nullptr) return expected == compact;
        for (std::int32_t i = 0; i < view.ndim; ++i) {
            if (view.shape[i] > 1 && view.strides[i] != expected[i]) return false;
        }
        return true;
    };
    std::optional<lowbit_layout> found;
    if (matches(compact)) found = lowbit_layout::compact;
    else if (matches(aligned)) found = lowbit_layout::row_aligned;
    if (!found) throw conversion_error(what + " has strides that are neither compact nor row-aligned packing");
    Tensor made = make_dense<Tensor>(target, contiguous, options.layout.value_or(default_layout(target.id())), where);
    const lowbit_layout wanted = adapter::packed_layout(made);
    const std::size_t count = contiguous.count(), inner = contiguous.innermost();
    const auto* in = static_cast<const std::uint8_t*>(view.data) + view.byte_offset;
    auto* out = static_cast<std::uint8_t*>(adapter::data(made));
    if (*found == wanted) {
        std::memcpy(out, in, packed_bytes(target.id(), count, inner, wanted));
    } else {
        std::vector<std::int8_t> values(count);
        unpack(target.id(), in, {count, inner}, values.data(), *found);
        pack_fresh(target.id(), values.data(), {count, inner}, out, wanted);
    }
    return to_tensor_result<Tensor>(std::move(made), false, "packed DLPack data is copied into the tensor's own packing");
}

}  // namespace detail

/// Any DLPack producer (an object with __dlpack__, or a capsule) → Tensor,
/// with to_tensor's options and policies: memory is borrowed when it can be
/// (the tensor's owner keeps the producer's tensor alive and calls its
/// deleter exactly once, on whatever thread lets go last), READ_ONLY data
/// gives a read-only tensor, int64 / float64 narrow as options.narrow says,
/// and copies say why. Only CPU memory is read (another device is a
/// dlpack_error naming it). Packed sub-byte data (int4 / uint4 / uint2 / uint1)
/// needs a packed dtype in options.type and is copied. A borrowed tensor
/// always keeps its owner (options.scoped() does not apply: DLPack memory
/// lives until its deleter is called). Requires the GIL.
template <class Tensor = tensor>
to_tensor_result<Tensor> from_dlpack(PyObject* obj, const to_tensor_options& options = {},
                                     const placement_t<Tensor>& where = default_placement<Tensor>()) {
    static_assert(check_adapter<Tensor>());
    object capsule = detail::dlpack_capsule_of(obj);
    detail::consumed_capsule taken = detail::consume_capsule(capsule.get());
    const dlpack::tensor_view& view = taken.view;
    if (view.device.device_type != dlpack::cpu) {
        throw dlpack_error("from_dlpack: the DLPack tensor is on " +
                           dlpack::device_text(view.device.device_type, view.device.device_id) +
                           "; npybridge reads CPU memory only (kDLCPU)");
    }
    if (view.ndim < 0 || static_cast<std::size_t>(view.ndim) > detail::copy_max_ndim) {
        throw conversion_error("from_dlpack: a DLPack tensor of " + std::to_string(view.ndim) +
                               " dimensions; npybridge holds at most " + std::to_string(NPYBRIDGE_MAX_NDIM));
    }
    if (view.ndim > 0 && view.shape == nullptr) {
        throw dlpack_error("from_dlpack: the DLPack tensor's shape is NULL with ndim = " + std::to_string(view.ndim));
    }
    std::size_t extents[detail::copy_max_ndim] = {};
    for (std::int32_t i = 0; i < view.ndim; ++i) {
        if (view.shape[i] < 0) throw conversion_error("from_dlpack: negative extent in the DLPack tensor's shape");
        extents[i] = static_cast<std::size_t>(view.shape[i]);
    }
    tensor_layout::checked_count(extents, static_cast<std::size_t>(view.ndim));  // a shape no memory can hold is a lie
    detail::check_dlpack_view(view, taken.flags);
    if (view.dtype.lanes != 1) {
        throw dtype_error("from_dlpack: DLPack type " + dlpack::type_text(view.dtype) + " (vector lanes) has no MegBrain dtype");
    }
    using adapter = tensor_adapter<Tensor>;
    const bool read_only = (taken.flags & dlpack::flag_read_only) != 0;
    // The common import: a plain dtype as it is, borrowed straight (no numpy array in between).
    if (const dtype* plain = view.dtype.bits >= 8 ? detail::plain_dtype_of(view.dtype) : nullptr;
        plain != nullptr && options.policy != borrow_policy::copy && (!options.type || *options.type == *plain) &&
        !(read_only && options.require_writable) && static_cast<std::size_t>(view.ndim) <= detail::ndim_limit<Tensor> &&
        (view.ndim > 0 || adapter::has_scalar)) {
        const std::size_t itemsize = plain->info().element_size;
        void* data = static_cast<char*>(view.data) + view.byte_offset;
        tensor_layout layout;
        layout.ndim = static_cast<std::size_t>(view.ndim);
        std::ptrdiff_t stride = 1;
        for (std::size_t i = layout.ndim; i-- > 0;) {
            layout.shape[i] = static_cast<std::size_t>(view.shape[i]);
            // Size-1 dimensions get the contiguous stride (theirs never matters), as from numpy.
            layout.strides[i] = view.strides != nullptr && view.shape[i] != 1 ? static_cast<std::ptrdiff_t>(view.strides[i]) : stride;
            stride *= static_cast<std::ptrdiff_t>(view.shape[i] == 0 ? 1 : view.shape[i]);
        }
        if (reinterpret_cast<std::uintptr_t>(data) % itemsize == 0 && adapter::accepts_strides(layout)) {
            const dtype type = *plain;
            return {std::in_place,
                    [&] { return detail::adapter_borrow_at<Tensor>(type, data, layout, !read_only, std::move(taken.owner), where); },
                    true};
        }
    }
    to_tensor_options kept = options;
    kept.keep_alive = true;
    if (view.dtype.bits < 8) {
        if ((taken.flags & dlpack::flag_subbyte_padded) == 0) return detail::packed_from_dlpack<Tensor>(view, kept, where);
        // One element per byte: the values are extracted into a new array, so the tensor is always a copy.
        const std::string what = "padded sub-byte DLPack " + dlpack::type_text(view.dtype) +
                                 " data (one element per byte) is unpacked into a copy";
        if (options.policy == borrow_policy::must_borrow) throw conversion_error("must_borrow: " + what);
        object descr = object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(NPY_UINT8)));
        object bytes = detail::array_over_dlpack(view, descr.get(), 1, !read_only, taken.owner);
        object values = detail::low_bits_as_bytes(reinterpret_cast<PyArrayObject*>(bytes.get()), view.dtype.bits,
                                                  view.dtype.code == dlpack::int_code);
        to_tensor_result<Tensor> result = to_tensor<Tensor>(values.get(), kept, where);
        result.borrowed = false;  // (it may have borrowed the extracted values)
        result.copy_reason = what;
        return result;
    }
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

inline dlpack_options dlpack_options::from_python(PyObject* stream, PyObject* max_version, PyObject* dl_device, PyObject* copy,
                                                  PyObject* codes) {
    if (stream != nullptr && stream != Py_None) {
        throw dlpack_error("__dlpack__: stream must be None for CPU memory, got " + safe_repr(stream));
    }
    dlpack_options options;
    if (auto version = detail::dlpack_int_pair(max_version, "max_version", 0xFFFFFFFFLL)) {
        options.max_version = dlpack::api_version{version->first, version->second};
    }
    if (auto device = detail::dlpack_int_pair(dl_device, "dl_device", 0x7FFFFFFFLL)) {
        options.device = dlpack::device_spec{static_cast<std::int32_t>(device->first), static_cast<std::int32_t>(device->second)};
    }
    options.copy = detail::dlpack_truth(copy);
    options.codes = detail::dlpack_truth(codes).value_or(false);
    return options;
}

}  // namespace npybridge
