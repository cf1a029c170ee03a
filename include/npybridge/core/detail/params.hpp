// npybridge/core/detail/params.hpp — a param struct field by field (through reflect.hpp): what each field accepts (its
// C++ type decides the rule), filling and checking a struct, its text and hash. class dtype (dtype.hpp) uses these.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/reflect.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

inline std::string number_text(double value) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.9g", value);
    return buffer;
}

/// What one reflected param field accepts, decided by its C++ type: a float
/// field is a finite real > 0 (scale), an integer field an integer inside the
/// dtype's value range (zero_point). Throws metadata_error naming dtype and key.
/// (Info is dtype_info, which dtype.hpp defines after including this header.)
template <class Field, class Info>
void check_field(const Info& type, std::string_view key, double value) {
    auto fail = [&](const char* why) {
        throw metadata_error(std::string(type.name) + ": " + std::string(key) + " " + number_text(value) + why);
    };
    if constexpr (std::is_floating_point_v<Field>) {
        if (!std::isfinite(value)) fail(" is not finite");
        const auto narrowed = static_cast<Field>(value);
        if (!std::isfinite(narrowed)) fail(" does not fit a float32");
        if (value > 0 && !(narrowed > 0)) {
            fail((" is too small for a float32 (it rounds to 0; the smallest positive one is " +
                  number_text(static_cast<double>(std::numeric_limits<Field>::denorm_min())) + ")")
                     .c_str());
        }
        if (!(narrowed > 0)) fail(" must be > 0");
    } else {
        static_assert(std::is_integral_v<Field>, "npybridge: a param field must be a float or an integer");
        if (value != std::floor(value)) fail(" is not an integer");
        if (value < type.range.lo || value > type.range.hi) {
            fail((" is outside [" + number_text(type.range.lo) + ", " + number_text(type.range.hi) + "]").c_str());
        }
    }
}

/// True when param struct P has a field with metadata key `key`.
template <class P>
constexpr bool has_key(std::string_view key) noexcept {
    for (std::string_view name : P::field_names) {
        if (name == key) return true;
    }
    return false;
}

/// Fills `param` from plain numbers, each checked: scale always, zero_point
/// exactly when P has one. Throws metadata_error naming dtype and key.
template <class Info, class P>
void fill_params(const Info& type, P& param, double scale, std::optional<long long> zero_point) {
    reflect::for_each_field(param, [&](std::string_view key, auto& field) {
        using field_t = std::remove_reference_t<decltype(field)>;
        if (key != "scale" && key != "zero_point") return;  // no plain-number argument: keeps its default
        if (key == "zero_point" && !zero_point)
            throw metadata_error(std::string(type.name) + ": zero_point is missing");
        const double value = key == "scale" ? scale : static_cast<double>(*zero_point);
        check_field<field_t>(type, key, value);
        field = static_cast<field_t>(value);
    });
    if (zero_point && !has_key<P>("zero_point")) {
        throw metadata_error(std::string(type.name) + ": zero_point is not a param of a symmetric dtype");
    }
}

/// Checks every field of a param struct given whole.
template <class Info, class P>
void check_params(const Info& type, P param) {
    reflect::for_each_field(param, [&](std::string_view key, auto& field) {
        check_field<std::remove_reference_t<decltype(field)>>(type, key, static_cast<double>(field));
    });
}

/// The field of `param` whose metadata key is `key`, as T; nullopt when it has none.
template <class T, class P>
std::optional<T> field_value(P param, std::string_view key) noexcept {
    std::optional<T> found;
    reflect::for_each_field(param, [&](std::string_view name, auto& field) {
        if (name == key) found = static_cast<T>(field);
    });
    return found;
}

/// "scale=0.5, zero_point=128"; empty for a struct without fields.
template <class P>
std::string params_text(P param) {
    std::string fields;
    reflect::for_each_field(param, [&](std::string_view key, auto& field) {
        if (!fields.empty()) fields += ", ";
        fields += std::string(key) + "=" + number_text(static_cast<double>(field));
    });
    return fields;
}

/// A field's value as 64 bits for hashing: equal values give equal bits (0.0 and -0.0 alike).
template <class T>
std::uint64_t field_bits(T value) noexcept {
    if constexpr (std::is_floating_point_v<T>) {
        const double wide = value == 0 ? 0.0 : static_cast<double>(value);
        std::uint64_t bits = 0;
        std::memcpy(&bits, &wide, sizeof bits);
        return bits;
    } else {
        return static_cast<std::uint64_t>(value);
    }
}

/// Mixes every field of `param` into `seed`.
template <class P>
std::size_t params_hash(std::size_t seed, P param) noexcept {
    reflect::for_each_field(param, [&](std::string_view, auto& field) {
        seed ^= static_cast<std::size_t>(field_bits(field)) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    });
    return seed;
}

}  // namespace detail
}  // namespace npybridge
