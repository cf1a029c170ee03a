// npybridge/bind/nanobind.hpp — nanobind casters for tensors, constrained tensor arguments and dtypes.
#pragma once

#include <npybridge/bind/detail/nanobind_casting.hpp>
#include <npybridge/arg.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/python_errors.hpp>

#include <nanobind/nanobind.h>

#include <exception>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace nanobind_support {

/// Module set-up, first in NB_MODULE: NumPy's C API, npybridge's exception classes on `m`, and a translator raising
/// them.
inline void init(nanobind::module_& m);

/// The caster of tensor type Tensor. From C++: `copy` copies, every other policy shares memory (the array's base holds
/// the owner); a tensor returned by value hands its owner over.
template <class Tensor>
class tensor_caster {
    detail::loaded_arg<arg<Tensor>> m_loaded;

public:
    using Value = Tensor;
    static constexpr auto Name =
        nanobind::detail::io_name("numpy.typing.ArrayLike", "numpy.typing.NDArray[typing.Any]");
    template <class T>
    using Cast = nanobind::detail::movable_cast_t<T>;
    template <class T>
    static constexpr bool can_cast() {
        return true;
    }

    bool from_python(nanobind::handle src, std::uint32_t flags, nanobind::detail::cleanup_list*) noexcept {
        return m_loaded.load(src, flags);
    }
    static nanobind::handle from_cpp(const Tensor& src, nanobind::rv_policy policy,
                                     nanobind::detail::cleanup_list*) noexcept {
        if (policy == nanobind::rv_policy::move_v) return detail::cast_tensor(Tensor(src), policy);
        return detail::cast_tensor(src, policy);
    }
    static nanobind::handle from_cpp(Tensor&& src, nanobind::rv_policy policy,
                                     nanobind::detail::cleanup_list*) noexcept {
        return detail::cast_tensor(std::move(src), policy);
    }
    static nanobind::handle from_cpp(const Tensor* src, nanobind::rv_policy policy,
                                     nanobind::detail::cleanup_list* list) noexcept {
        if (src == nullptr) return nanobind::none().release();
        if (policy == nanobind::rv_policy::take_ownership_v) {
            std::unique_ptr<Tensor> owned(const_cast<Tensor*>(src));
            return detail::cast_tensor(std::move(*owned), policy);
        }
        return from_cpp(*src, policy, list);
    }

    explicit operator Tensor*() { return &m_loaded.get().get(); }
    explicit operator Tensor&() { return m_loaded.get().get(); }
    explicit operator Tensor&&() { return std::move(m_loaded.get().get()); }
};

/// The caster of npybridge::arg<Tensor, Constraints...>.
template <class Arg>
class arg_caster {
    detail::loaded_arg<Arg> m_loaded;

public:
    using Value = Arg;
    static constexpr auto Name =
        detail::signature_text<Arg::nanobind_typing>(std::make_index_sequence<Arg::nanobind_typing.size>());
    template <class T>
    using Cast = nanobind::detail::movable_cast_t<T>;
    template <class T>
    static constexpr bool can_cast() {
        return true;
    }

    bool from_python(nanobind::handle src, std::uint32_t flags, nanobind::detail::cleanup_list*) noexcept {
        return m_loaded.load(src, flags);
    }
    static nanobind::handle from_cpp(const Arg& src, nanobind::rv_policy policy,
                                     nanobind::detail::cleanup_list*) noexcept {
        return detail::cast_tensor(*src, policy);
    }

    explicit operator Arg*() { return &m_loaded.get(); }
    explicit operator Arg&() { return m_loaded.get(); }
    explicit operator Arg&&() { return std::move(m_loaded.get()); }
};

}  // namespace nanobind_support
}  // namespace npybridge

/// Makes nanobind convert Tensor (a type with a tensor_adapter) to and from numpy arrays: once per type, at global
/// scope. npybridge::tensor and every npybridge::arg<Tensor, ...> of a type with a caster need none.
#define NPYBRIDGE_NANOBIND_TENSOR_CASTER(...)                                                             \
    namespace nanobind::detail {                                                                          \
    template <>                                                                                           \
    class type_caster<__VA_ARGS__> : public ::npybridge::nanobind_support::tensor_caster<__VA_ARGS__> {}; \
    }

NPYBRIDGE_NANOBIND_TENSOR_CASTER(npybridge::tensor)

namespace nanobind::detail {

template <class Tensor, class... Constraints>
class type_caster<::npybridge::arg<Tensor, Constraints...>>
    : public ::npybridge::nanobind_support::arg_caster<::npybridge::arg<Tensor, Constraints...>> {};

/// npybridge::dtype <-> numpy.dtype, as the pybind11 caster: a numpy.dtype npybridge refuses raises its DTypeError.
template <>
class type_caster<::npybridge::dtype> {
    std::optional<::npybridge::dtype> m_value;
    std::exception_ptr m_error;

public:
    using Value = ::npybridge::dtype;
    static constexpr auto Name = io_name("numpy.typing.DTypeLike", "numpy.dtype[typing.Any]");
    template <class T>
    using Cast = movable_cast_t<T>;
    template <class T>
    static constexpr bool can_cast() {
        return true;
    }

    bool from_python(handle src, std::uint32_t flags, cleanup_list*) noexcept {
        m_value.reset();
        m_error = nullptr;
        try {
            m_value = ::npybridge::dtype_argument(src.ptr(), flags & static_cast<std::uint32_t>(cast_flags::convert));
            return m_value.has_value();
        } catch (...) {
            if (PyErr_Occurred()) PyErr_Clear();
            m_error = std::current_exception();  // raised by the call
            return true;
        }
    }

    static handle from_cpp(const ::npybridge::dtype& src, rv_policy, cleanup_list*) noexcept {
        try {
            return ::npybridge::to_numpy_dtype(src).release();
        } catch (...) {
            ::npybridge::translate_exception();
            return handle();
        }
    }
    static handle from_cpp(const ::npybridge::dtype* src, rv_policy policy, cleanup_list* list) noexcept {
        if (src == nullptr) return none().release();
        return from_cpp(*src, policy, list);
    }

    explicit operator ::npybridge::dtype*() { return &get(); }
    explicit operator ::npybridge::dtype&() { return get(); }
    explicit operator ::npybridge::dtype&&() { return std::move(get()); }

private:
    ::npybridge::dtype& get() {
        if (m_error) std::rethrow_exception(m_error);
        return *m_value;
    }
};

}  // namespace nanobind::detail

/// Example: a module whose function takes any array as npybridge's tensor.
/// ```cpp
/// #include <npybridge/bind/nanobind.hpp>
///
/// NB_MODULE(example, m) {
///     npybridge::nanobind_support::init(m);
///     m.def("ndim", [](const npybridge::tensor& t) { return t.ndim(); });
/// }
/// ```

// ---- Definitions

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace nanobind_support {

inline void init(nanobind::module_& m) {
    if (!import_numpy() || !make_exception_classes(m.ptr())) throw nanobind::python_error();
    nanobind::register_exception_translator(
        [](const std::exception_ptr& thrown, void*) { translate_exception(thrown); });
}

}  // namespace nanobind_support
}  // namespace npybridge
