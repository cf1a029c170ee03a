// npybridge/bind/pybind11.hpp — pybind11 casters for tensors, constrained tensor arguments and dtypes.
#pragma once

#include <npybridge/bind/detail/pybind11_casting.hpp>
#include <npybridge/arg.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/python_errors.hpp>

#include <pybind11/pybind11.h>

#include <exception>
#include <memory>
#include <optional>
#include <utility>

// pybind11 3 tells what a caster takes from what it gives (io_name).
#if PYBIND11_VERSION_MAJOR >= 3
#define NPYBRIDGE_PYBIND11_IO_NAME(input, output) ::pybind11::detail::io_name(input, output)
#else
#define NPYBRIDGE_PYBIND11_IO_NAME(input, output) ::pybind11::detail::const_name(output)
#endif

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace pybind11_support {

/// Module set-up, first in PYBIND11_MODULE: NumPy's C API, npybridge's exception classes on `m`, and a module-local
/// translator raising them with npybridge's messages.
inline void init(pybind11::module_& m);

/// The caster of tensor type Tensor.
template <class Tensor>
class tensor_caster {
    using plain = arg<Tensor>;
    std::optional<plain> m_value;

public:
    static constexpr auto name =
        NPYBRIDGE_PYBIND11_IO_NAME("numpy.typing.ArrayLike", "numpy.typing.NDArray[typing.Any]");

    bool load(pybind11::handle src, bool convert) { return detail::load_arg<plain>(src, convert, m_value); }

    /// Returned by value: the array takes the tensor's owner over.
    static pybind11::handle cast(Tensor&& src, pybind11::return_value_policy policy, pybind11::handle) {
        if (policy == pybind11::return_value_policy::copy) return detail::cast_tensor(src, policy);
        return to_array(std::move(src)).release();
    }
    static pybind11::handle cast(const Tensor& src, pybind11::return_value_policy policy, pybind11::handle) {
        if (policy == pybind11::return_value_policy::move) return to_array(Tensor(src)).release();
        return detail::cast_tensor(src, policy);
    }
    static pybind11::handle cast(const Tensor* src, pybind11::return_value_policy policy, pybind11::handle parent) {
        if (src == nullptr) return pybind11::none().release();
        if (policy == pybind11::return_value_policy::take_ownership) {  // the tensor is ours to delete
            std::unique_ptr<Tensor> owned(const_cast<Tensor*>(src));
            return cast(std::move(*owned), policy, parent);
        }
        return cast(*src, policy, parent);
    }

    operator Tensor*() { return &m_value->get(); }
    operator Tensor&() { return m_value->get(); }
    operator Tensor&&() && { return std::move(m_value->get()); }
    template <class T>
    using cast_op_type = pybind11::detail::movable_cast_op_type<T>;
};

/// The caster of npybridge::arg<Tensor, Constraints...>.
template <class Arg>
class arg_caster {
    std::optional<Arg> m_value;

public:
    static constexpr auto name =
        detail::signature_text<Arg::pybind11_typing>(std::make_index_sequence<Arg::pybind11_typing.size>());

    bool load(pybind11::handle src, bool convert) { return detail::load_arg<Arg>(src, convert, m_value); }

    static pybind11::handle cast(const Arg& src, pybind11::return_value_policy policy, pybind11::handle) {
        return detail::cast_tensor(*src, policy);
    }
    static pybind11::handle cast(Arg&& src, pybind11::return_value_policy, pybind11::handle) {
        return to_array(std::move(*src)).release();
    }

    operator Arg*() { return &*m_value; }
    operator Arg&() { return *m_value; }
    operator Arg&&() && { return std::move(*m_value); }
    template <class T>
    using cast_op_type = pybind11::detail::movable_cast_op_type<T>;
};

}  // namespace pybind11_support
}  // namespace npybridge

/// Makes pybind11 convert Tensor (a type with a tensor_adapter) to and from numpy arrays: once per type, at global
/// scope. npybridge::tensor and every npybridge::arg<Tensor, ...> of a type with a caster need none.
#define NPYBRIDGE_PYBIND11_TENSOR_CASTER(...)                                                             \
    namespace pybind11::detail {                                                                          \
    template <>                                                                                           \
    class type_caster<__VA_ARGS__> : public ::npybridge::pybind11_support::tensor_caster<__VA_ARGS__> {}; \
    }

NPYBRIDGE_PYBIND11_TENSOR_CASTER(npybridge::tensor)

namespace pybind11::detail {

template <class Tensor, class... Constraints>
class type_caster<::npybridge::arg<Tensor, Constraints...>>
    : public ::npybridge::pybind11_support::arg_caster<::npybridge::arg<Tensor, Constraints...>> {};

/// npybridge::dtype <-> numpy.dtype (quantized params in metadata["mgb_dtype"]). First pass: numpy.dtype objects;
/// second: anything numpy.dtype() takes, or a name without params ("IntB4"). int64 / float64 are refused.
template <>
class type_caster<::npybridge::dtype> {
public:
    static constexpr auto name = NPYBRIDGE_PYBIND11_IO_NAME("numpy.typing.DTypeLike", "numpy.dtype[typing.Any]");

    bool load(handle src, bool convert) {
        value = ::npybridge::dtype_argument(src.ptr(), convert);  // a refused numpy.dtype raises
        return value.has_value();
    }

    static handle cast(const ::npybridge::dtype& src, return_value_policy, handle) {
        return ::npybridge::to_numpy_dtype(src).release();
    }
    static handle cast(const ::npybridge::dtype* src, return_value_policy policy, handle parent) {
        if (src == nullptr) return none().release();
        return cast(*src, policy, parent);
    }

    operator ::npybridge::dtype*() { return &*value; }
    operator ::npybridge::dtype&() { return *value; }
    operator ::npybridge::dtype&&() && { return std::move(*value); }
    template <class T>
    using cast_op_type = movable_cast_op_type<T>;

private:
    std::optional<::npybridge::dtype> value;  // no default
};

}  // namespace pybind11::detail

/// Example: a module whose function takes any array as npybridge's tensor.
/// ```cpp
/// #include <npybridge/bind/pybind11.hpp>
///
/// PYBIND11_MODULE(example, m) {
///     npybridge::pybind11_support::init(m);
///     m.def("ndim", [](const npybridge::tensor& t) { return t.ndim(); });
/// }
/// ```

// ---- Definitions

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace pybind11_support {

inline void init(pybind11::module_& m) {
    if (!import_numpy() || !make_exception_classes(m.ptr())) throw pybind11::error_already_set();
    pybind11::register_local_exception_translator([](std::exception_ptr thrown) { translate_exception(thrown); });
}

}  // namespace pybind11_support
}  // namespace npybridge

#undef NPYBRIDGE_PYBIND11_IO_NAME
