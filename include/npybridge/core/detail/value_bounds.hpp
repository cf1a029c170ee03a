// npybridge/core/detail/value_bounds.hpp — what a value must satisfy to go into a dtype unchanged.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/detail/narrowing_kernels.hpp>
#include <npybridge/core/detail/params.hpp>
#include <npybridge/core/dtype.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Integer targets hold [lo, hi]; float targets keep finite values below `overflow` and integers of up to `digits`
/// bits.
struct value_bounds {
    bool floating = false;
    std::int64_t lo = 0, hi = 0;
    double overflow = 0;
    unsigned digits = 0;  ///< float32 24, float16 11, bfloat16 8
};

/// The first unfit value: its index in the array's coordinates (C order), and its text.
struct unfit_value {
    std::size_t index = 0;
    std::string text;
};

/// A dtype's storage bounds: quantized codes, [0, 1] for Bool, a byte for packed dtypes; none for Byte and 64-bit
/// storage.
inline maybe<value_bounds> storage_bounds(const dtype_info& type) {
    if (type.category == dtype_category::floating || type.category == dtype_category::complex) {
        const unsigned digits = type.storage == "bfloat16" ? 8 : type.storage == "half" ? 11 : 24;
        return value_bounds{true, 0, 0, overflow_threshold(type.range.hi), digits};
    }
    if (type.category == dtype_category::boolean) return value_bounds{false, 0, 1, 0, 0};
    if (type.is_packed)
        return type.is_signed ? value_bounds{false, -128, 127, 0, 0} : value_bounds{false, 0, 255, 0, 0};
    if (type.category != dtype_category::integer && type.category != dtype_category::quantized) return std::nullopt;
    const unsigned bits = static_cast<unsigned>(type.element_size * 8);
    if (bits >= 64) return std::nullopt;
    value_bounds bounds = type.is_signed ? value_bounds{false, -(std::int64_t{1} << (bits - 1)),
                                                        (std::int64_t{1} << (bits - 1)) - 1, 0, 0}
                                         : value_bounds{false, 0, (std::int64_t{1} << bits) - 1, 0, 0};
    bounds.lo = std::max(bounds.lo, static_cast<std::int64_t>(type.range.lo));
    bounds.hi = std::min(bounds.hi, static_cast<std::int64_t>(type.range.hi));
    return bounds;
}

/// Whether a dtype has fewer codes than its storage holds (QuantizedS1), so kept storage needs a check.
constexpr bool codes_narrower_than_storage(const dtype_info& type) noexcept {
    if (type.is_packed || (type.category != dtype_category::integer && type.category != dtype_category::quantized) ||
        type.element_size >= 8) {
        return false;
    }
    const unsigned bits = static_cast<unsigned>(type.element_size * 8);
    const double lo = type.is_signed ? -static_cast<double>(std::int64_t{1} << (bits - 1)) : 0.0;
    const double hi = type.is_signed ? static_cast<double>((std::int64_t{1} << (bits - 1)) - 1)
                                     : static_cast<double>((std::int64_t{1} << bits) - 1);
    return static_cast<double>(type.range.lo) > lo || static_cast<double>(type.range.hi) < hi;
}

/// codes_narrower_than_storage per row, for the borrow's per-call question.
inline constexpr std::array<bool, dtype_count> codes_narrower_by_row = [] {
    std::array<bool, dtype_count> rows{};
    for (std::size_t i = 0; i < dtype_count; ++i) rows[i] = codes_narrower_than_storage(dtype_table[i]);
    return rows;
}();

/// "16777217 (not held exactly: it would become 16777216)", with the float the conversion stores.
template <class Integer>
std::string inexact_text(Integer value, const value_bounds& bounds) {
    const bool negative = value < 0;
    const std::uint64_t magnitude =
        negative ? std::uint64_t{0} - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
    const double rounded = round_to_digits(magnitude, bounds.digits);
    return std::to_string(value) + " (not held exactly: it would become " + number_text(negative ? -rounded : rounded) +
           ")";
}

}  // namespace detail
}  // namespace npybridge
