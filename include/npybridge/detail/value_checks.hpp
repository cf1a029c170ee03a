// npybridge/detail/value_checks.hpp — narrowing='checked' over an ndarray, narrowing copies, QuantizedS1's codes.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/fill_kernels.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/detail/narrowing_kernels.hpp>
#include <npybridge/core/detail/packing.hpp>
#include <npybridge/core/detail/value_bounds.hpp>
#include <npybridge/detail/array_layout.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/python.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// The numpy type first_unfit_value widens `kind` to.
inline int widened_type(char kind, std::size_t real_size) noexcept {
    const bool long_real = real_size > 8;
    if (kind == 'i' || kind == 'u') return kind == 'i' ? NPY_INT64 : NPY_UINT64;
    if (kind == 'f') return long_real ? NPY_LONGDOUBLE : NPY_DOUBLE;
    return long_real ? NPY_CLONGDOUBLE : NPY_CDOUBLE;
}

/// The array's first value (C order) `bounds` does not hold, with index and exact text (in `shown`, else its own
/// type): searched in place (named from one private reading) when contiguous, aligned and native, else widened.
template <class = void>
maybe<unfit_value> first_unfit_value(PyArrayObject* array, const value_bounds& bounds,
                                     maybe<source_type> shown = std::nullopt) {
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
    const source_type own = source_type_of(kind, static_cast<std::size_t>(PyArray_ITEMSIZE(array)));
    return without_gil_if_large(n * static_cast<std::size_t>(PyArray_ITEMSIZE(read)), [&] {
        maybe<unfit_value> unfit = first_unfit_in(kind, PyArray_ITEMSIZE(read) / static_cast<npy_intp>(parts),
                                                  PyArray_DATA(read), n, parts, bounds, shown.value_or(own));
        if (unfit && in_place) {
            source_view view = source_view_of(read);
            if (shown) view.shown = *shown;
            byte_buffer copy;
            unfit = first_unfit_copied(view, bounds, copy);
        }
        return unfit;
    });
}

/// int64 -> Int32 / float64 -> Float32 into contiguous `out`; checked names the first unfit value. check_first
/// narrows into new memory first, so `out` stays untouched on error.
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
    const auto flat = [](std::size_t count) {  // 8-byte values into 4-byte ones, one run
        copy_plan run;
        run.ndim = 1;
        run.shape[0] = count;
        run.src[0] = 8;
        run.dst[0] = 4;
        return run;
    };
    copy_plan plan;
    if (!copy_plan_c_order(src, 4, plan)) {  // numpy flattens first
        converted = contiguous_as(src, to_int ? NPY_INT64 : NPY_FLOAT64, NPY_SAFE_CASTING, "narrowing");
        src = reinterpret_cast<PyArrayObject*>(converted.get());
        plan = flat(static_cast<std::size_t>(PyArray_SIZE(src)));
    }
    const std::size_t n = plan.count();
    const auto narrow = [&](const copy_plan& how, const void* from, void* to, bool swap) {
        return to_int ? narrow_strided<std::int64_t, std::int32_t>(how, from, to, swap)
                      : narrow_strided<double, float>(how, from, to, swap);
    };
    const bool checked = mode == narrowing::checked;
    const bool staged = checked && check_first;  // in the thread's warm scratch, then copied in
    scratch_buffer scratch(staged ? n * 4 : 0);
    void* written = staged ? scratch.data() : out;
    const bool all_fit = without_gil_if_large(n * 8, [&] {
        const bool fit = narrow(plan, PyArray_DATA(src), written, !PyArray_ISNOTSWAPPED(src)) || !checked;
        if (fit && staged && n > 0) std::memcpy(out, written, n * 4);
        return fit;
    });
    if (all_fit) return;
    // Named from one reading; holding none (another thread fixed it), that reading is narrowed.
    byte_buffer copy;
    const value_bounds bounds = *storage_bounds(target.info());
    maybe<unfit_value> unfit;
    without_gil_if_large(n * 8, [&] {
        unfit = first_unfit_copied(source_view_of(src), bounds, copy);
        if (unfit) return;
        narrow(flat(n), copy.get(), out, false);
    });
    if (unfit) {
        throw_unfit_value(descr_text(PyArray_DESCR(array)), target, to_int ? value_check::range : value_check::overflow,
                          *unfit, layout);
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
    const auto settle = [&](auto* values) -> maybe<unfit_value> {
        for (std::size_t i = 0; i < n; ++i) {
            const auto v = static_cast<long long>(values[i]);
            if (v >= lo && v <= hi) continue;
            if (narrow != narrowing::wrap) return unfit_value{i, std::to_string(v)};
            using value_t = std::remove_reference_t<decltype(values[i])>;
            values[i] = static_cast<value_t>(lo + (((v - lo) % span) + span) % span);
        }
        return std::nullopt;
    };
    const bool is_signed = type.is_signed;
    const maybe<unfit_value> invalid = without_gil_if_large(n * type.element_size, [&] {
        switch (type.element_size) {
            case 1: return is_signed ? settle(static_cast<std::int8_t*>(out)) : settle(static_cast<std::uint8_t*>(out));
            case 2:
                return is_signed ? settle(static_cast<std::int16_t*>(out)) : settle(static_cast<std::uint16_t*>(out));
            default:
                return is_signed ? settle(static_cast<std::int32_t*>(out)) : settle(static_cast<std::uint32_t*>(out));
        }
    });
    if (invalid) throw_invalid_code(type, invalid->text, index_text(invalid->index, layout));
}

}  // namespace detail
}  // namespace npybridge
