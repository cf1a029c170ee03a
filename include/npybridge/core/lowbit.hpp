// npybridge/core/lowbit.hpp — packing 1, 2 and 4-bit dtypes bit-exactly as MegBrain lays them out, and back.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lowbit_kernels.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// How a packed tensor's bits are laid out (docs/lowbit.md has bit pictures).
enum class lowbit_layout : std::uint8_t {
    compact,      ///< the whole tensor is one bit stream
    row_aligned,  ///< each innermost row starts on a byte boundary
};

/// MegBrain's layout for a dtype: row-aligned for the packed quantized 4-bit
/// dtypes, compact for IntB1/2/4 and UintB4 (and, meaninglessly, for every
/// dtype that is not packed).
constexpr lowbit_layout default_layout(dtype_enum id) noexcept {
    return info(id).is_quantized && info(id).is_packed ? lowbit_layout::row_aligned : lowbit_layout::compact;
}

/// Bytes one innermost row of `row_length` elements takes when rows are byte-aligned.
constexpr std::size_t row_pitch(dtype_enum id, std::size_t row_length) {
    return byte_size(id, row_length);  // a row is a compact run
}

/// Bytes a packed tensor of `count` elements with innermost dimension
/// `row_length` takes in `layout` (row_length is ignored for compact). Sizes
/// that do not fit a size_t are a conversion_error.
constexpr std::size_t packed_bytes(dtype_enum id, std::size_t count, std::size_t row_length, lowbit_layout layout) {
    if (layout == lowbit_layout::compact || row_length == 0) return byte_size(id, count);
    const std::size_t rows = count / row_length, pitch = row_pitch(id, row_length);
    if (pitch != 0 && rows > SIZE_MAX / pitch) {
        throw conversion_error("packed_bytes: " + std::to_string(rows) + " rows of " + std::to_string(pitch) +
                               " bytes take more than a size_t can count");
    }
    return rows * pitch;
}

namespace detail {

constexpr lowbit_codec make_codec(const dtype_info& type) noexcept {
    lowbit_codec c{};
    c.bits = type.bits;
    const unsigned top = (1u << type.bits) - 1u;
    c.code_mask = static_cast<std::uint8_t>(top);
    switch (type.coding) {
        case lowbit_coding::odd:  // v = 2c - top
            c.bias = static_cast<std::uint8_t>(top);
            c.invalid = static_cast<std::uint8_t>(~(2u * top) & 0xFFu);
            c.shift = 1;
            for (unsigned code = 0; code < 16; ++code)
                c.decode[code] = static_cast<std::int8_t>(2 * static_cast<int>(code & top) - static_cast<int>(top));
            break;
        case lowbit_coding::twos_complement: {  // v = sign-extended c
            const unsigned half = 1u << (type.bits - 1);
            c.bias = static_cast<std::uint8_t>(half);
            c.invalid = static_cast<std::uint8_t>(~top & 0xFFu);
            c.flip = static_cast<std::uint8_t>(half);
            for (unsigned code = 0; code < 16; ++code) {
                const int value = static_cast<int>(code & top);
                c.decode[code] = static_cast<std::int8_t>(
                    value >= static_cast<int>(half) ? value - static_cast<int>(top + 1) : value);
            }
            break;
        }
        case lowbit_coding::unsigned_value:
        case lowbit_coding::none:
            c.invalid = static_cast<std::uint8_t>(~top & 0xFFu);
            for (unsigned code = 0; code < 16; ++code) c.decode[code] = static_cast<std::int8_t>(code & top);
            break;
    }
    return c;
}

/// "IntB1, IntB2, ...": the names of the dtypes `keep` selects, in table order (for messages that list
/// them: derived, so a new row shows up without editing a message).
template <class Keep>
std::string dtype_names(Keep keep) {
    std::string names;
    for (const dtype_info& row : dtype_table) {
        if (!keep(row)) continue;
        if (!names.empty()) names += ", ";
        names += row.name;
    }
    return names;
}

inline const dtype_info& packed_info(dtype_enum id, const char* what) {
    if (!is_valid(id) || !info(id).is_packed) {
        throw dtype_error(std::string(what) + ": " +
                          (is_valid(id) ? std::string(info(id).name) : std::string("this enum value")) +
                          " is not a packed low-bit dtype (" +
                          dtype_names([](const dtype_info& row) { return row.is_packed; }) + ")");
    }
    return info(id);
}

inline std::string valid_set_text(const dtype_info& type) {
    const std::string lo = std::to_string(static_cast<long>(type.range.lo));
    const std::string hi = std::to_string(static_cast<long>(type.range.hi));
    return type.coding == lowbit_coding::odd ? "odd values in [" + lo + ", " + hi + "]" : "[" + lo + ", " + hi + "]";
}

inline std::string flat_index_text(std::size_t i) { return std::to_string(i); }

/// The first invalid element (error path only: one more scan, then throw), its
/// index written by index_text (flat here; an array's coordinates in detail/messages.hpp).
template <class IndexText = std::string (*)(std::size_t)>
[[noreturn]] void throw_first_invalid(const dtype_info& type, const lowbit_codec& codec, const std::uint8_t* src,
                                      std::size_t count, IndexText index_text = flat_index_text) {
    for (std::size_t i = 0; i < count; ++i) {
        std::uint8_t bad = 0;
        encode(codec, src[i], bad);
        if (bad != 0) {
            const long value =
                type.is_signed ? static_cast<long>(static_cast<std::int8_t>(src[i])) : static_cast<long>(src[i]);
            throw value_range_error(std::string(type.name) + ": value " + std::to_string(value) + " at index " +
                                    index_text(i) + " is not valid (" + std::string(type.name) + " holds " +
                                    valid_set_text(type) + ")");
        }
    }
    throw value_range_error(std::string(type.name) + ": invalid value (not found on rescan)");
}

inline bool pack_rows(const lowbit_kernels& kernels, const lowbit_codec& codec, dtype_enum id, const std::uint8_t* src,
                      std::size_t count, std::size_t row_length, lowbit_layout layout, std::uint8_t* dst) {
    const pack_fn pack = kernels.pack[lowbit_kernels::slot(codec.bits)];
    if (layout == lowbit_layout::compact || row_length == 0 || (row_length * codec.bits) % 8 == 0) {
        return pack(codec, src, count, dst);  // rows already end on byte boundaries
    }
    const std::size_t pitch = row_pitch(id, row_length);
    bool ok = true;
    for (std::size_t r = 0; r < count / row_length; ++r) {
        ok &= pack(codec, src + r * row_length, row_length, dst + r * pitch);
    }
    return ok;
}

}  // namespace detail

namespace detail {

/// pack()'s temporary. Each thread keeps one buffer of up to
/// NPYBRIDGE_PACK_SCRATCH_KEEP_BYTES between calls, because fresh pages cost
/// more than the packing itself; larger requests are freed after use.
class scratch_buffer {
public:
    explicit scratch_buffer(std::size_t bytes) {
        std::unique_ptr<std::uint8_t[]>& kept = kept_buffer();
        std::size_t& kept_size = kept_bytes();
        if (bytes <= NPYBRIDGE_PACK_SCRATCH_KEEP_BYTES) {
            if (kept_size < bytes) {
                kept.reset(new std::uint8_t[bytes]);
                kept_size = bytes;
            }
            m_data = kept.get();
        } else {
            m_owned.reset(new std::uint8_t[bytes]);
            m_data = m_owned.get();
        }
    }
    std::uint8_t* data() noexcept { return m_data; }

private:
    static std::unique_ptr<std::uint8_t[]>& kept_buffer() {
        thread_local std::unique_ptr<std::uint8_t[]> buffer;
        return buffer;
    }
    static std::size_t& kept_bytes() {
        thread_local std::size_t size = 0;
        return size;
    }
    std::unique_ptr<std::uint8_t[]> m_owned;
    std::uint8_t* m_data = nullptr;
};

}  // namespace detail

/// Shape of a packed buffer: the element count and the innermost dimension
/// (needed by the row-aligned layout; count must be a multiple of it).
struct lowbit_extent {
    std::size_t count = 0;
    std::size_t row_length = 0;
};

namespace detail {

inline void check_extent(const dtype_info& type, lowbit_extent extent, lowbit_layout layout) {
    if (layout == lowbit_layout::row_aligned && extent.count != 0 &&
        (extent.row_length == 0 || extent.count % extent.row_length != 0)) {
        throw conversion_error(std::string(type.name) + ": row-aligned layout needs the innermost dimension (" +
                               std::to_string(extent.row_length) + ") to divide the element count (" +
                               std::to_string(extent.count) + ")");
    }
}

}  // namespace detail

/// Packs one-byte-per-element values (int8, or uint8 for Quantized4Asymm)
/// into dst, which must hold packed_bytes(...) bytes. Throws value_range_error
/// naming the first invalid index and value; dst is then left exactly as it
/// was (the kernel writes a temporary, copied over only when all is valid).
inline void pack(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout,
                 const detail::lowbit_kernels& kernels = detail::active_lowbit_kernels()) {
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

/// Same as pack(), into memory nobody else sees yet (a tensor being built):
/// no temporary, so on a bad value dst holds a partial result that the caller
/// must discard. This is what conversions into new tensors use.
inline void pack_fresh(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout,
                       const detail::lowbit_kernels& kernels = detail::active_lowbit_kernels()) {
    const dtype_info& type = detail::packed_info(id, "pack");
    detail::check_extent(type, extent, layout);
    const detail::lowbit_codec codec = detail::make_codec(type);
    const auto* in = static_cast<const std::uint8_t*>(src);
    if (!detail::pack_rows(kernels, codec, id, in, extent.count, extent.row_length, layout,
                           static_cast<std::uint8_t*>(dst))) {
        detail::throw_first_invalid(type, codec, in, extent.count);
    }
}

/// Unpacks into one byte per element (every code is valid: this cannot fail
/// on data, only on a dtype that is not packed).
inline void unpack(dtype_enum id, const void* src, lowbit_extent extent, void* dst, lowbit_layout layout,
                   const detail::lowbit_kernels& kernels = detail::active_lowbit_kernels()) {
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

namespace detail {

/// Calls visit(flat index, bit position from bit 0 of the first element's byte) for each element of a
/// packed layout in C order; strides count elements and may be padded, strided or negative.
template <class Visit>
void for_each_packed_bit(unsigned bits, const std::size_t* shape, const std::ptrdiff_t* strides, std::size_t ndim,
                         Visit visit) {
    if (ndim > NPYBRIDGE_MAX_NDIM) {
        throw conversion_error(std::to_string(ndim) + " dimensions, at most " + std::to_string(NPYBRIDGE_MAX_NDIM) +
                               " (NPYBRIDGE_MAX_NDIM)");
    }
    std::size_t count = 1;
    for (std::size_t i = 0; i < ndim; ++i) count *= shape[i];
    if (count == 0) return;
    std::size_t index[NPYBRIDGE_MAX_NDIM + 1] = {};
    std::ptrdiff_t offset = 0;  // in elements
    for (std::size_t flat = 0; flat < count; ++flat) {
        visit(flat, offset * static_cast<std::ptrdiff_t>(bits));
        for (std::size_t d = ndim; d-- > 0;) {
            if (++index[d] < shape[d]) {
                offset += strides[d];
                break;
            }
            offset -= static_cast<std::ptrdiff_t>(index[d] - 1) * strides[d];
            index[d] = 0;
        }
    }
}

/// The byte holding bit `bit` (counted from bit 0 of `base`, possibly negative) and the bit's place in it.
template <class Byte>
Byte* byte_of_bit(Byte* base, std::ptrdiff_t bit, unsigned& shift) noexcept {
    const std::ptrdiff_t byte = bit >= 0 ? bit / 8 : -((-bit + 7) / 8);
    shift = static_cast<unsigned>(bit - byte * 8);
    return base + byte;
}

}  // namespace detail

/// Unpacks a packed tensor that is not dense (a sub-tensor: strided rows, a
/// column slice that starts rows inside a byte) into one byte per element in
/// C order. `strides` count elements from the first one, which starts at bit 0
/// of `src`; ndim is at most NPYBRIDGE_MAX_NDIM.
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

/// Packs one byte per element (C order) into a packed tensor that is not
/// dense, leaving every bit outside its elements as it was. Every value is
/// checked before the first is written: on a bad one (value_range_error naming
/// its index) dst is untouched.
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

/// Copies the bytes of a dense packed tensor (`src`, as pack() lays it out)
/// over `dst`, a tensor of the same shape and layout, changing no bit outside
/// dst's elements: where a row (row_aligned) or the stream (compact) ends
/// inside a byte, the rest of that byte may belong to a neighbour of a view
/// (the 4th element of a view of the first 3 of 4 IntB4 elements) and stays.
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
    if (tail_bits == 0) {  // rows fill whole bytes: nothing of anyone else's in reach
        std::memcpy(out, in, rows * pitch);
        return;
    }
    const auto mask = static_cast<std::uint8_t>((1u << tail_bits) - 1u);  // elements sit from bit 0 up
    for (std::size_t r = 0; r < rows; ++r, in += pitch, out += pitch) {
        std::memcpy(out, in, whole);
        out[whole] = static_cast<std::uint8_t>((out[whole] & ~mask) | (in[whole] & mask));
    }
}

/// Name of the kernel set this machine uses ("ssse3" or "portable").
inline const char* lowbit_kernel_name() noexcept { return detail::active_lowbit_kernels().name; }

}  // namespace npybridge
