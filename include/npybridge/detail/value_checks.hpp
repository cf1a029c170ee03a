// npybridge/detail/value_checks.hpp — narrowing='checked' over an ndarray, narrowing copies, QuantizedS1's codes.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/narrowing_kernels.hpp>
#include <npybridge/core/detail/value_bounds.hpp>
#include <npybridge/detail/array_layout.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/policies.hpp>
#include <npybridge/python.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// An integer target's [lo, hi] clipped to T's range.
template <class T>
T integer_bound(const value_bounds& bounds, bool upper) noexcept {
    using limits = std::numeric_limits<T>;
    if (!upper) return bounds.lo <= static_cast<long double>(limits::min()) ? limits::min() : static_cast<T>(bounds.lo);
    return bounds.hi >= static_cast<long double>(limits::max()) ? limits::max()
           : bounds.hi < 0                                      ? T{0}
                                                                : static_cast<T>(bounds.hi);
}

/// `visit(values)` with the values at `data` as numpy's (kind, size of a real part) C type.
template <class Visit>
auto visit_numbers(char kind, npy_intp size, const void* data, Visit visit) {
    switch (kind == 'i' ? size : kind == 'u' ? -size : 100 + size) {
        case 1: return visit(static_cast<const std::int8_t*>(data));
        case 2: return visit(static_cast<const std::int16_t*>(data));
        case 4: return visit(static_cast<const std::int32_t*>(data));
        case 8: return visit(static_cast<const std::int64_t*>(data));
        case -1: return visit(static_cast<const std::uint8_t*>(data));
        case -2: return visit(static_cast<const std::uint16_t*>(data));
        case -4: return visit(static_cast<const std::uint32_t*>(data));
        case -8: return visit(static_cast<const std::uint64_t*>(data));
        case 104: return visit(static_cast<const float*>(data));
        case 108: return visit(static_cast<const double*>(data));
        default: return visit(static_cast<const long double*>(data));
    }
}

/// The first integer `bounds` does not hold: out of [lo, hi], or for float targets overflowing or inexact.
template <class T>
std::optional<unfit_value> first_unfit_integer(const T* in, std::size_t n, const value_bounds& bounds) {
    using limits = std::numeric_limits<T>;
    std::size_t bad = n;
    if (!bounds.floating) {
        bad = first_outside<T>(in, n, integer_bound<T>(bounds, false), integer_bound<T>(bounds, true));
        if (bad != n) return unfit_value{bad, std::to_string(in[bad])};
        return std::nullopt;
    }
    const double limit = std::ceil(bounds.overflow) - 1;  // the largest integer below it
    if (limit < static_cast<double>(limits::max())) {
        const auto top = static_cast<T>(limit);
        bad = first_outside<T>(in, n, std::is_signed_v<T> ? static_cast<T>(-top) : T{0}, top);
    }
    // The first in C order: an inexact value before the first overflow comes first.
    if (sizeof(T) * 8 - (std::is_signed_v<T> ? 1 : 0) > bounds.digits) {
        const std::size_t inexact = first_inexact(in, bad, bounds.digits);
        if (inexact != bad) return unfit_value{inexact, inexact_text(in[inexact], bounds)};
    }
    if (bad != n) return unfit_value{bad, std::to_string(in[bad])};
    return std::nullopt;
}

/// The first float (complex: `parts` 2) `bounds` does not hold: overflowing, or for integer targets not whole in [lo,
/// hi].
template <class T>
std::optional<unfit_value> first_unfit_float(const T* in, std::size_t n, std::size_t parts,
                                             const value_bounds& bounds) {
    const std::size_t count = n * parts;
    std::size_t bad =
        bounds.floating ? first_overflow<T>(in, count, static_cast<T>(bounds.overflow))
                        : first_not_whole<T>(in, count, static_cast<double>(bounds.lo), static_cast<double>(bounds.hi));
    if (bad == count) return std::nullopt;
    bad -= bad % parts;
    const auto text = [](T v) { return number_text(static_cast<double>(v)); };
    return unfit_value{bad / parts, parts == 2 ? "(" + text(in[bad]) + "+" + text(in[bad + 1]) + "j)" : text(in[bad])};
}

/// The first unfit of `n` values at `data`.
template <class = void>
std::optional<unfit_value> first_unfit_in(char kind, npy_intp size, const void* data, std::size_t n, std::size_t parts,
                                          const value_bounds& bounds) {
    return visit_numbers(kind, size, data, [&](const auto* in) {
        if constexpr (std::is_integral_v<std::remove_cv_t<std::remove_pointer_t<decltype(in)>>>) {
            return first_unfit_integer(in, n, bounds);
        } else {
            return first_unfit_float(in, n, parts, bounds);
        }
    });
}

/// The numpy type first_unfit_value widens `kind` to.
inline int widened_type(char kind, std::size_t real_size) noexcept {
    const bool long_real = real_size > 8;
    if (kind == 'i' || kind == 'u') return kind == 'i' ? NPY_INT64 : NPY_UINT64;
    if (kind == 'f') return long_real ? NPY_LONGDOUBLE : NPY_DOUBLE;
    return long_real ? NPY_CLONGDOUBLE : NPY_CDOUBLE;
}

/// The array's first value (C order) `bounds` does not hold, with index and text: in place when contiguous, aligned and
/// native, else widened by numpy.
template <class = void>
std::optional<unfit_value> first_unfit_value(PyArrayObject* array, const value_bounds& bounds) {
    const char kind = descr_kind(PyArray_DESCR(array));
    if (kind != 'i' && kind != 'u' && kind != 'f' && kind != 'c') return std::nullopt;
    const std::size_t parts = kind == 'c' ? 2 : 1;
    const auto real_size = static_cast<std::size_t>(PyArray_ITEMSIZE(array)) / parts;
    const bool in_place = PyArray_IS_C_CONTIGUOUS(array) && PyArray_ISALIGNED(array) && PyArray_ISNOTSWAPPED(array) &&
                          (kind == 'i' || kind == 'u' || real_size == 4 || real_size == 8);
    const object values =
        in_place ? object::borrow(reinterpret_cast<PyObject*>(array))
                 : contiguous_as(array, widened_type(kind, real_size), NPY_SAFE_CASTING, "checked narrowing");
    auto* read = reinterpret_cast<PyArrayObject*>(values.get());
    const auto n = static_cast<std::size_t>(PyArray_SIZE(read));
    return without_gil_if_large(n * static_cast<std::size_t>(PyArray_ITEMSIZE(read)), [&] {
        return first_unfit_in(kind, PyArray_ITEMSIZE(read) / static_cast<npy_intp>(parts), PyArray_DATA(read), n, parts,
                              bounds);
    });
}

/// int64 -> Int32 / float64 -> Float32 into contiguous `out`; checked names the first unfit value. check_first checks
/// all before writing, so `out` stays untouched on error.
template <class = void>
void narrow_into(PyArrayObject* array, const dtype& target, void* out, narrowing mode, const tensor_layout& layout,
                 bool check_first = false) {
    const bool to_int = target.id() == dtype_enum::Int32;
    const int type_num = descr_type_num(PyArray_DESCR(array));
    const bool wide_source = PyArray_ITEMSIZE(array) == 8 &&
                             (to_int ? type_num == NPY_LONG || type_num == NPY_LONGLONG : type_num == NPY_DOUBLE);
    // int64 / float64 of any strides and order are narrowed while gathered; numpy makes anything else one first.
    object converted;
    if (!wide_source) converted = contiguous_as(array, to_int ? NPY_INT64 : NPY_FLOAT64, NPY_SAFE_CASTING, "narrowing");
    auto* src = wide_source ? array : reinterpret_cast<PyArrayObject*>(converted.get());
    copy_plan plan;
    if (!copy_plan_c_order(src, 4, plan)) {  // numpy flattens first
        converted = contiguous_as(src, to_int ? NPY_INT64 : NPY_FLOAT64, NPY_SAFE_CASTING, "narrowing");
        src = reinterpret_cast<PyArrayObject*>(converted.get());
        plan.ndim = 1;
        plan.shape[0] = static_cast<std::size_t>(PyArray_SIZE(src));
        plan.src[0] = 8;
        plan.dst[0] = 4;
    }
    const bool swap = !PyArray_ISNOTSWAPPED(src);
    const void* data = PyArray_DATA(src);
    const std::size_t n = plan.count();
    const std::size_t bad = without_gil_if_large(n * 8, [&]() -> std::size_t {
        auto first_bad = [&] {
            return to_int ? first_unfit_strided<std::int64_t, std::int32_t>(plan, data, swap)
                          : first_unfit_strided<double, float>(plan, data, swap);
        };
        if (check_first && mode == narrowing::checked) {
            const std::size_t found = first_bad();
            if (found != n) return found;
        }
        const bool all_fit = to_int ? narrow_strided<std::int64_t, std::int32_t>(plan, data, out, swap)
                                    : narrow_strided<double, float>(plan, data, out, swap);
        return all_fit || mode != narrowing::checked ? n : first_bad();
    });
    if (bad != n) {
        std::ptrdiff_t offset = 0;
        std::size_t rest = bad;
        for (std::size_t k = plan.ndim; k-- > 0;) {
            offset += static_cast<std::ptrdiff_t>(rest % plan.shape[k]) * plan.src[k];
            rest /= plan.shape[k];
        }
        const auto* at = static_cast<const unsigned char*>(data) + offset;
        const std::string value = to_int ? std::to_string(swap ? narrow_op<std::int64_t, std::int32_t, true>::load(at)
                                                               : narrow_op<std::int64_t, std::int32_t, false>::load(at))
                                         : number_text(swap ? narrow_op<double, float, true>::load(at)
                                                            : narrow_op<double, float, false>::load(at));
        throw value_range_error("narrowing " + descr_text(PyArray_DESCR(array)) + " to " + std::string(target.name()) +
                                ": value " + value + " at index " + index_text(bad, layout) + " does not fit " +
                                std::string(target.name()) + " (narrowing='checked'; 'wrap' casts anyway)");
    }
}

/// Fresh QuantizedS1 memory, after any cast: checked / reject refuse the first non-code by index; wrap wraps into the
/// code range.
template <class = void>
void settle_codes(void* out, const dtype& target, narrowing narrow, const tensor_layout& layout) {
    const dtype_info& type = target.info();
    if (!codes_narrower_than_storage(type)) return;
    const std::size_t n = layout.count();
    const auto lo = static_cast<long long>(type.range.lo), hi = static_cast<long long>(type.range.hi);
    const long long span = hi - lo + 1;
    const auto settle = [&](auto* values) {
        for (std::size_t i = 0; i < n; ++i) {
            const auto v = static_cast<long long>(values[i]);
            if (v >= lo && v <= hi) continue;
            if (narrow != narrowing::wrap) throw_invalid_code(type, std::to_string(v), index_text(i, layout));
            using value_t = std::remove_reference_t<decltype(values[i])>;
            values[i] = static_cast<value_t>(lo + (((v - lo) % span) + span) % span);
        }
    };
    const bool is_signed = type.is_signed;
    switch (type.element_size) {
        case 1: is_signed ? settle(static_cast<std::int8_t*>(out)) : settle(static_cast<std::uint8_t*>(out)); break;
        case 2: is_signed ? settle(static_cast<std::int16_t*>(out)) : settle(static_cast<std::uint16_t*>(out)); break;
        default: is_signed ? settle(static_cast<std::int32_t*>(out)) : settle(static_cast<std::uint32_t*>(out)); break;
    }
}

}  // namespace detail
}  // namespace npybridge
