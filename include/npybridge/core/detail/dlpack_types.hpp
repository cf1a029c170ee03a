// npybridge/core/detail/dlpack_types.hpp — each dtype's DLPack element type, and packed tensors' DLPack strides.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dlpack_abi.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/layout.hpp>
#include <npybridge/core/lowbit.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The DLPack type of a dtype's elements, from its row. Quantized dtypes and IntB1/2/4 have none: with `codes` they
/// export their codes, else nullopt.
constexpr std::optional<dlpack::DLDataType> dlpack_type_of(const dtype_info& entry, bool codes) noexcept {
    using namespace dlpack;
    const bool needs_codes = entry.is_quantized || entry.coding == lowbit_coding::odd;
    if (needs_codes && !codes) return std::nullopt;
    if (entry.is_packed) {
        const auto bits = static_cast<std::uint8_t>(entry.bits);
        return DLDataType{entry.coding == lowbit_coding::twos_complement ? kDLInt : kDLUInt, bits, 1};
    }
    const std::string_view s = entry.storage;
    const auto bits = static_cast<std::uint8_t>(entry.element_size * 8);
    if (s == "bool") return DLDataType{kDLBool, 8, 1};
    if (s == "half" || s == "float" || s == "double") return DLDataType{kDLFloat, bits, 1};
    if (s == "bfloat16") return DLDataType{kDLBfloat, 16, 1};
    if (s == "complex<float>") return DLDataType{kDLComplex, 64, 1};
    if (s == "byte" || s.substr(0, 4) == "uint") return DLDataType{kDLUInt, bits, 1};
    if (s.substr(0, 3) == "int") return DLDataType{kDLInt, bits, 1};
    return std::nullopt;
}

namespace detail {

/// dlpack_type_of for every row, without and with codes.
constexpr std::array<std::array<std::optional<dlpack::DLDataType>, dtype_count>, 2> make_dlpack_types() noexcept {
    std::array<std::array<std::optional<dlpack::DLDataType>, dtype_count>, 2> types{};
    for (std::size_t i = 0; i < dtype_count; ++i) {
        types[0][i] = dlpack_type_of(dtype_table[i], false);
        types[1][i] = dlpack_type_of(dtype_table[i], true);
    }
    return types;
}
inline constexpr auto dlpack_types = make_dlpack_types();

/// A packed tensor's element strides as DLPack reads them (row-aligned pads the innermost dimension to whole bytes).
inline void packed_strides(const tensor_layout& layout, unsigned bits, lowbit_layout packing, std::int64_t* strides) {
    const tensor_layout packed = packing == lowbit_layout::row_aligned
                                     ? tensor_layout::row_aligned(bits, layout.shape.data(), layout.ndim)
                                     : tensor_layout::contiguous(layout.shape.data(), layout.ndim);
    for (std::size_t i = 0; i < layout.ndim; ++i) strides[i] = packed.strides[i];
}

}  // namespace detail

}  // namespace npybridge
