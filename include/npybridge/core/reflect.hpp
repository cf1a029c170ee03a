// npybridge/core/reflect.hpp — the one place that spells Boost.PFR.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/scalar_types.hpp>

#include <boost/pfr/core.hpp>
#include <boost/pfr/tuple_size.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace reflect {

/// Fields of a param struct, reflected.
template <class Param>
inline constexpr std::size_t field_count = boost::pfr::tuple_size_v<Param>;

/// PFR (Boost 1.81) cannot reflect names: `field_names` lists them, and this keeps the counts equal.
template <class Param>
constexpr bool keys_match_fields() noexcept {
    static_assert(std::is_aggregate_v<Param>, "npybridge: a param struct must be a plain aggregate");
    static_assert(Param::field_names.size() == field_count<Param>,
                  "npybridge: a param struct's field_names must name every field, in order "
                  "(add the new field's metadata key to field_names)");
    return true;
}

/// A param struct's fields read into `values` as doubles, or set from them with `write`; returns the floating-point
/// fields as bits.
template <class Param>
unsigned exchange_fields(Param& param, double* values, bool write) noexcept {
    unsigned real_mask = 0;
    boost::pfr::for_each_field(param, [&](auto& field, std::size_t index) {
        using field_t = std::remove_reference_t<decltype(field)>;
        static_assert(std::is_same_v<field_t, float> || (std::is_integral_v<field_t> && sizeof(field_t) <= 4),
                      "npybridge: a param field must be a float or an integer of at most 32 bits");
        if (std::is_floating_point_v<field_t>) real_mask |= 1u << index;
        // Floats convert on bits: a subnormal scale survives flush-to-zero.
        if constexpr (std::is_floating_point_v<field_t>) {
            if (write) {
                field = narrow_to_float(values[index]);
            } else {
                values[index] = detail::widen_exactly(field);
            }
        } else if (write) {
            field = static_cast<field_t>(values[index]);
        } else {
            values[index] = static_cast<double>(field);
        }
    });
    return real_mask;
}

/// Example: a param struct's fields as doubles.
/// ```cpp
/// #include <npybridge/core/dtype.hpp>
/// #include <npybridge/core/reflect.hpp>
///
/// double zero_point_of(npybridge::asymm_param param) {
///     double values[npybridge::reflect::field_count<npybridge::asymm_param>];  // scale, zero_point
///     npybridge::reflect::exchange_fields(param, values, false);
///     return values[1];
/// }
/// ```

}  // namespace reflect
}  // namespace npybridge
