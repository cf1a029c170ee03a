// npybridge/core/lowbit.hpp — packing 1-, 2- and 4-bit dtypes bit-exactly as MegBrain does, and back.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lowbit_kernels.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/vocabulary.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// MegBrain's layout: row-aligned for the packed quantized 4-bit dtypes, compact for IntB1/2/4 and UintB4.
constexpr lowbit_layout default_layout(dtype_enum id) noexcept {
    return info(id).is_quantized && info(id).is_packed ? lowbit_layout::row_aligned : lowbit_layout::compact;
}

/// Bytes of one innermost row of `row_length` elements, byte-aligned.
constexpr std::size_t row_pitch(dtype_enum id, std::size_t row_length) { return byte_size(id, row_length); }

/// Bytes of `count` packed elements in `layout` (row_length: the innermost dimension, unused for compact);
/// conversion_error past size_t.
constexpr std::size_t packed_bytes(dtype_enum id, std::size_t count, std::size_t row_length, lowbit_layout layout) {
    if (layout == lowbit_layout::compact || row_length == 0) return byte_size(id, count);
    const std::size_t rows = count / row_length, pitch = row_pitch(id, row_length);
    if (pitch != 0 && rows > SIZE_MAX / pitch) {
        throw conversion_error("packed_bytes: " + std::to_string(rows) + " rows of " + std::to_string(pitch) +
                               " bytes take more than a size_t can count");
    }
    return rows * pitch;
}

/// A packed buffer's element count and innermost dimension (row-aligned: count is a multiple of it).
struct lowbit_extent {
    std::size_t count = 0;
    std::size_t row_length = 0;
};

/// Packs one byte per element (int8; uint8 for Quantized4Asymm) into dst, which holds packed_bytes(...).
/// value_range_error names the first invalid index and value, and dst is left as it was.
inline void pack(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout,
                 const detail::lowbit_kernels& kernels = detail::active_lowbit_kernels());

/// pack() into memory nobody sees yet: no temporary, so after an error dst holds a partial result to discard.
inline void pack_fresh(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout,
                       const detail::lowbit_kernels& kernels = detail::active_lowbit_kernels());

/// Unpacks into one byte per element (fails only for a dtype that is not packed).
inline void unpack(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout,
                   const detail::lowbit_kernels& kernels = detail::active_lowbit_kernels());

/// Unpacks a packed sub-tensor (strided rows, rows starting inside a byte) into one byte per element in C order;
/// `strides` count elements from bit 0 of `src`.
inline void unpack_strided(dtype_enum id, const void* src, const std::size_t* shape, const std::ptrdiff_t* strides,
                           std::size_t ndim, void* dst);

/// Packs one byte per element (C order) into a packed sub-tensor, keeping every bit outside its elements; all values
/// are checked first (value_range_error names the index, dst untouched).
inline void pack_strided(dtype_enum id, const void* src, const std::size_t* shape, const std::ptrdiff_t* strides,
                         std::size_t ndim, void* dst);

/// Copies a dense packed tensor's bytes over `dst` of the same shape and layout, changing no bit outside dst's elements
/// (the rest of a byte may belong to a view's neighbour).
inline void copy_packed_dense(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout);

/// The kernel set this machine uses ("ssse3" or "portable").
inline const char* lowbit_kernel_name() noexcept { return detail::active_lowbit_kernels().name; }

/// Example: four QuantizedS4 codes packed into two bytes and back.
/// ```cpp
/// #include <npybridge/core/lowbit.hpp>
///
/// #include <cstdint>
///
/// bool round_trip() {
///     const std::int8_t codes[4] = {-8, -1, 0, 7};
///     std::uint8_t packed[2];
///     std::int8_t back[4];
///     const npybridge::lowbit_extent extent{4, 4};
///     npybridge::pack(npybridge::dtype_enum::QuantizedS4, codes, extent, packed, npybridge::lowbit_layout::compact);
///     npybridge::unpack(npybridge::dtype_enum::QuantizedS4, packed, extent, back, npybridge::lowbit_layout::compact);
///     return back[0] == -8 && back[3] == 7;
/// }
/// ```

}  // namespace npybridge

// ---- Definitions ------------------------------------------------------------------------------------------------

#include <npybridge/core/detail/packing.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

inline void pack(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout,
                 const detail::lowbit_kernels& kernels) {
    const dtype_info& type = detail::packed_info(id, "pack");
    detail::check_extent(type, extent, layout);
    const detail::lowbit_codec codec = detail::make_codec(type);
    const std::size_t bytes = packed_bytes(id, extent.count, extent.row_length, layout);
    detail::scratch_buffer scratch(bytes);
    const auto* in = static_cast<const std::uint8_t*>(src);
    if (!detail::pack_rows(kernels, codec, id, in, extent.count, extent.row_length, layout, scratch.data())) {
        detail::throw_first_invalid(type, codec, in, extent.count);
    }
    if (bytes > 0) std::memcpy(dst, scratch.data(), bytes);
}

inline void pack_fresh(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout,
                       const detail::lowbit_kernels& kernels) {
    const dtype_info& type = detail::packed_info(id, "pack");
    detail::check_extent(type, extent, layout);
    const detail::lowbit_codec codec = detail::make_codec(type);
    const auto* in = static_cast<const std::uint8_t*>(src);
    if (!detail::pack_rows(kernels, codec, id, in, extent.count, extent.row_length, layout,
                           static_cast<std::uint8_t*>(dst))) {
        detail::throw_first_invalid(type, codec, in, extent.count);
    }
}

inline void unpack(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout,
                   const detail::lowbit_kernels& kernels) {
    const dtype_info& type = detail::packed_info(id, "unpack");
    detail::check_extent(type, extent, layout);
    const detail::lowbit_codec codec = detail::make_codec(type);
    const detail::unpack_fn unpack_run = kernels.unpack[detail::lowbit_kernels::slot(codec.bits)];
    const auto* in = static_cast<const std::uint8_t*>(src);
    auto* out = static_cast<std::uint8_t*>(dst);
    if (layout == lowbit_layout::compact || extent.row_length == 0 || (extent.row_length * codec.bits) % 8 == 0) {
        unpack_run(codec, in, extent.count, out);
        return;
    }
    const std::size_t pitch = row_pitch(id, extent.row_length);
    for (std::size_t r = 0; r < extent.count / extent.row_length; ++r) {
        unpack_run(codec, in + r * pitch, extent.row_length, out + r * extent.row_length);
    }
}

inline void unpack_strided(dtype_enum id, const void* src, const std::size_t* shape, const std::ptrdiff_t* strides,
                           std::size_t ndim, void* dst) {
    const dtype_info& type = detail::packed_info(id, "unpack");
    const detail::lowbit_codec codec = detail::make_codec(type);
    const auto* in = static_cast<const std::uint8_t*>(src);
    auto* out = static_cast<std::uint8_t*>(dst);
    detail::for_each_packed_bit(codec.bits, shape, strides, ndim, [&](std::size_t flat, std::ptrdiff_t bit) {
        unsigned shift = 0;
        const std::uint8_t byte = *detail::byte_of_bit(in, bit, shift);
        out[flat] = static_cast<std::uint8_t>(codec.decode[(byte >> shift) & codec.code_mask]);
    });
}

inline void pack_strided(dtype_enum id, const void* src, const std::size_t* shape, const std::ptrdiff_t* strides,
                         std::size_t ndim, void* dst) {
    const dtype_info& type = detail::packed_info(id, "pack");
    const detail::lowbit_codec codec = detail::make_codec(type);
    const auto* in = static_cast<const std::uint8_t*>(src);
    std::size_t count = 1;
    for (std::size_t i = 0; i < ndim; ++i) count *= shape[i];
    for (std::size_t i = 0; i < count; ++i) {
        std::uint8_t bad = 0;
        detail::encode(codec, in[i], bad);
        if (bad != 0) detail::throw_first_invalid(type, codec, in, count);
    }
    auto* out = static_cast<std::uint8_t*>(dst);
    detail::for_each_packed_bit(codec.bits, shape, strides, ndim, [&](std::size_t flat, std::ptrdiff_t bit) {
        unsigned shift = 0;
        std::uint8_t* byte = detail::byte_of_bit(out, bit, shift);
        std::uint8_t unused = 0;
        const unsigned code = detail::encode(codec, in[flat], unused);
        *byte = static_cast<std::uint8_t>((*byte & ~(codec.code_mask << shift)) | (code << shift));
    });
}

inline void copy_packed_dense(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout) {
    const dtype_info& type = detail::packed_info(id, "copy");
    detail::check_extent(type, extent, layout);
    if (extent.count == 0) return;
    const bool compact = layout == lowbit_layout::compact || extent.row_length == 0;
    const std::size_t row_length = compact ? extent.count : extent.row_length;
    const std::size_t rows = extent.count / row_length;
    const std::size_t whole = row_length * type.bits / 8, tail_bits = row_length * type.bits % 8;
    const std::size_t pitch = whole + (tail_bits != 0);
    const auto* in = static_cast<const std::uint8_t*>(src);
    auto* out = static_cast<std::uint8_t*>(dst);
    if (tail_bits == 0) {  // rows fill whole bytes
        std::memcpy(out, in, rows * pitch);
        return;
    }
    const auto mask = static_cast<std::uint8_t>((1u << tail_bits) - 1u);  // elements sit from bit 0 up
    for (std::size_t r = 0; r < rows; ++r, in += pitch, out += pitch) {
        std::memcpy(out, in, whole);
        out[whole] = static_cast<std::uint8_t>((out[whole] & ~mask) | (in[whole] & mask));
    }
}

}  // namespace npybridge
