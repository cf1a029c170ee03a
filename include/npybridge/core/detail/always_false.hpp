// npybridge/core/detail/always_false.hpp — a condition false for every type: the compile errors of removed names.
#pragma once

#include <npybridge/core/config.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// False for every type: fires only where its template is used.
template <class...>
inline constexpr bool always_false = false;

template <class... Use>
struct value_error_removed {
    static_assert(always_false<Use...>, "npybridge: value_error was removed in 0.6.0: write value_range_error");
};

}  // namespace detail
}  // namespace npybridge
