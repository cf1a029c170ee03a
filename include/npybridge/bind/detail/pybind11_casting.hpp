// npybridge/bind/detail/pybind11_casting.hpp — what both pybind11 casters do: load (a borrow first), cast back.
#pragma once

#include <npybridge/arg.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <pybind11/pybind11.h>

#include <exception>
#include <memory>
#include <optional>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace pybind11_support {
namespace detail {

/// pybind11's signature text from an arg_text.
template <const npybridge::detail::arg_text& Text, std::size_t... I>
constexpr auto signature_text(std::index_sequence<I...>) {
    return pybind11::detail::descr<sizeof...(I)>(Text.chars[I]...);
}

/// The conversion both casters make: what cannot become the argument is a silent `false` on every pass (another
/// overload's turn); the first pass takes only borrows; on the second, a failing ndarray raises npybridge's error.
template <class Arg>
bool load_arg(pybind11::handle src, bool convert, std::optional<Arg>& out) {
    if (!src) return false;
    PyObject* obj = src.ptr();
    if (!Arg::may_convert(obj)) return false;
    const bool is_array = PyArray_Check(obj);
    if (!convert) {
        return borrow_as_is<Arg>(obj, out);
    }
    if (is_array) {
        out.emplace(to_arg<Arg>(obj));  // to the translator
        return true;
    }
    try {
        out.emplace(to_arg<Arg>(obj));
        return true;
    } catch (const npybridge::error&) {
        if (PyErr_Occurred()) PyErr_Clear();
        return false;
    }
}

/// tensor -> ndarray: policy `copy` copies; every other shares memory (the array's base holds the tensor's owner).
template <class Tensor>
pybind11::handle cast_tensor(const Tensor& src, pybind11::return_value_policy policy) {
    const share_policy share =
        policy == pybind11::return_value_policy::copy ? share_policy::copy : share_policy::try_share;
    return to_array(src, share).release();
}

}  // namespace detail
}  // namespace pybind11_support
}  // namespace npybridge
