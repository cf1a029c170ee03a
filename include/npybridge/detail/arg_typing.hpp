// npybridge/detail/arg_typing.hpp — an arg's spec, its stub text per binding, removed spellings' errors.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

template <class... Use>
struct borrow_only_removed {
    static_assert(always_false<Use...>,
                  "npybridge: borrow_only was removed in 0.6.0: write policy_is<borrow_policy::must_borrow>");
};
template <class... Use>
struct copy_always_removed {
    static_assert(always_false<Use...>,
                  "npybridge: copy_always was removed in 0.6.0: write policy_is<borrow_policy::copy>");
};
template <class... Use>
struct writable_only_removed {
    static_assert(always_false<Use...>, "npybridge: writable_only was removed in 0.6.0: write writable_is<true>");
};
template <class... Use>
struct python_name_removed {
    static_assert(
        always_false<Use...>,
        "npybridge: arg::python_name was removed in 0.6.0: write arg::pybind11_typing or arg::nanobind_typing");
};

template <class... Constraints>
constexpr arg_spec make_arg_spec() noexcept {
    arg_spec s;
    (Constraints::apply(s), ...);
    return s;
}

template <class C, class = void>
struct is_constraint : std::false_type {};
template <class C>
struct is_constraint<C, std::void_t<decltype(C::apply(std::declval<arg_spec&>()))>> : std::true_type {};

/// A signature text as a constant character array.
struct arg_text {
    std::array<char, 160> chars{};
    std::size_t size = 0;
    constexpr void add(std::string_view text) noexcept {
        for (char c : text) chars[size++] = c;
    }
    constexpr void add_number(std::size_t n) noexcept {
        char digits[20] = {};
        std::size_t count = 0;
        do {
            digits[count++] = static_cast<char>('0' + n % 10);
            n /= 10;
        } while (n != 0);
        while (count > 0) chars[size++] = digits[--count];
    }
};

/// The NumPy scalar type of a dtype's arrays in typing's spelling (quantized: the storage's); `numpy.generic` for user
/// dtypes and dtypes without a NumPy form.
constexpr void add_scalar_type(arg_text& t, dtype_enum id) noexcept {
    const dtype_info& entry = info(id);
    if (entry.form != numpy_form::builtin || entry.numpy_name().empty()) {
        t.add("numpy.generic");
        return;
    }
    t.add("numpy.");
    t.add(entry.numpy_name());
    if (entry.numpy_name() == "bool") t.add("_");
}

/// How each binding's stub generator reads an argument: pybind11 `typing.Annotated[numpy.typing.NDArray[numpy.int8],
/// "QuantizedS8", "ndim=2"]`, nanobind the same with `dict(dtype='QuantizedS8', ndim=2)`.
enum class typing_style { pybind11, nanobind };

constexpr arg_text render_typed_name(const arg_spec& s, typing_style style) noexcept {
    arg_text t;
    const bool any = s.has_dtype || s.has_ndim || s.writable;
    if (any) t.add("typing.Annotated[");
    t.add("numpy.typing.NDArray[");
    if (s.has_dtype) {
        add_scalar_type(t, s.id);
    } else {
        t.add("typing.Any");
    }
    t.add("]");
    if (!any) return t;
    if (style == typing_style::pybind11) {
        if (s.has_dtype) {
            t.add(", \"");
            t.add(info(s.id).name);
            t.add("\"");
        }
        if (s.has_ndim) {
            t.add(", \"ndim=");
            t.add_number(s.ndim);
            t.add("\"");
        }
        if (s.writable) t.add(", \"flags.writeable\"");
    } else {
        t.add(", dict(");
        bool first = true;
        auto separator = [&] {
            if (!first) t.add(", ");
            first = false;
        };
        if (s.has_dtype) {
            separator();
            t.add("dtype='");
            t.add(info(s.id).name);
            t.add("'");
        }
        if (s.has_ndim) {
            separator();
            t.add("ndim=");
            t.add_number(s.ndim);
        }
        if (s.writable) {
            separator();
            t.add("writable=True");
        }
        t.add(")");
    }
    t.add("]");
    return t;
}

}  // namespace detail
}  // namespace npybridge
