// npybridge/detail/messages_dlpack.hpp — detail/messages.hpp's DLPack part: the export's and import's errors from
// their facts (apart, so a translation unit without DLPack does not parse them).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/dlpack_types.hpp>
#include <npybridge/core/dlpack_abi.hpp>
#include <npybridge/detail/messages.hpp>

#include <optional>
#include <string>

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

}  // namespace detail
}  // namespace npybridge
