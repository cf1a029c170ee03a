// npybridge/core/detail/params.hpp — a param struct's fields as numbers: checks, text, hash, equality.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
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

/// A param struct's fields as numbers with their metadata keys, reflected once per struct: every operation below is
/// plain code over them.
struct param_values {
    static constexpr std::size_t capacity = 4;
    std::size_t count = 0;
    const std::string_view* keys = nullptr;  ///< the struct's field_names
    unsigned real_mask = 0;                  ///< bit i: field i is floating point
    double value[capacity] = {};

    bool is_real(std::size_t i) const noexcept { return (real_mask >> i & 1u) != 0; }
};

/// P's fields as numbers.
template <class P>
param_values values_of(P param) noexcept {
    static_assert(reflect::keys_match_fields<P>());
    static_assert(reflect::field_count<P> <= param_values::capacity,
                  "npybridge: a param struct has at most param_values::capacity fields");
    param_values values;
    values.count = reflect::field_count<P>;
    values.keys = P::field_names.data();
    values.real_mask = reflect::exchange_fields(param, values.value, false);
    return values;
}

/// P from checked numbers.
template <class P>
P param_from_values(param_values values) noexcept {
    P param{};
    reflect::exchange_fields(param, values.value, true);
    return param;
}

/// What a field accepts, by its C++ type: a float a finite real > 0 (scale), an integer one in the dtype's range
/// (zero_point). metadata_error names dtype and key.
template <class Info>
void check_field(const Info& type, std::string_view key, bool real, double value) {
    auto fail = [&](const std::string& why) {
        throw metadata_error(std::string(type.name) + ": " + std::string(key) + " " + number_text(value) + why);
    };
    if (real) {
        if (!std::isfinite(value)) fail(" is not finite");
        // As doubles with float32's limits written out: under DAZ a float32 subnormal is 0 on the FPU, a double is not.
        if (std::fabs(value) >= 0x1.ffffffp127) fail(" does not fit a float32");  // rounds to infinity
        if (value > 0 && value <= 0x1p-150) {
            fail(" is too small for a float32 (it rounds to 0; the smallest positive one is " + number_text(0x1p-149) +
                 ")");
        }
        if (!(value > 0)) fail(" must be > 0");
    } else {
        if (value != std::floor(value)) fail(" is not an integer");
        if (value < type.range.lo || value > type.range.hi) {
            fail(" is outside [" + number_text(type.range.lo) + ", " + number_text(type.range.hi) + "]");
        }
    }
}

/// Fills `values` (the defaults) from plain numbers, each checked: scale always, zero_point exactly when the struct has
/// one.
template <class Info>
void fill_values(const Info& type, param_values& values, double scale, std::optional<long long> zero_point) {
    bool takes_zero_point = false;
    for (std::size_t i = 0; i < values.count; ++i) {
        const std::string_view key = values.keys[i];
        if (key != "scale" && key != "zero_point") continue;  // keeps its default
        if (key == "zero_point") {
            takes_zero_point = true;
            if (!zero_point) throw metadata_error(std::string(type.name) + ": zero_point is missing");
        }
        const double value = key == "scale" ? scale : static_cast<double>(*zero_point);
        check_field(type, key, values.is_real(i), value);
        values.value[i] = value;
    }
    if (zero_point && !takes_zero_point) {
        throw metadata_error(std::string(type.name) + ": zero_point is not a param of a symmetric dtype");
    }
}

/// Checks every field of a whole param struct.
template <class Info>
void check_values(const Info& type, const param_values& values) {
    for (std::size_t i = 0; i < values.count; ++i)
        check_field(type, values.keys[i], values.is_real(i), values.value[i]);
}

/// The field keyed `key`; nullopt when none.
inline maybe<double> field_value(const param_values& values, std::string_view key) noexcept {
    for (std::size_t i = 0; i < values.count; ++i) {
        if (values.keys[i] == key) return values.value[i];
    }
    return std::nullopt;
}

/// "scale=0.5, zero_point=128"; empty without fields.
inline std::string params_text(const param_values& values) {
    std::string fields;
    for (std::size_t i = 0; i < values.count; ++i) {
        if (i != 0) fields += ", ";
        fields += std::string(values.keys[i]) + "=" + number_text(values.value[i]);
    }
    return fields;
}

/// Mixes the fields into `seed` (0.0 and -0.0 alike).
inline std::size_t params_hash(std::size_t seed, const param_values& values) noexcept {
    for (std::size_t i = 0; i < values.count; ++i) {
        const double value = values.value[i] == 0 ? 0.0 : values.value[i];
        std::uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof bits);
        seed ^= static_cast<std::size_t>(bits) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    }
    return seed;
}

/// Equal when every field is (floats exactly).
inline bool values_equal(const param_values& a, const param_values& b) noexcept {
    if (a.count != b.count) return false;
    for (std::size_t i = 0; i < a.count; ++i) {
        if (!(a.value[i] == b.value[i])) return false;
    }
    return true;
}

}  // namespace detail
}  // namespace npybridge
