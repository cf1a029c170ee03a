// npybridge/bind/detail/nanobind_casting.hpp — what both nanobind casters do: load (its error kept), cast back.
#pragma once

#include <npybridge/arg.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <nanobind/nanobind.h>

#include <exception>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace nanobind_support {
namespace detail {

template <const npybridge::detail::arg_text& Text, std::size_t... I>
constexpr auto signature_text(std::index_sequence<I...>) {
    return nanobind::detail::descr<sizeof...(I)>(Text.chars[I]...);
}

/// An argument's value, or the npybridge error its conversion ended with (thrown when asked).
template <class Arg>
struct loaded_arg {
    std::optional<Arg> value;
    std::exception_ptr error;

    bool load(nanobind::handle src, std::uint32_t flags) noexcept {
        value.reset();
        error = nullptr;
        if (!src) return false;
        PyObject* obj = src.ptr();
        if (!Arg::may_convert(obj)) return false;  // another overload's, or nobody's
        if (!(flags & static_cast<std::uint32_t>(nanobind::detail::cast_flags::convert))) {
            return borrow_as_is<Arg>(obj, value);
        }
        try {
            value.emplace(to_arg<Arg>(obj));
            return true;
        } catch (...) {
            if (PyErr_Occurred()) PyErr_Clear();
            // An ndarray npybridge refuses: keep why. Anything else is not ours.
            if (!PyArray_Check(obj)) return false;
            error = std::current_exception();
            return true;
        }
    }

    Arg& get() {
        if (error) std::rethrow_exception(error);
        return *value;
    }
};

template <class Tensor>
nanobind::handle cast_tensor(const Tensor& src, nanobind::rv_policy policy) noexcept {
    try {
        const share_policy share = policy == nanobind::rv_policy::copy_v ? share_policy::copy : share_policy::try_share;
        return to_array(src, share).release();
    } catch (...) {
        translate_exception();  // from_cpp must not throw
        return nanobind::handle();
    }
}

template <class Tensor>
nanobind::handle cast_tensor(Tensor&& src, nanobind::rv_policy policy) noexcept {
    if (policy == nanobind::rv_policy::copy_v) return cast_tensor(static_cast<const Tensor&>(src), policy);
    try {
        return to_array(std::move(src)).release();  // the array takes the owner over
    } catch (...) {
        translate_exception();
        return nanobind::handle();
    }
}

}  // namespace detail
}  // namespace nanobind_support
}  // namespace npybridge
