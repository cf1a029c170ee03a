// npybridge/core/dlpack_abi.hpp — the DLPack 1.1 ABI (structs, flags, capsule names), Python-free.
#pragma once

#include <npybridge/core/config.hpp>

#include <cstdint>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The DLPack ABI, version 1.1, declared from the specification (no DLPack
/// header or package is needed). Layouts match dlpack.h's C structs.
namespace dlpack {

struct api_version {
    std::uint32_t major;
    std::uint32_t minor;
};
/// The version npybridge writes and the newest it reads.
inline constexpr api_version supported{1, 1};

/// DLDeviceType: only kDLCPU memory is read or written here.
inline constexpr std::int32_t cpu = 1;

struct device_spec {
    std::int32_t device_type;
    std::int32_t device_id;
};

/// DLDataTypeCode.
enum type_code : std::uint8_t {
    int_code = 0,
    uint_code = 1,
    float_code = 2,
    opaque_code = 3,
    bfloat_code = 4,
    complex_code = 5,
    bool_code = 6,
};

struct data_type {
    std::uint8_t code;
    std::uint8_t bits;
    std::uint16_t lanes;
    friend constexpr bool operator==(data_type a, data_type b) noexcept {
        return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
    }
    friend constexpr bool operator!=(data_type a, data_type b) noexcept { return !(a == b); }
};

/// DLTensor: strides in elements (NULL: C-contiguous).
struct tensor_view {
    void* data;
    device_spec device;
    std::int32_t ndim;
    data_type dtype;
    std::int64_t* shape;
    std::int64_t* strides;
    std::uint64_t byte_offset;
};

/// DLManagedTensor (the legacy, unversioned capsule "dltensor").
struct managed_tensor {
    tensor_view dl_tensor;
    void* manager_ctx;
    void (*deleter)(managed_tensor* self);
};

/// DLManagedTensorVersioned (capsule "dltensor_versioned").
struct managed_tensor_versioned {
    api_version version;
    void* manager_ctx;
    void (*deleter)(managed_tensor_versioned* self);
    std::uint64_t flags;
    tensor_view dl_tensor;
};

inline constexpr std::uint64_t flag_read_only = std::uint64_t{1} << 0;
inline constexpr std::uint64_t flag_is_copied = std::uint64_t{1} << 1;
inline constexpr std::uint64_t flag_subbyte_padded = std::uint64_t{1} << 2;

inline constexpr const char* capsule_name = "dltensor";
inline constexpr const char* used_capsule_name = "used_dltensor";
inline constexpr const char* versioned_capsule_name = "dltensor_versioned";
inline constexpr const char* used_versioned_capsule_name = "used_dltensor_versioned";

/// "CUDA:1" for error messages.
inline std::string device_text(std::int32_t type, std::int32_t id) {
    static const char* const names[] = {nullptr,  "CPU",         "CUDA",   "CUDAHost", "OpenCL",  nullptr,
                                        nullptr,  "Vulkan",      "Metal",  "VPI",      "ROCM",    "ROCMHost",
                                        "ExtDev", "CUDAManaged", "OneAPI", "WebGPU",   "Hexagon", "MAIA"};
    const bool named = type > 0 && type < static_cast<std::int32_t>(sizeof(names) / sizeof(names[0])) && names[type];
    return (named ? std::string(names[type]) : "device type " + std::to_string(type)) + ":" + std::to_string(id);
}

inline std::string type_text(data_type type) {
    static const char* const codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
    std::string text = type.code < 7 ? codes[type.code] : "code " + std::to_string(type.code);
    text += std::to_string(type.bits);
    if (type.lanes != 1) text += "x" + std::to_string(type.lanes);
    return text;
}

}  // namespace dlpack

}  // namespace npybridge
