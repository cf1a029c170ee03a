// npybridge/detail/bfloat16_math.hpp — bfloat16 as a number: ufunc loops, the scalar's arithmetic, hash and format.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/user_dtype_scalars.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>
#include <npybridge/core/scalar_types.hpp>

#include <numpy/arrayscalars.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

// Each operation computes in float and rounds once to nearest even: float's 24 bits exceed twice bfloat16's 8 plus two,
// so +, -, * and / are correctly rounded.
namespace bf16_math {

inline float f(bfloat16 x) noexcept { return x.to_float(); }
inline bfloat16 bf(float x) noexcept { return bfloat16::from_float(x); }
constexpr std::uint16_t sign_bit = 0x8000u;
inline bool is_nan(bfloat16 x) noexcept { return (x.bits & 0x7fffu) > 0x7f80u; }
inline std::uint16_t magnitude(bfloat16 x) noexcept { return static_cast<std::uint16_t>(x.bits & 0x7fffu); }
inline bfloat16 with_bits(unsigned bits) noexcept { return bfloat16{static_cast<std::uint16_t>(bits)}; }
/// `either ? x : y` without a branch.
inline bfloat16 pick(bool one, bool other, bfloat16 x, bfloat16 y) noexcept {
    const unsigned mask = 0u - (static_cast<unsigned>(one) | static_cast<unsigned>(other));
    return with_bits(y.bits ^ ((x.bits ^ y.bits) & mask));
}

/// Floored division and modulus (the remainder takes the divisor's sign).
inline std::pair<float, float> floored_divmod(float a, float b) noexcept {
    float mod = std::fmod(a, b);
    if (b == 0.0f) return {a / b, mod};  // ±inf or NaN, and NaN
    float div = (a - mod) / b;
    if (mod != 0.0f) {
        if (std::isless(b, 0.0f) != std::isless(mod, 0.0f)) {
            mod += b;
            div -= 1.0f;
        }
    } else {
        mod = std::copysign(0.0f, b);
    }
    float floor_div;
    if (div != 0.0f) {
        floor_div = std::floor(div);
        if (std::isgreater(div - floor_div, 0.5f)) floor_div += 1.0f;
    } else {
        floor_div = std::copysign(0.0f, a / b);
    }
    return {floor_div, mod};
}

/// NumPy's nextafter on bfloat16's grid.
inline bfloat16 next_after(bfloat16 from, bfloat16 to) noexcept {
    if (is_nan(from) || is_nan(to)) return bf(std::numeric_limits<float>::quiet_NaN());
    if (from.bits == to.bits) return to;
    if (magnitude(from) == 0) {  // ±0: the smallest subnormal with to's sign
        return magnitude(to) == 0 ? to : with_bits((to.bits & sign_bit) | 1u);
    }
    const bool away_from_zero = magnitude(from) < magnitude(to) && (from.bits & sign_bit) == (to.bits & sign_bit);
    return with_bits(away_from_zero ? from.bits + 1u : from.bits - 1u);
}

// A struct per ufunc: apply() takes and returns its element types.
#define NPYBRIDGE_BF16_UNARY(name, expression) \
    struct name {                              \
        static bfloat16 apply(bfloat16 x) {    \
            const float v = f(x);              \
            (void)v;                           \
            return expression;                 \
        }                                      \
    }
#define NPYBRIDGE_BF16_BINARY(name, expression)         \
    struct name {                                       \
        static bfloat16 apply(bfloat16 x, bfloat16 y) { \
            const float a = f(x), b = f(y);             \
            (void)a;                                    \
            (void)b;                                    \
            return expression;                          \
        }                                               \
    }
NPYBRIDGE_BF16_BINARY(add, bf(a + b));
NPYBRIDGE_BF16_BINARY(subtract, bf(a - b));
NPYBRIDGE_BF16_BINARY(multiply, bf(a* b));
NPYBRIDGE_BF16_BINARY(divide, bf(a / b));
NPYBRIDGE_BF16_BINARY(floor_divide, bf(floored_divmod(a, b).first));
NPYBRIDGE_BF16_BINARY(remainder, bf(floored_divmod(a, b).second));
NPYBRIDGE_BF16_BINARY(fmod, bf(std::fmod(a, b)));
NPYBRIDGE_BF16_BINARY(power, bf(std::pow(a, b)));
NPYBRIDGE_BF16_BINARY(arctan2, bf(std::atan2(a, b)));
NPYBRIDGE_BF16_BINARY(hypot, bf(std::hypot(a, b)));
NPYBRIDGE_BF16_BINARY(copysign, with_bits(magnitude(x) | (y.bits & sign_bit)));
NPYBRIDGE_BF16_BINARY(nextafter, next_after(x, y));
// NaN wins in maximum / minimum, loses in fmax / fmin; quiet comparisons raise no "invalid" flag; a mask, not a branch
// (unsorted data mispredicts).
NPYBRIDGE_BF16_BINARY(maximum, pick(is_nan(x), std::isgreater(a, b), x, y));
NPYBRIDGE_BF16_BINARY(minimum, pick(is_nan(x), std::isless(a, b), x, y));
NPYBRIDGE_BF16_BINARY(fmax, pick(is_nan(y), std::isgreater(a, b), x, y));
NPYBRIDGE_BF16_BINARY(fmin, pick(is_nan(y), std::isless(a, b), x, y));
NPYBRIDGE_BF16_BINARY(heaviside, is_nan(x) ? x : magnitude(x) == 0 ? y : bf((x.bits & sign_bit) ? 0.0f : 1.0f));
NPYBRIDGE_BF16_BINARY(logaddexp, a == b                 ? bf(a + std::log(2.0f))  // equal infinities stay infinite
                                 : std::isgreater(a, b) ? bf(a + std::log1p(std::exp(b - a)))
                                 : std::isless(a, b)    ? bf(b + std::log1p(std::exp(a - b)))
                                                        : bf(std::numeric_limits<float>::quiet_NaN()));
NPYBRIDGE_BF16_BINARY(logaddexp2, a == b                 ? bf(a + 1.0f)
                                  : std::isgreater(a, b) ? bf(a + std::log1p(std::exp2(b - a)) / std::log(2.0f))
                                  : std::isless(a, b)    ? bf(b + std::log1p(std::exp2(a - b)) / std::log(2.0f))
                                                         : bf(std::numeric_limits<float>::quiet_NaN()));

NPYBRIDGE_BF16_UNARY(negative, with_bits(x.bits ^ sign_bit));
NPYBRIDGE_BF16_UNARY(positive, x);
NPYBRIDGE_BF16_UNARY(absolute, with_bits(magnitude(x)));
NPYBRIDGE_BF16_UNARY(sign, is_nan(x) || magnitude(x) == 0 ? x : bf((x.bits & sign_bit) ? -1.0f : 1.0f));
NPYBRIDGE_BF16_UNARY(spacing, bf(f(next_after(x, with_bits((x.bits & sign_bit) | 0x7f80u))) - v));
NPYBRIDGE_BF16_UNARY(rint, bf(std::rint(v)));
NPYBRIDGE_BF16_UNARY(floor, bf(std::floor(v)));
NPYBRIDGE_BF16_UNARY(ceil, bf(std::ceil(v)));
NPYBRIDGE_BF16_UNARY(trunc, bf(std::trunc(v)));
NPYBRIDGE_BF16_UNARY(exp, bf(std::exp(v)));
NPYBRIDGE_BF16_UNARY(exp2, bf(std::exp2(v)));
NPYBRIDGE_BF16_UNARY(expm1, bf(std::expm1(v)));
NPYBRIDGE_BF16_UNARY(log, bf(std::log(v)));
NPYBRIDGE_BF16_UNARY(log2, bf(std::log2(v)));
NPYBRIDGE_BF16_UNARY(log10, bf(std::log10(v)));
NPYBRIDGE_BF16_UNARY(log1p, bf(std::log1p(v)));
NPYBRIDGE_BF16_UNARY(sqrt, bf(std::sqrt(v)));
NPYBRIDGE_BF16_UNARY(square, bf(v* v));
NPYBRIDGE_BF16_UNARY(cbrt, bf(std::cbrt(v)));
NPYBRIDGE_BF16_UNARY(reciprocal, bf(1.0f / v));
NPYBRIDGE_BF16_UNARY(sin, bf(std::sin(v)));
NPYBRIDGE_BF16_UNARY(cos, bf(std::cos(v)));
NPYBRIDGE_BF16_UNARY(tan, bf(std::tan(v)));
NPYBRIDGE_BF16_UNARY(arcsin, bf(std::asin(v)));
NPYBRIDGE_BF16_UNARY(arccos, bf(std::acos(v)));
NPYBRIDGE_BF16_UNARY(arctan, bf(std::atan(v)));
NPYBRIDGE_BF16_UNARY(sinh, bf(std::sinh(v)));
NPYBRIDGE_BF16_UNARY(cosh, bf(std::cosh(v)));
NPYBRIDGE_BF16_UNARY(tanh, bf(std::tanh(v)));
NPYBRIDGE_BF16_UNARY(arcsinh, bf(std::asinh(v)));
NPYBRIDGE_BF16_UNARY(arccosh, bf(std::acosh(v)));
NPYBRIDGE_BF16_UNARY(arctanh, bf(std::atanh(v)));
NPYBRIDGE_BF16_UNARY(deg2rad, bf(v* static_cast<float>(3.14159265358979323846 / 180.0)));
NPYBRIDGE_BF16_UNARY(rad2deg, bf(v* static_cast<float>(180.0 / 3.14159265358979323846)));
#undef NPYBRIDGE_BF16_UNARY
#undef NPYBRIDGE_BF16_BINARY

// Ufuncs whose results are not bfloat16.
struct is_finite {
    static npy_bool apply(bfloat16 x) { return std::isfinite(f(x)); }
};
struct is_inf {
    static npy_bool apply(bfloat16 x) { return std::isinf(f(x)); }
};
struct is_nan_op {
    static npy_bool apply(bfloat16 x) { return is_nan(x); }
};
struct signbit {
    static npy_bool apply(bfloat16 x) { return (x.bits & sign_bit) != 0; }
};
// Truth is "not zero" (NaN is true).
struct logical_not {
    static npy_bool apply(bfloat16 x) { return magnitude(x) == 0; }
};
struct logical_and {
    static npy_bool apply(bfloat16 x, bfloat16 y) { return magnitude(x) != 0 && magnitude(y) != 0; }
};
struct logical_or {
    static npy_bool apply(bfloat16 x, bfloat16 y) { return magnitude(x) != 0 || magnitude(y) != 0; }
};
struct logical_xor {
    static npy_bool apply(bfloat16 x, bfloat16 y) { return (magnitude(x) != 0) != (magnitude(y) != 0); }
};
struct ldexp {
    static bfloat16 apply(bfloat16 x, int e) { return bf(std::ldexp(f(x), e)); }
};
struct frexp {
    static std::pair<bfloat16, int> apply(bfloat16 x) {
        int e = 0;
        const float m = std::frexp(f(x), &e);
        return {bf(m), e};
    }
};
struct modf {
    static std::pair<bfloat16, bfloat16> apply(bfloat16 x) {
        float whole = 0;
        const float fraction = std::modf(f(x), &whole);
        return {bf(fraction), bf(whole)};
    }
};
struct divmod {
    static std::pair<bfloat16, bfloat16> apply(bfloat16 x, bfloat16 y) {
        const std::pair<float, float> r = floored_divmod(f(x), f(y));
        return {bf(r.first), bf(r.second)};
    }
};

}  // namespace bf16_math

// ---- the loops

/// NumPy's type number of a loop's element type.
template <class Element>
int element_type_num() {
    if constexpr (std::is_same_v<Element, bfloat16>)
        return bf16_user_dtype::type_num();
    else if constexpr (std::is_same_v<Element, npy_bool>)
        return NPY_BOOL;
    else {
        static_assert(std::is_same_v<Element, int>, "npybridge: a bfloat16 ufunc loop reads bfloat16, bool or int");
        return NPY_INT;
    }
}

template <class T>
T load(const char* p) noexcept {
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
}

template <class T>
void store(char* p, T value) noexcept {
    std::memcpy(p, &value, sizeof value);
}

template <class T>
struct pair_parts : std::false_type {};
template <class A, class B>
struct pair_parts<std::pair<A, B>> : std::true_type {
    using first = A;
    using second = B;
};

/// The ufunc loop of Op over its arguments' strides.
template <class Op, class... In>
struct bf16_loop {
    using result = decltype(Op::apply(std::declval<In>()...));
    static constexpr int inputs = sizeof...(In);
    static constexpr int outputs = pair_parts<result>::value ? 2 : 1;

    template <class Steps, std::size_t... I>
    static void run(char** args, npy_intp n, const Steps& steps, std::index_sequence<I...>) {
        // Local copies: a store through char* may alias args[].
        const std::array<const char*, inputs> in{args[I]...};
        char* const out = args[inputs];
        char* const out2 = outputs == 2 ? args[inputs + 1] : nullptr;
        for (npy_intp i = 0; i < n; ++i) {
            const result r = Op::apply(load<In>(in[I] + i * steps[I])...);
            if constexpr (outputs == 2) {
                store(out + i * steps[inputs], r.first);
                store(out2 + i * steps[inputs + 1], r.second);
            } else {
                store(out + i * steps[inputs], r);
            }
        }
    }
    /// The element sizes: the steps when every array is contiguous.
    static constexpr std::array<npy_intp, inputs + outputs> dense_steps() {
        std::array<npy_intp, inputs + outputs> sizes{static_cast<npy_intp>(sizeof(In))...};
        if constexpr (outputs == 2) {
            sizes[inputs] = sizeof(typename pair_parts<result>::first);
            sizes[inputs + 1] = sizeof(typename pair_parts<result>::second);
        } else {
            sizes[inputs] = sizeof(result);
        }
        return sizes;
    }
    static void call(char** args, npy_intp const* dimensions, npy_intp const* steps, void*) {
        constexpr std::array<npy_intp, inputs + outputs> dense = dense_steps();
        bool contiguous = true;
        for (int k = 0; k < inputs + outputs; ++k) contiguous = contiguous && steps[k] == dense[k];
        // Contiguous arrays run with constant steps, which vectorize.
        if (contiguous)
            run(args, dimensions[0], dense, std::index_sequence_for<In...>{});
        else
            run(args, dimensions[0], steps, std::index_sequence_for<In...>{});
    }
    static bool register_for(PyObject* numpy, const char* name) {
        int types[4] = {};
        int k = 0;
        ((types[k++] = element_type_num<In>()), ...);
        if constexpr (outputs == 2) {
            types[k++] = element_type_num<typename pair_parts<result>::first>();
            types[k++] = element_type_num<typename pair_parts<result>::second>();
        } else {
            types[k++] = element_type_num<result>();
        }
        object ufunc = object::steal(PyObject_GetAttrString(numpy, name));
        if (!ufunc) return false;
        auto* u = reinterpret_cast<PyUFuncObject*>(ufunc.get());
        if (!PyObject_TypeCheck(ufunc.get(), &PyUFunc_Type) || u->nargs != k) {
            PyErr_Format(PyExc_RuntimeError, "npybridge: numpy.%s is not a ufunc of %d arguments", name, k);
            return false;
        }
        return PyUFunc_RegisterLoopForType(u, bf16_user_dtype::type_num(), call, types, nullptr) == 0;
    }
};

/// Every ufunc bfloat16 computes in bfloat16 (ml_dtypes' set, so results have the same dtypes), with its loop. A
/// template, so the loops compile only where user dtypes are registered.
template <class Bfloat16>
struct bf16_ufunc_table {
    static_assert(std::is_same_v<Bfloat16, bfloat16>, "npybridge: these loops are bfloat16's");
    using b = Bfloat16;
    struct row {
        const char* name;
        bool (*register_for)(PyObject* numpy, const char* name);
    };
    static constexpr row rows[] = {
        {"add", &bf16_loop<bf16_math::add, b, b>::register_for},
        {"subtract", &bf16_loop<bf16_math::subtract, b, b>::register_for},
        {"multiply", &bf16_loop<bf16_math::multiply, b, b>::register_for},
        {"divide", &bf16_loop<bf16_math::divide, b, b>::register_for},  // also np.true_divide
        {"logaddexp", &bf16_loop<bf16_math::logaddexp, b, b>::register_for},
        {"logaddexp2", &bf16_loop<bf16_math::logaddexp2, b, b>::register_for},
        {"negative", &bf16_loop<bf16_math::negative, b>::register_for},
        {"positive", &bf16_loop<bf16_math::positive, b>::register_for},
        {"floor_divide", &bf16_loop<bf16_math::floor_divide, b, b>::register_for},
        {"power", &bf16_loop<bf16_math::power, b, b>::register_for},
        {"remainder", &bf16_loop<bf16_math::remainder, b, b>::register_for},  // also np.mod
        {"fmod", &bf16_loop<bf16_math::fmod, b, b>::register_for},
        {"divmod", &bf16_loop<bf16_math::divmod, b, b>::register_for},
        {"absolute", &bf16_loop<bf16_math::absolute, b>::register_for},
        {"fabs", &bf16_loop<bf16_math::absolute, b>::register_for},
        {"rint", &bf16_loop<bf16_math::rint, b>::register_for},
        {"sign", &bf16_loop<bf16_math::sign, b>::register_for},
        {"heaviside", &bf16_loop<bf16_math::heaviside, b, b>::register_for},
        {"conjugate", &bf16_loop<bf16_math::positive, b>::register_for},
        {"exp", &bf16_loop<bf16_math::exp, b>::register_for},
        {"exp2", &bf16_loop<bf16_math::exp2, b>::register_for},
        {"expm1", &bf16_loop<bf16_math::expm1, b>::register_for},
        {"log", &bf16_loop<bf16_math::log, b>::register_for},
        {"log2", &bf16_loop<bf16_math::log2, b>::register_for},
        {"log10", &bf16_loop<bf16_math::log10, b>::register_for},
        {"log1p", &bf16_loop<bf16_math::log1p, b>::register_for},
        {"sqrt", &bf16_loop<bf16_math::sqrt, b>::register_for},
        {"square", &bf16_loop<bf16_math::square, b>::register_for},
        {"cbrt", &bf16_loop<bf16_math::cbrt, b>::register_for},
        {"reciprocal", &bf16_loop<bf16_math::reciprocal, b>::register_for},
        {"sin", &bf16_loop<bf16_math::sin, b>::register_for},
        {"cos", &bf16_loop<bf16_math::cos, b>::register_for},
        {"tan", &bf16_loop<bf16_math::tan, b>::register_for},
        {"arcsin", &bf16_loop<bf16_math::arcsin, b>::register_for},
        {"arccos", &bf16_loop<bf16_math::arccos, b>::register_for},
        {"arctan", &bf16_loop<bf16_math::arctan, b>::register_for},
        {"arctan2", &bf16_loop<bf16_math::arctan2, b, b>::register_for},
        {"hypot", &bf16_loop<bf16_math::hypot, b, b>::register_for},
        {"sinh", &bf16_loop<bf16_math::sinh, b>::register_for},
        {"cosh", &bf16_loop<bf16_math::cosh, b>::register_for},
        {"tanh", &bf16_loop<bf16_math::tanh, b>::register_for},
        {"arcsinh", &bf16_loop<bf16_math::arcsinh, b>::register_for},
        {"arccosh", &bf16_loop<bf16_math::arccosh, b>::register_for},
        {"arctanh", &bf16_loop<bf16_math::arctanh, b>::register_for},
        {"deg2rad", &bf16_loop<bf16_math::deg2rad, b>::register_for},
        {"rad2deg", &bf16_loop<bf16_math::rad2deg, b>::register_for},
        {"maximum", &bf16_loop<bf16_math::maximum, b, b>::register_for},
        {"minimum", &bf16_loop<bf16_math::minimum, b, b>::register_for},
        {"fmax", &bf16_loop<bf16_math::fmax, b, b>::register_for},
        {"fmin", &bf16_loop<bf16_math::fmin, b, b>::register_for},
        {"logical_and", &bf16_loop<bf16_math::logical_and, b, b>::register_for},
        {"logical_or", &bf16_loop<bf16_math::logical_or, b, b>::register_for},
        {"logical_xor", &bf16_loop<bf16_math::logical_xor, b, b>::register_for},
        {"logical_not", &bf16_loop<bf16_math::logical_not, b>::register_for},
        {"isfinite", &bf16_loop<bf16_math::is_finite, b>::register_for},
        {"isinf", &bf16_loop<bf16_math::is_inf, b>::register_for},
        {"isnan", &bf16_loop<bf16_math::is_nan_op, b>::register_for},
        {"signbit", &bf16_loop<bf16_math::signbit, b>::register_for},
        {"copysign", &bf16_loop<bf16_math::copysign, b, b>::register_for},
        {"modf", &bf16_loop<bf16_math::modf, b>::register_for},
        {"ldexp", &bf16_loop<bf16_math::ldexp, b, int>::register_for},
        {"frexp", &bf16_loop<bf16_math::frexp, b>::register_for},
        {"floor", &bf16_loop<bf16_math::floor, b>::register_for},
        {"ceil", &bf16_loop<bf16_math::ceil, b>::register_for},
        {"trunc", &bf16_loop<bf16_math::trunc, b>::register_for},
        {"nextafter", &bf16_loop<bf16_math::nextafter, b, b>::register_for},
        {"spacing", &bf16_loop<bf16_math::spacing, b>::register_for},
    };
};

template <class Bfloat16>
bool register_bfloat16_ufuncs() {
    object numpy = object::steal(PyImport_ImportModule("numpy"));
    if (!numpy) return false;
    for (const auto& row : bf16_ufunc_table<Bfloat16>::rows) {
        if (!row.register_for(numpy.get(), row.name)) return false;
    }
    return true;
}

// ---- ArrFuncs: fill (arange) and dot

/// np.arange's fill, computed in float.
inline int bf16_fill(void* data, npy_intp length, void*) {
    auto* values = static_cast<bfloat16*>(data);
    const float start = values[0].to_float();
    const float step = values[1].to_float() - start;
    for (npy_intp i = 2; i < length; ++i) values[i] = bfloat16::from_float(start + static_cast<float>(i) * step);
    return 0;
}

/// Dot product accumulated in float, rounded once.
inline void bf16_dot(void* a, npy_intp a_stride, void* b, npy_intp b_stride, void* out, npy_intp n, void*) {
    float sum = 0.0f;
    for (npy_intp i = 0; i < n; ++i) {
        sum += load<bfloat16>(static_cast<const char*>(a) + i * a_stride).to_float() *
               load<bfloat16>(static_cast<const char*>(b) + i * b_stride).to_float();
    }
    store(static_cast<char*>(out), bfloat16::from_float(sum));
}

// ---- the scalar

/// Two bfloat16 scalars compute here; anything else goes through NumPy's arrays (bf16 + 2.0 is float32, as with
/// ml_dtypes).
template <class Op, binaryfunc PyNumberMethods::*Slot>
PyObject* bf16_scalar_binary(PyObject* a, PyObject* b) {
    if (is_scalar<bf16_user_dtype>(a) && is_scalar<bf16_user_dtype>(b)) {
        return scalar_new_value<bf16_user_dtype>(
            Op::apply(scalar_value<bf16_user_dtype>(a), scalar_value<bf16_user_dtype>(b)));
    }
    return (PyArray_Type.tp_as_number->*Slot)(a, b);
}

inline PyObject* bf16_scalar_negative(PyObject* self) {
    return scalar_new_value<bf16_user_dtype>(bf16_math::negative::apply(scalar_value<bf16_user_dtype>(self)));
}

/// Comparisons give numpy.bool_ and broadcast as NumPy's scalars do; == / != with non-numbers give NotImplemented.
inline PyObject* bf16_scalar_richcompare(PyObject* a, PyObject* b, int op) {
    if (!is_scalar<bf16_user_dtype>(a) || !is_scalar<bf16_user_dtype>(b)) {
        if ((op == Py_EQ || op == Py_NE) && (PyUnicode_Check(b) || PyBytes_Check(b) ||
                                             (!PyNumber_Check(b) && !PyArray_Check(b) && !PySequence_Check(b)))) {
            Py_RETURN_NOTIMPLEMENTED;
        }
        return PyGenericArrType_Type.tp_richcompare(a, b, op);
    }
    if (op != Py_EQ && op != Py_NE && op != Py_LT && op != Py_LE && op != Py_GT && op != Py_GE)
        Py_RETURN_NOTIMPLEMENTED;
    const bool r =
        compare_quietly(op, scalar_value<bf16_user_dtype>(a).to_float(), scalar_value<bf16_user_dtype>(b).to_float());
    PyArrayScalar_RETURN_BOOL_FROM_LONG(r);
}

/// As float's hash (NaNs by identity, Python 3.10's rule).
inline Py_hash_t bf16_scalar_hash(PyObject* self) {
    const bfloat16 v = scalar_value<bf16_user_dtype>(self);
    if (bf16_math::is_nan(v)) return PyBaseObject_Type.tp_hash(self);
    object number = object::steal(PyFloat_FromDouble(v.to_float()));
    return number ? PyObject_Hash(number.get()) : -1;
}

/// format(x, spec) is format(float(x), spec).
inline PyObject* bf16_scalar_format(PyObject* self, PyObject* spec) {
    if (!PyUnicode_Check(spec)) {
        PyErr_Format(PyExc_TypeError, "__format__() argument 1 must be str, not %s", Py_TYPE(spec)->tp_name);
        return nullptr;
    }
    object number = object::steal(PyFloat_FromDouble(scalar_value<bf16_user_dtype>(self).to_float()));
    return number ? PyObject_Format(number.get(), spec) : nullptr;
}

/// bfloat16(x): an array of 1+ dimensions is cast, as with ml_dtypes; anything else (a number, numeric string, 0-d
/// array) rounded.
inline PyObject* bf16_scalar_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    if (PyTuple_GET_SIZE(args) == 1 && (kwargs == nullptr || PyDict_GET_SIZE(kwargs) == 0)) {
        PyObject* value = PyTuple_GET_ITEM(args, 0);
        if (PyArray_Check(value) && PyArray_NDIM(reinterpret_cast<PyArrayObject*>(value)) > 0) {
            auto* array = reinterpret_cast<PyArrayObject*>(value);
            if (PyArray_TYPE(array) == bf16_user_dtype::type_num()) {
                Py_INCREF(value);
                return value;
            }
            return PyArray_Cast(array, bf16_user_dtype::type_num());
        }
    }
    return scalar_tp_new<bf16_user_dtype>(type, args, kwargs);
}

}  // namespace detail
}  // namespace npybridge
