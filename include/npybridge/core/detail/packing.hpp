// npybridge/core/detail/packing.hpp — lowbit.hpp's parts: codecs, the scratch buffer, checks, strided walks.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/detail/lowbit_kernels.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
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

/// "IntB1, IntB2, ...": the names of the dtypes `keep` selects, derived for messages.
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

/// The index of the first element the codec does not hold, else count.
inline std::size_t first_invalid(const lowbit_codec& codec, const std::uint8_t* src, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; ++i) {
        std::uint8_t bad = 0;
        encode(codec, src[i], bad);
        if (bad != 0) return i;
    }
    return count;
}

/// The first invalid element (error path: one more scan, then throw), indexed by index_text.
template <class IndexText = std::string (*)(std::size_t)>
[[noreturn]] void throw_first_invalid(const dtype_info& type, const lowbit_codec& codec, const std::uint8_t* src,
                                      std::size_t count, IndexText index_text = flat_index_text) {
    const std::size_t i = first_invalid(codec, src, count);
    if (i == count) throw value_range_error(std::string(type.name) + ": invalid value (not found on rescan)");
    const long value = type.is_signed ? static_cast<long>(static_cast<std::int8_t>(src[i])) : static_cast<long>(src[i]);
    throw value_range_error(std::string(type.name) + ": value " + std::to_string(value) + " at index " + index_text(i) +
                            " is not valid (" + std::string(type.name) + " holds " + valid_set_text(type) + ")");
}

inline bool pack_rows(const lowbit_kernels& kernels, const lowbit_codec& codec, dtype_enum id, const std::uint8_t* src,
                      std::size_t count, std::size_t row_length, lowbit_layout layout, std::uint8_t* dst) {
    const pack_fn pack = kernels.pack[lowbit_kernels::slot(codec.bits)];
    if (layout == lowbit_layout::compact || row_length == 0 || (row_length * codec.bits) % 8 == 0) {
        return pack(codec, src, count, dst);  // rows end on bytes already
    }
    const std::size_t pitch = row_pitch(id, row_length);
    bool ok = true;
    for (std::size_t r = 0; r < count / row_length; ++r) {
        ok &= pack(codec, src + r * row_length, row_length, dst + r * pitch);
    }
    return ok;
}

/// pack()'s temporary: each thread keeps one of up to NPYBRIDGE_PACK_SCRATCH_KEEP_BYTES (fresh pages cost more than
/// packing).
class scratch_buffer {
public:
    explicit scratch_buffer(std::size_t bytes) {
        byte_buffer& kept = kept_buffer();
        std::size_t& kept_size = kept_bytes();
        if (bytes <= NPYBRIDGE_PACK_SCRATCH_KEEP_BYTES) {
            if (kept_size < bytes) {
                kept = byte_buffer(bytes);
                kept_size = bytes;
            }
            m_data = kept.get();
        } else {
            m_owned = byte_buffer(bytes);
            m_data = m_owned.get();
        }
    }
    std::uint8_t* data() noexcept { return m_data; }

private:
    static byte_buffer& kept_buffer() {
        thread_local byte_buffer buffer;
        return buffer;
    }
    static std::size_t& kept_bytes() {
        thread_local std::size_t size = 0;
        return size;
    }
    byte_buffer m_owned;
    std::uint8_t* m_data = nullptr;
};

inline void check_extent(const dtype_info& type, lowbit_extent extent, lowbit_layout layout) {
    if (layout == lowbit_layout::row_aligned && extent.count != 0 &&
        (extent.row_length == 0 || extent.count % extent.row_length != 0)) {
        throw conversion_error(std::string(type.name) + ": row-aligned layout needs the innermost dimension (" +
                               std::to_string(extent.row_length) + ") to divide the element count (" +
                               std::to_string(extent.count) + ")");
    }
}

/// Calls visit(flat index, bit position) for each element of a packed layout in C order (strides in elements, any
/// sign).
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

/// The byte holding bit `bit` of `base` (may be negative) and the bit's place.
template <class Byte>
Byte* byte_of_bit(Byte* base, std::ptrdiff_t bit, unsigned& shift) noexcept {
    const std::ptrdiff_t byte = bit >= 0 ? bit / 8 : -((-bit + 7) / 8);
    shift = static_cast<unsigned>(bit - byte * 8);
    return base + byte;
}

}  // namespace detail
}  // namespace npybridge
