// npybridge/arg.hpp — tensor arguments with compile-time dtype, ndim, policies and layout.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/tensor.hpp>
#include <npybridge/numpy_dtype.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

// ---- Constraints: empty tags, each setting one field of an arg_spec.

/// What a constrained argument asks for, from its constraints.
struct arg_spec {
    bool has_dtype = false;
    dtype_enum id = dtype_enum::Float32;
    bool has_ndim = false;
    std::size_t ndim = 0;
    borrow_policy policy = borrow_policy::try_borrow;
    narrowing narrow = narrowing::checked;
    bool has_layout = false;
    lowbit_layout layout = lowbit_layout::compact;
    bool writable = false;
    // Constraints per field (two of a kind: a compile error).
    int dtypes = 0, ndims = 0, policies = 0, narrowings = 0, layouts = 0, writables = 0;
};

/// The tensor's dtype is Id (quantized: params from the array's metadata).
template <dtype_enum Id>
struct dtype_is {
    static constexpr void apply(arg_spec& s) noexcept {
        s.has_dtype = true;
        s.id = Id;
        ++s.dtypes;
    }
};
/// The array has exactly N dimensions.
template <std::size_t N>
struct ndim_is {
    static constexpr void apply(arg_spec& s) noexcept {
        s.has_ndim = true;
        s.ndim = N;
        ++s.ndims;
    }
};
/// How the tensor gets the array's memory (borrow_policy; try_borrow by default).
template <borrow_policy Policy>
struct policy_is {
    static constexpr void apply(arg_spec& s) noexcept {
        s.policy = Policy;
        ++s.policies;
    }
};
/// A narrowing mode other than 'checked'.
template <narrowing Mode>
struct narrowing_is {
    static constexpr void apply(arg_spec& s) noexcept {
        s.narrow = Mode;
        ++s.narrowings;
    }
};
/// writable_is<true>: a writable tensor (a read-only array is copied, or refused under must_borrow); false, the
/// default, allows read-only memory.
template <bool Writable>
struct writable_is {
    static constexpr void apply(arg_spec& s) noexcept {
        s.writable = Writable;
        ++s.writables;
    }
};
/// Packed dtypes: the bit layout.
template <lowbit_layout Layout>
struct layout_is {
    static constexpr void apply(arg_spec& s) noexcept {
        s.has_layout = true;
        s.layout = Layout;
        ++s.layouts;
    }
};

}  // namespace npybridge

#include <npybridge/detail/arg_typing.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Removed (a compile error): use policy_is<borrow_policy::must_borrow>.
using borrow_only = detail::borrow_only_removed<>;
/// Removed (a compile error): use policy_is<borrow_policy::copy>.
using copy_always = detail::copy_always_removed<>;
/// Removed (a compile error): use writable_is<true>.
using writable_only = detail::writable_only_removed<>;

/// A tensor argument with compile-time constraints: `arg<tensor, dtype_is<dtype_enum::QuantizedS8>, ndim_is<2>>`. An
/// impossible combination is a compile error saying why.
template <class Tensor, class... Constraints>
class arg {
    static_assert(check_adapter<Tensor>());
    static_assert((detail::is_constraint<Constraints>::value && ...),
                  "npybridge: arg<Tensor, ...> takes constraints only: dtype_is<>, ndim_is<>, policy_is<>, "
                  "narrowing_is<>, writable_is<>, layout_is<>");

public:
    using tensor_type = Tensor;
    using adapter = tensor_adapter<Tensor>;
    static constexpr arg_spec spec = detail::make_arg_spec<Constraints...>();

    static_assert(spec.dtypes <= 1, "npybridge: two dtype_is<> constraints on one argument");
    static_assert(spec.ndims <= 1, "npybridge: two ndim_is<> constraints on one argument");
    static_assert(spec.policies <= 1, "npybridge: two policy_is<> constraints on one argument (choose one)");
    static_assert(spec.narrowings <= 1, "npybridge: two narrowing_is<> constraints on one argument");
    static_assert(spec.layouts <= 1, "npybridge: two layout_is<> constraints on one argument");
    static_assert(spec.writables <= 1, "npybridge: two writable_is<> constraints on one argument");
    static_assert(!spec.has_ndim || spec.ndim <= adapter::max_ndim,
                  "npybridge: ndim_is<N> is more dimensions than this tensor type holds (tensor_adapter<T>::max_ndim)");
    static_assert(
        !spec.has_ndim || spec.ndim > 0 || adapter::has_scalar,
        "npybridge: ndim_is<0> for a tensor type that cannot be 0-d (tensor_adapter<T>::has_scalar is false)");
    static_assert(!(spec.has_dtype && info(spec.id).form == numpy_form::none),
                  "npybridge: this dtype has no NumPy form (Byte, UintB4): no array can become it");
    static_assert(!(spec.has_dtype && info(spec.id).is_packed && spec.policy == borrow_policy::must_borrow),
                  "npybridge: policy_is<must_borrow> with a packed dtype can never succeed: NumPy holds one byte per "
                  "value and the tensor packs them (drop the policy, or use an unpacked dtype)");
    static_assert(!spec.has_layout || (spec.has_dtype && info(spec.id).is_packed),
                  "npybridge: layout_is<> needs a packed dtype_is<> (IntB1/2/4, QuantizedS4, Quantized4Asymm)");
    static_assert(!(spec.narrow != narrowing::checked && spec.policy == borrow_policy::must_borrow),
                  "npybridge: narrowing_is<> with policy_is<must_borrow> has no effect: a borrow never narrows (drop "
                  "one)");

    /// The constraints as typing, in each binding library's idiom.
    static constexpr detail::arg_text pybind11_typing = detail::render_typed_name(spec, detail::typing_style::pybind11);
    static constexpr detail::arg_text nanobind_typing = detail::render_typed_name(spec, detail::typing_style::nanobind);
    /// Removed (a compile error): use pybind11_typing and nanobind_typing.
    static const detail::python_name_removed<Tensor>& python_name;

    /// The options to_tensor runs with (a quantized dtype_is<> is checked afterwards).
    static to_tensor_options options();
    /// Throws the conversion_error for a wrong ndim (the array's `ndim`).
    static void check_ndim(std::size_t ndim);
    /// Throws the dtype_error for another dtype than dtype_is<> asks for.
    static void check_dtype(const dtype& got);
    /// A quantized dtype_is<> takes only arrays of that dtype; anything else is refused naming the caller's input.
    static void check_source(PyObject* obj);
    /// Whether obj could become this argument at all. Casters decline what cannot, so another overload gets its turn;
    /// what could but fails is npybridge's error.
    static bool may_convert(PyObject* obj) noexcept;

private:
    static bool source_is_quantized(PyArray_Descr* descr) noexcept;
    static bool source_is_quantized_as_wanted(PyArray_Descr* descr) noexcept;

public:
    arg() = default;
    explicit arg(to_tensor_result<Tensor>&& made)
        : m_tensor(std::move(made.tensor)), m_borrowed(made.borrowed), m_copy_reason(std::move(made.copy_reason)) {}

    Tensor& operator*() noexcept { return m_tensor; }
    const Tensor& operator*() const noexcept { return m_tensor; }
    Tensor* operator->() noexcept { return &m_tensor; }
    const Tensor* operator->() const noexcept { return &m_tensor; }
    Tensor& get() noexcept { return m_tensor; }
    const Tensor& get() const noexcept { return m_tensor; }
    /// True when the tensor uses the array's memory.
    bool borrowed() const noexcept { return m_borrowed; }
    /// Why not (empty when borrowed).
    const std::string& copy_reason() const noexcept { return m_copy_reason; }

private:
    Tensor m_tensor{};
    bool m_borrowed = false;
    std::string m_copy_reason;
};

/// Whether T is an arg<...>.
template <class T>
struct is_arg : std::false_type {};
template <class Tensor, class... Constraints>
struct is_arg<arg<Tensor, Constraints...>> : std::true_type {};

/// Converts obj for Arg: to_tensor with its options, then its checks.
template <class Arg>
Arg to_arg(PyObject* obj);

/// A binding's first overload pass for Arg: an ndarray borrowed as it is, made in `out`; else false, no Python error
/// pending.
template <class Arg>
bool borrow_as_is(PyObject* obj, std::optional<Arg>& out) noexcept;

/// A binding's npybridge::dtype argument from obj (first pass: numpy.dtype objects; second: anything numpy.dtype()
/// takes, or a name such as "IntB4"); nullopt when not for it, npybridge's error for a refused numpy.dtype.
inline std::optional<dtype> dtype_argument(PyObject* obj, bool convert);

/// Example: a 2-D float32 argument, converted as a binding's caster converts it.
/// ```cpp
/// #include <npybridge/arg.hpp>
///
/// using matrix = npybridge::arg<npybridge::tensor, npybridge::dtype_is<npybridge::dtype_enum::Float32>,
///                               npybridge::ndim_is<2>>;
///
/// std::size_t rows_of(PyObject* array) {
///     matrix m = npybridge::to_arg<matrix>(array);  // errors name the array's dtype or ndim
///     return m->layout().shape[0];
/// }
/// ```
// ---- Definitions

template <class Tensor, class... Constraints>
to_tensor_options arg<Tensor, Constraints...>::options() {
    to_tensor_options o;
    o.policy = spec.policy;
    o.narrow = spec.narrow;
    if (spec.has_layout) o.layout = spec.layout;
    if (spec.writable) o.require_writable = true;
    if (spec.has_dtype && !info(spec.id).is_quantized) o.type = dtype(spec.id);
    return o;
}

template <class Tensor, class... Constraints>
void arg<Tensor, Constraints...>::check_ndim(std::size_t ndim) {
    if (spec.has_ndim && ndim != spec.ndim) {
        throw conversion_error("expected an array with ndim=" + std::to_string(spec.ndim) +
                               ", got ndim=" + std::to_string(ndim));
    }
}

template <class Tensor, class... Constraints>
void arg<Tensor, Constraints...>::check_dtype(const dtype& got) {
    if (spec.has_dtype && got.id() != spec.id) {
        throw dtype_error("expected a " + std::string(info(spec.id).name) + " array, got " + got.to_string());
    }
}

template <class Tensor, class... Constraints>
void arg<Tensor, Constraints...>::check_source(PyObject* obj) {
    if (!spec.has_dtype || !info(spec.id).is_quantized) return;
    const auto* descr = PyArray_Check(obj) ? PyArray_DESCR(reinterpret_cast<PyArrayObject*>(obj)) : nullptr;
    if (descr != nullptr && source_is_quantized_as_wanted(const_cast<PyArray_Descr*>(descr))) return;
    std::string got =
        descr != nullptr ? detail::descr_text(const_cast<PyArray_Descr*>(descr)) : std::string(Py_TYPE(obj)->tp_name);
    if (descr != nullptr && detail::descr_metadata(const_cast<PyArray_Descr*>(descr)) != nullptr) {
        try {  // another quantized dtype: name it with its params
            got = from_numpy_dtype(const_cast<PyArray_Descr*>(descr), narrowing::reject).type.to_string();
        } catch (const error&) {
            if (PyErr_Occurred()) PyErr_Clear();
        }
    }
    throw dtype_error("expected a " + std::string(info(spec.id).name) + " array (" +
                      std::string(info(spec.id).numpy_name()) + " with mgb_dtype metadata), got " + got);
}

template <class Tensor, class... Constraints>
bool arg<Tensor, Constraints...>::may_convert(PyObject* obj) noexcept {
    if (!PyArray_Check(obj)) return !(spec.has_dtype && info(spec.id).is_quantized);  // lists carry no params
    auto* array = reinterpret_cast<PyArrayObject*>(obj);
    if (spec.has_ndim && static_cast<std::size_t>(PyArray_NDIM(array)) != spec.ndim) return false;
    if (!spec.has_dtype) return true;
    if (info(spec.id).is_quantized) return source_is_quantized_as_wanted(PyArray_DESCR(array));
    // Quantized codes never become another dtype: declined, so an overload of their dtype gets its turn.
    if (detail::descr_metadata(PyArray_DESCR(array)) != nullptr && source_is_quantized(PyArray_DESCR(array))) {
        return false;
    }
    const char kind = detail::descr_kind(PyArray_DESCR(array));
    return kind == 'b' || kind == 'i' || kind == 'u' || kind == 'f' || kind == 'c' || kind == 'V';
}

template <class Tensor, class... Constraints>
bool arg<Tensor, Constraints...>::source_is_quantized(PyArray_Descr* descr) noexcept {
    try {
        return from_numpy_dtype(descr, narrowing::reject).type.is_quantized();
    } catch (...) {
        if (PyErr_Occurred()) PyErr_Clear();
        return false;
    }
}

template <class Tensor, class... Constraints>
bool arg<Tensor, Constraints...>::source_is_quantized_as_wanted(PyArray_Descr* descr) noexcept {
    try {
        return from_numpy_dtype(descr, narrowing::reject).type.id() == spec.id;
    } catch (...) {
        if (PyErr_Occurred()) PyErr_Clear();
        return false;
    }
}

template <class Arg>
Arg to_arg(PyObject* obj) {
    static_assert(is_arg<Arg>::value, "npybridge: to_arg<A> needs an npybridge::arg<Tensor, ...>");
    if (Arg::spec.has_ndim && PyArray_Check(obj)) {
        Arg::check_ndim(static_cast<std::size_t>(PyArray_NDIM(reinterpret_cast<PyArrayObject*>(obj))));
    }
    Arg::check_source(obj);
    Arg made(to_tensor<typename Arg::tensor_type>(obj, Arg::options()));
    using adapter = typename Arg::adapter;
    Arg::check_dtype(adapter::dtype_of(*made));
    // (ndim_is<0> needs a tensor type that can be 0-d.)
    if (Arg::spec.has_ndim) Arg::check_ndim(adapter::layout_of(*made).ndim);
    return made;
}

template <class Arg>
bool borrow_as_is(PyObject* obj, std::optional<Arg>& out) noexcept {
    static_assert(is_arg<Arg>::value, "npybridge: borrow_as_is<A> needs an npybridge::arg<Tensor, ...>");
    out.reset();
    if (!PyArray_Check(obj) || Arg::spec.policy == borrow_policy::copy) return false;
    try {
        to_tensor_options options = Arg::options();
        options.policy = borrow_policy::must_borrow;
        if (Arg::spec.has_ndim)
            Arg::check_ndim(static_cast<std::size_t>(PyArray_NDIM(reinterpret_cast<PyArrayObject*>(obj))));
        out.emplace(to_tensor<typename Arg::tensor_type>(obj, options));
        Arg::check_dtype(Arg::adapter::dtype_of(**out));
        return true;
    } catch (...) {
        out.reset();
        if (PyErr_Occurred()) PyErr_Clear();
        return false;
    }
}

inline std::optional<dtype> dtype_argument(PyObject* obj, bool convert) {
    if (obj == nullptr) return std::nullopt;
    const bool is_descr = PyArray_DescrCheck(obj);
    if (!is_descr && !convert) return std::nullopt;
    if (!is_descr && PyUnicode_Check(obj)) {
        Py_ssize_t size = 0;
        const char* text = PyUnicode_AsUTF8AndSize(obj, &size);
        if (text == nullptr) {
            PyErr_Clear();
            return std::nullopt;
        }
        const dtype_info* found = find_dtype(std::string_view(text, static_cast<std::size_t>(size)));
        if (found != nullptr && found->param_fields == 0) return dtype(found->id);
    }
    try {
        return from_numpy_dtype(obj, narrowing::reject).type;
    } catch (const error&) {
        if (is_descr) throw;
        if (PyErr_Occurred()) PyErr_Clear();
        return std::nullopt;
    }
}

}  // namespace npybridge
