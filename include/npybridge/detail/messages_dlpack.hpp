// npybridge/detail/messages_dlpack.hpp — detail/messages.hpp's DLPack part: the export's and import's errors from
// their facts (apart, so a translation unit without DLPack does not parse them).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/dlpack_types.hpp>
#include <npybridge/core/dlpack_abi.hpp>
#include <npybridge/detail/messages.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// DLPack export: a quantized or IntBn dtype without `codes`, a device, a read-only legacy capsule, strided packing.
template <class = void>
[[noreturn]] void throw_export_needs_codes(const dtype& type) {
    const dtype_info& entry = type.info();
    const auto codes = dlpack_type_of(entry, true);
    const std::string what = entry.is_quantized
                                 ? "DLPack has no quantized types: its " +
                                       std::string(entry.param_fields == 2 ? "scale and zero_point" : "scale") +
                                       " would be lost"
                                 : "DLPack has no type for its odd values (" + valid_set_text(entry) + ")";
    throw dtype_error("DLPack export of " + type.to_string() + ": " + what + "; export the stored codes (" +
                      (codes ? dlpack::type_text(*codes) : std::string("none")) +
                      ") with the codes option (dlpack_options::codes, __dlpack__(codes=True)) and carry the rest "
                      "yourself");
}

template <class = void>
[[noreturn]] void throw_export_device(const dlpack::DLDevice& device) {
    throw dlpack_error("__dlpack__: dl_device " + dlpack::device_text(device.device_type, device.device_id) +
                       " is not possible: npybridge tensors live in CPU memory (kDLCPU, 0)");
}
template <class = void>
[[noreturn]] void throw_export_read_only_legacy(bool copy_given) {
    throw dlpack_error(
        std::string("__dlpack__: the tensor is read-only and the legacy DLPack capsule cannot say so; ") +
        (copy_given ? "pass copy=True, or " : "") +
        "ask for max_version=(1, 0) or newer (a read-only DLPack 1.x capsule)");
}
template <class = void>
[[noreturn]] void throw_export_strided_packed(const dtype& type) {
    throw dlpack_error("__dlpack__: a strided packed " + type.to_string() + " tensor cannot be described");
}
/// A __dlpack__ argument out of its range.
inline conversion_error dlpack_argument_refusal(const char* what, PyObject* given, const std::string& why) {
    return conversion_error("__dlpack__: " + std::string(what) + "=" + safe_repr(given) + ": " + why);
}

// ---- DLPack import: the producer's claims, the capsule, the type and the layout

template <class = void>
[[noreturn]] void throw_not_a_producer(PyObject* obj) {
    throw conversion_error("from_dlpack: " + safe_repr(obj) + " has no __dlpack__ method (not a DLPack producer)");
}

template <class = void>
[[noreturn]] void throw_dlpack_type(const dlpack::DLDataType& type, const std::string& why) {
    throw dtype_error("from_dlpack: DLPack type " + dlpack::type_text(type) + why);
}

template <class = void>
[[noreturn]] void throw_dlpack_field(const std::string& what) {
    throw dlpack_error("from_dlpack: the DLPack tensor's " + what);
}

template <class = void>
[[noreturn]] void throw_dlpack_device(const dlpack::DLDevice& device) {
    throw dlpack_error("from_dlpack: the DLPack tensor is on " +
                       dlpack::device_text(device.device_type, device.device_id) +
                       "; npybridge reads CPU memory only (kDLCPU)");
}

/// A capsule consumed already, of another major version (`major`), or not DLPack's.
template <class = void>
[[noreturn]] void throw_dlpack_capsule(std::string_view name, int major = -1, int minor = 0) {
    if (major >= 0) {
        throw dlpack_error("from_dlpack: DLPack " + std::to_string(major) + "." + std::to_string(minor) +
                           " capsule; npybridge reads DLPack 1.x");
    }
    const bool used = name == dlpack::used_capsule_name || name == dlpack::used_versioned_capsule_name;
    throw dlpack_error("from_dlpack: " + (used ? "the DLPack capsule was already consumed ('" + std::string(name) +
                                                     "'): a capsule gives its tensor to one consumer, once"
                                               : "a capsule named '" + std::string(name) +
                                                     "' is not a DLPack tensor ('dltensor' or 'dltensor_versioned')"));
}

template <class = void>
[[noreturn]] void throw_packed_needs_dtype(const std::string& what, const std::string& fits,
                                           const std::optional<dtype>& given) {
    throw dtype_error(what + " needs a packed dtype of that coding as dtype (" +
                      (fits.empty() ? std::string("none has it") : fits) + "; quantized ones with their params)" +
                      (given ? ", got " + given->to_string() : std::string()));
}

template <class = void>
[[noreturn]] void throw_packed_strides(const std::string& what) {
    throw conversion_error(what + " has strides that are neither compact nor row-aligned packing");
}

}  // namespace detail
}  // namespace npybridge
