// npybridge/core/dlpack_abi.hpp — the DLPack 1.1 ABI (structs, flags, capsule names), Python-free.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/errors.hpp>

#include <cstdint>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The DLPack 1.1 ABI from the specification (no DLPack header needed), with dlpack.h's names and layouts.
namespace dlpack {

/// DLPackVersion.
struct DLPackVersion {
    std::uint32_t major;
    std::uint32_t minor;
};
/// The version npybridge writes and the newest it reads.
inline constexpr DLPackVersion supported{1, 1};

/// DLDeviceType's kDLCPU, the only device npybridge reads or writes.
inline constexpr std::int32_t kDLCPU = 1;

/// DLDevice.
struct DLDevice {
    std::int32_t device_type;
    std::int32_t device_id;
};

/// DLDataTypeCode.
enum DLDataTypeCode : std::uint8_t {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
};

/// DLDataType.
struct DLDataType {
    std::uint8_t code;
    std::uint8_t bits;
    std::uint16_t lanes;
    friend constexpr bool operator==(DLDataType a, DLDataType b) noexcept {
        return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
    }
    friend constexpr bool operator!=(DLDataType a, DLDataType b) noexcept { return !(a == b); }
};

/// DLTensor: strides in elements (NULL: C-contiguous).
struct DLTensor {
    void* data;
    DLDevice device;
    std::int32_t ndim;
    DLDataType dtype;
    std::int64_t* shape;
    std::int64_t* strides;
    std::uint64_t byte_offset;
};

/// DLManagedTensor (the legacy, unversioned capsule "dltensor").
struct DLManagedTensor {
    DLTensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(DLManagedTensor* self);
};

/// DLManagedTensorVersioned (capsule "dltensor_versioned").
struct DLManagedTensorVersioned {
    DLPackVersion version;
    void* manager_ctx;
    void (*deleter)(DLManagedTensorVersioned* self);
    std::uint64_t flags;
    DLTensor dl_tensor;
};

/// DLPACK_FLAG_BITMASK_READ_ONLY.
inline constexpr std::uint64_t flag_read_only = std::uint64_t{1} << 0;
/// DLPACK_FLAG_BITMASK_IS_COPIED.
inline constexpr std::uint64_t flag_is_copied = std::uint64_t{1} << 1;
/// DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED.
inline constexpr std::uint64_t flag_subbyte_padded = std::uint64_t{1} << 2;

/// Capsule name of an unversioned export.
inline constexpr const char* capsule_name = "dltensor";
/// The name of a consumed unversioned capsule.
inline constexpr const char* used_capsule_name = "used_dltensor";
/// Capsule name of a versioned export.
inline constexpr const char* versioned_capsule_name = "dltensor_versioned";
/// The name of a consumed versioned capsule.
inline constexpr const char* used_versioned_capsule_name = "used_dltensor_versioned";

/// "CUDA:1" for error messages.
inline std::string device_text(std::int32_t type, std::int32_t id) {
    static const char* const names[] = {nullptr,  "CPU",         "CUDA",   "CUDAHost", "OpenCL",  nullptr,
                                        nullptr,  "Vulkan",      "Metal",  "VPI",      "ROCM",    "ROCMHost",
                                        "ExtDev", "CUDAManaged", "OneAPI", "WebGPU",   "Hexagon", "MAIA"};
    const bool named = type > 0 && type < static_cast<std::int32_t>(sizeof(names) / sizeof(names[0])) && names[type];
    return (named ? std::string(names[type]) : "device type " + std::to_string(type)) + ":" + std::to_string(id);
}

/// "int4", "float32x4" for error messages.
inline std::string type_text(DLDataType type) {
    static const char* const codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
    std::string text = type.code < 7 ? codes[type.code] : "code " + std::to_string(type.code);
    text += std::to_string(type.bits);
    if (type.lanes != 1) text += "x" + std::to_string(type.lanes);
    return text;
}

/// Example: a DLTensor's element type, read with the specification's names.
/// ```cpp
/// #include <npybridge/core/dlpack_abi.hpp>
///
/// bool holds_float32(const npybridge::dlpack::DLTensor& t) {
///     return t.dtype == npybridge::dlpack::DLDataType{npybridge::dlpack::kDLFloat, 32, 1};
/// }
/// ```

// The names before 0.6: a compile error naming dlpack.h's name, at any use (a pointer, a copy) where the compiler
// has `unavailable` (GCC 12, Clang); else where the name is used as a type's object or a value.
#define NPYBRIDGE_REMOVED_TEXT(old, now) "npybridge: dlpack::" #old " was removed in 0.6.0: write dlpack::" #now
#if defined(__has_attribute)
#if __has_attribute(unavailable)
#define NPYBRIDGE_REMOVED_UNAVAILABLE
#endif
#endif
#if defined(NPYBRIDGE_REMOVED_UNAVAILABLE)
#define NPYBRIDGE_REMOVED_TYPE(old, now) typedef now old __attribute__((unavailable(NPYBRIDGE_REMOVED_TEXT(old, now))));
#define NPYBRIDGE_REMOVED_VALUE(old, now) \
    inline constexpr decltype(now) old __attribute__((unavailable(NPYBRIDGE_REMOVED_TEXT(old, now)))) = now;
#else
#define NPYBRIDGE_REMOVED_TYPE(old, now)                                               \
    template <class... Use>                                                            \
    struct old##_removed {                                                             \
        static_assert(detail::always_false<Use...>, NPYBRIDGE_REMOVED_TEXT(old, now)); \
    };                                                                                 \
    using old = old##_removed<>;
#define NPYBRIDGE_REMOVED_VALUE(old, now)                                             \
    struct old##_removed {                                                            \
        template <class T>                                                            \
        constexpr operator T() const {                                                \
            static_assert(detail::always_false<T>, NPYBRIDGE_REMOVED_TEXT(old, now)); \
            return T{};                                                               \
        }                                                                             \
    };                                                                                \
    inline constexpr old##_removed old{};
#endif
NPYBRIDGE_REMOVED_TYPE(api_version, DLPackVersion)
NPYBRIDGE_REMOVED_TYPE(device_spec, DLDevice)
NPYBRIDGE_REMOVED_TYPE(data_type, DLDataType)
NPYBRIDGE_REMOVED_TYPE(type_code, DLDataTypeCode)
NPYBRIDGE_REMOVED_TYPE(tensor_view, DLTensor)
NPYBRIDGE_REMOVED_TYPE(managed_tensor, DLManagedTensor)
NPYBRIDGE_REMOVED_TYPE(managed_tensor_versioned, DLManagedTensorVersioned)
NPYBRIDGE_REMOVED_VALUE(cpu, kDLCPU)
NPYBRIDGE_REMOVED_VALUE(int_code, kDLInt)
NPYBRIDGE_REMOVED_VALUE(uint_code, kDLUInt)
NPYBRIDGE_REMOVED_VALUE(float_code, kDLFloat)
NPYBRIDGE_REMOVED_VALUE(opaque_code, kDLOpaqueHandle)
NPYBRIDGE_REMOVED_VALUE(bfloat_code, kDLBfloat)
NPYBRIDGE_REMOVED_VALUE(complex_code, kDLComplex)
NPYBRIDGE_REMOVED_VALUE(bool_code, kDLBool)
#undef NPYBRIDGE_REMOVED_TYPE
#undef NPYBRIDGE_REMOVED_VALUE
#undef NPYBRIDGE_REMOVED_TEXT
#undef NPYBRIDGE_REMOVED_UNAVAILABLE

}  // namespace dlpack

}  // namespace npybridge
