// npybridge/core/detail/fill_kernels.hpp — the kernels kernel_table.hpp names, over a source_view: none declines.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/detail/bfloat16_kernels.hpp>
#include <npybridge/core/detail/half_kernels.hpp>
#include <npybridge/core/detail/kernel_table.hpp>
#include <npybridge/core/detail/narrowing_kernels.hpp>
#include <npybridge/core/detail/source_view.hpp>
#include <npybridge/core/detail/strided_copy.hpp>
#include <npybridge/core/detail/value_bounds.hpp>
#include <npybridge/core/layout.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// `visit(values)` with the values at `data` as numpy's (kind, size of a real part) C type.
template <class Visit>
auto visit_numbers(char kind, std::ptrdiff_t size, const void* data, Visit visit) {
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

template <class P>
using pointee_t = std::remove_cv_t<std::remove_pointer_t<P>>;

/// An integer target's [lo, hi] clipped to T's range.
template <class T>
T integer_bound(const value_bounds& bounds, bool upper) noexcept {
    using limits = std::numeric_limits<T>;
    if (!upper) return bounds.lo <= static_cast<long double>(limits::min()) ? limits::min() : static_cast<T>(bounds.lo);
    return bounds.hi >= static_cast<long double>(limits::max()) ? limits::max()
           : bounds.hi < 0                                      ? T{0}
                                                                : static_cast<T>(bounds.hi);
}

/// The first integer `bounds` does not hold: out of [lo, hi], or for float targets overflowing or inexact.
template <class T>
maybe<unfit_value> first_unfit_integer(const T* in, std::size_t n, const value_bounds& bounds) {
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

/// Whether `text` reads back as `value` in `type` (float16 and bfloat16: as float32, which holds their values).
template <class = void>
bool reads_back(const char* text, long double value, source_type type) noexcept {
    switch (type) {
        case source_type::float16:
        case source_type::bfloat16:
        case source_type::float32:
        case source_type::complex64: return std::strtof(text, nullptr) == static_cast<float>(value);
        case source_type::float64:
        case source_type::complex128: return std::strtod(text, nullptr) == static_cast<double>(value);
        default: return std::strtold(text, nullptr) == value;
    }
}

/// The shortest text that reads back as `value` in `type`, laid out as Python's repr: positional from 1e-4 to 1e16,
/// else d.ddde+XX; whole values end in ".0" unless `bare` (a complex number's parts).
template <class = void>
std::string float_text(long double value, source_type type, bool bare = false) {
    if (value != value) return "nan";
    const std::string sign = std::signbit(value) ? "-" : "";
    if (value == 0 || value - value != 0) return sign + (value == 0 ? (bare ? "0" : "0.0") : "inf");
    char buffer[64];
    for (int digits = 1; digits < 40; ++digits) {
        std::snprintf(buffer, sizeof buffer, "%.*Le", digits - 1, value);
        if (reads_back(buffer, value, type)) break;
    }
    std::string mantissa(buffer + sign.size(), std::strchr(buffer, 'e'));
    mantissa.erase(std::remove(mantissa.begin(), mantissa.end(), '.'), mantissa.end());
    mantissa.erase(mantissa.find_last_not_of('0') + 1);
    const int exponent = std::atoi(std::strchr(buffer, 'e') + 1);
    const auto size = static_cast<int>(mantissa.size());
    if (exponent < -4 || exponent >= 16) {
        std::snprintf(buffer, sizeof buffer, "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
        return sign + mantissa.substr(0, 1) + (size > 1 ? "." + mantissa.substr(1) : "") + buffer;
    }
    if (exponent < 0) return sign + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + mantissa;
    if (size <= exponent + 1) {
        return sign + mantissa + std::string(static_cast<std::size_t>(exponent + 1 - size), '0') + (bare ? "" : ".0");
    }
    return sign + mantissa.substr(0, static_cast<std::size_t>(exponent + 1)) + "." +
           mantissa.substr(static_cast<std::size_t>(exponent + 1));
}

/// The first float (complex: `parts` 2) `bounds` does not hold: overflowing, or for integer targets not whole in [lo,
/// hi]; its text exact in `shown`, the caller's type.
template <class T>
maybe<unfit_value> first_unfit_float(const T* in, std::size_t n, std::size_t parts, const value_bounds& bounds,
                                     source_type shown) {
    const std::size_t count = n * parts;
    std::size_t bad =
        bounds.floating ? first_overflow<T>(in, count, static_cast<T>(bounds.overflow))
                        : first_not_whole<T>(in, count, static_cast<double>(bounds.lo), static_cast<double>(bounds.hi));
    if (bad == count) return std::nullopt;
    bad -= bad % parts;
    if (parts == 1) return unfit_value{bad, float_text(in[bad], shown)};
    const std::string imaginary = float_text(in[bad + 1], shown, true);
    return unfit_value{bad / parts,
                       "(" + float_text(in[bad], shown, true) + (imaginary[0] == '-' ? "" : "+") + imaginary + "j)"};
}

/// The first unfit of `n` values at `data` (aligned, native), a float's text exact in `shown`.
template <class = void>
maybe<unfit_value> first_unfit_in(char kind, std::ptrdiff_t size, const void* data, std::size_t n, std::size_t parts,
                                  const value_bounds& bounds, source_type shown) {
    return visit_numbers(kind, size, data, [&](const auto* in) {
        if constexpr (std::is_integral_v<pointee_t<decltype(in)>>) {
            return first_unfit_integer(in, n, bounds);
        } else {
            return first_unfit_float(in, n, parts, bounds, shown);
        }
    });
}

// ------------------------------------------------- checked stores into 1-, 2- or 4-byte integer storage

/// store_checked into 1-, 2- or 4-byte storage: n when every value is held, else less.
template <class Source>
std::size_t store_within(const Source* in, std::size_t n, void* out, std::size_t size, const value_bounds& bounds) {
    const auto store_as = [&](auto* to, auto lo, auto hi) {
        if constexpr (std::is_floating_point_v<Source>)
            return store_checked_floats(in, n, to, lo, hi);
        else
            return store_checked_integers(in, n, to, lo, hi);
    };
    const auto into_size = [&](auto lo, auto hi) {
        if (size == 1) return store_as(static_cast<std::uint8_t*>(out), lo, hi);
        if (size == 2) return store_as(static_cast<std::uint16_t*>(out), lo, hi);
        return store_as(static_cast<std::uint32_t*>(out), lo, hi);
    };
    if constexpr (std::is_floating_point_v<Source>) {
        return into_size(bounds.lo, bounds.hi);
    } else {
        return into_size(integer_bound<Source>(bounds, false), integer_bound<Source>(bounds, true));
    }
}

/// store_within of `count` values `step` bytes apart, gathered a block at a time into L1: count when all are held.
template <class Source>
std::size_t store_stepped_within(const char* in, std::ptrdiff_t step, std::size_t count, char* out, std::size_t size,
                                 const value_bounds& bounds) {
    constexpr std::size_t block = 1024;
    Source gathered[block];
    for (std::size_t at = 0; at < count; at += block) {
        const std::size_t m = std::min(block, count - at);
        const char* from = in + static_cast<std::ptrdiff_t>(at) * step;
        if (step == 2 * static_cast<std::ptrdiff_t>(sizeof(Source))) {
            gather_every_other(reinterpret_cast<const Source*>(from), m, gathered);
        } else {
            for (std::size_t i = 0; i < m; ++i) {
                std::memcpy(&gathered[i], from + static_cast<std::ptrdiff_t>(i) * step, sizeof(Source));
            }
        }
        if (store_within(gathered, m, out + at * size, size, bounds) != m) return at;
    }
    return count;
}

/// store_within row by row (stepped rows by store_stepped_within): n when every value is held, else less.
template <class Source>
std::size_t store_rows_within(const source_view& view, void* out, std::size_t size, const value_bounds& bounds) {
    const std::size_t ndim = view.ndim, n = view.count;
    const std::size_t inner = view.shape[ndim - 1];
    const std::ptrdiff_t step = view.strides[ndim - 1];
    std::size_t index[copy_max_ndim] = {};
    std::ptrdiff_t offset = 0;  // to the row's first element
    for (std::size_t row = 0; row * inner < n; ++row) {
        const char* in = static_cast<const char*>(view.data) + offset;
        char* to = static_cast<char*>(out) + row * inner * size;
        const std::size_t held = step == static_cast<std::ptrdiff_t>(sizeof(Source))
                                     ? store_within(reinterpret_cast<const Source*>(in), inner, to, size, bounds)
                                     : store_stepped_within<Source>(in, step, inner, to, size, bounds);
        if (held != inner) return 0;
        for (std::size_t k = ndim - 1; k-- > 0;) {  // an odometer over the outer dimensions
            offset += view.strides[k];
            if (++index[k] < view.shape[k]) break;
            offset -= view.strides[k] * static_cast<std::ptrdiff_t>(view.shape[k]);
            index[k] = 0;
        }
    }
    return n;
}

/// `m` x `w` values from `from` (the view's strides) into `to` (C order).
inline void copy_block(const source_view& view, const char* from, std::size_t m, std::size_t w, void* to,
                       std::size_t size) noexcept {
    copy_plan plan;
    plan.ndim = 2;
    plan.shape[0] = m;
    plan.shape[1] = w;
    plan.src[0] = view.strides[0];
    plan.src[1] = view.strides[1];
    plan.dst[0] = static_cast<std::ptrdiff_t>(w * size);
    plan.dst[1] = static_cast<std::ptrdiff_t>(size);
    if (plan.simplify()) copy_strided(plan, from, to, size);
}

/// A transpose: blocks of 64 rows by 1024 values, so the copy reads 64 values of each source row, not a slab's few.
template <class Source>
std::size_t store_transposed_within(const source_view& view, void* out, std::size_t size, const value_bounds& bounds) {
    const std::size_t rows = view.shape[0], cols = view.shape[1];
    constexpr std::size_t block_rows = 64, block_cols = 1024;
    const std::unique_ptr<Source[]> buffer(new Source[block_rows * block_cols]);
    for (std::size_t r = 0; r < rows; r += block_rows) {
        const std::size_t m = std::min(block_rows, rows - r);
        for (std::size_t c = 0; c < cols; c += block_cols) {
            const std::size_t w = std::min(block_cols, cols - c);
            const char* from = static_cast<const char*>(view.data) + static_cast<std::ptrdiff_t>(r) * view.strides[0] +
                               static_cast<std::ptrdiff_t>(c) * view.strides[1];
            copy_block(view, from, m, w, buffer.get(), sizeof(Source));
            for (std::size_t i = 0; i < m; ++i) {
                char* to = static_cast<char*>(out) + ((r + i) * cols + c) * size;
                if (store_within(buffer.get() + i * w, w, to, size, bounds) != w) return 0;
            }
        }
    }
    return rows * cols;
}

/// A transpose into narrower storage: each source run stored (tested) into a buffer, then the block transposed, moving
/// `size` bytes a value.
template <class Source>
std::size_t store_narrowed_transposed(const source_view& view, void* out, std::size_t size,
                                      const value_bounds& bounds) {
    const std::ptrdiff_t step = view.strides[1];
    const std::size_t rows = view.shape[0], cols = view.shape[1];
    // Blocks one destination line wide by runs of up to 8192 rows.
    const std::size_t block_cols = 64 / size, block_rows = std::min<std::size_t>(rows, 8192);
    const byte_buffer narrowed(block_rows * block_cols * size);
    for (std::size_t r = 0; r < rows; r += block_rows) {
        const std::size_t m = std::min(block_rows, rows - r);
        for (std::size_t c = 0; c < cols; c += block_cols) {
            const std::size_t w = std::min(block_cols, cols - c);
            for (std::size_t j = 0; j < w; ++j) {
                const Source* run = reinterpret_cast<const Source*>(static_cast<const char*>(view.data) +
                                                                    static_cast<std::ptrdiff_t>(c + j) * step) +
                                    r;
                if (store_within(run, m, narrowed.get() + j * m * size, size, bounds) != m) return 0;
            }
            copy_plan plan;
            plan.ndim = 2;
            plan.shape[0] = m;
            plan.shape[1] = w;
            plan.src[0] = static_cast<std::ptrdiff_t>(size);
            plan.src[1] = static_cast<std::ptrdiff_t>(m * size);
            plan.dst[0] = static_cast<std::ptrdiff_t>(cols * size);
            plan.dst[1] = static_cast<std::ptrdiff_t>(size);
            copy_strided(plan, narrowed.get(), static_cast<char*>(out) + (r * cols + c) * size, size);
        }
    }
    return rows * cols;
}

/// Any strides: slabs copied into a buffer in cache, tested and stored from there.
template <class Source>
std::size_t store_slabs_within(const source_view& view, void* out, std::size_t size, const value_bounds& bounds) {
    const std::size_t ndim = view.ndim, n = view.count;
    if (n == 0) return n;
    // A slab: whole trailing dimensions after `k`, and `chunk` indices of dimension k.
    const std::size_t slab = (std::size_t{256} << 10) / sizeof(Source);
    std::size_t k = ndim - 1, below = 1;  // below: elements of one index of dimension k
    while (k > 0 && below * view.shape[k] <= slab) below *= view.shape[k--];
    const std::size_t chunk = std::max<std::size_t>(1, std::min<std::size_t>(view.shape[k], slab / below));
    const std::unique_ptr<Source[]> buffer(new Source[chunk * below]);  // every slab overwrites what it reads
    std::size_t index[copy_max_ndim] = {};
    std::ptrdiff_t offset = 0;  // to the first element of the current index of dimensions 0..k-1
    std::size_t written = 0;
    for (;;) {
        for (std::size_t at = 0; at < view.shape[k]; at += chunk) {
            copy_plan plan;
            plan.ndim = ndim - k;
            std::ptrdiff_t step = sizeof(Source);
            for (std::size_t d = ndim; d-- > k;) {
                plan.shape[d - k] = d == k ? std::min(chunk, view.shape[k] - at) : view.shape[d];
                plan.src[d - k] = view.strides[d];
                plan.dst[d - k] = step;
                step *= static_cast<std::ptrdiff_t>(plan.shape[d - k]);
            }
            const std::size_t count = plan.count();
            const char* from =
                static_cast<const char*>(view.data) + offset + static_cast<std::ptrdiff_t>(at) * view.strides[k];
            if (plan.simplify()) copy_strided(plan, from, buffer.get(), sizeof(Source));
            if (store_within(buffer.get(), count, static_cast<char*>(out) + written * size, size, bounds) != count)
                return 0;
            written += count;
        }
        std::size_t d = k;
        for (; d-- > 0;) {  // an odometer over dimensions 0..k-1
            offset += view.strides[d];
            if (++index[d] < view.shape[d]) break;
            offset -= view.strides[d] * static_cast<std::ptrdiff_t>(view.shape[d]);
            index[d] = 0;
        }
        if (d == static_cast<std::size_t>(-1)) return n;
    }
}

// ------------------------------------------------- the kernels by name

/// Where a kernel writes, and what the values must satisfy there.
struct kernel_target {
    void* out;
    dtype_enum id;
    std::size_t size;
    const tensor_layout& layout;  ///< copy_tiled's; the others write C order
    value_check check;
    value_bounds bounds;
};

/// Bytes to reverse per element of a non-native source (a complex number's halves); 0 when native.
inline std::size_t swap_unit_of(const source_view& view) noexcept {
    if (view.native) return 0;
    return view.kind == 'c' ? view.itemsize / 2 : view.itemsize;
}

/// float32 / float64 into BFloat16 or Float16: the index of the first overflow (checked), else n.
template <class Out>
std::size_t convert_floats(source_type from, dtype_enum target, const void* in, std::size_t n, Out* out,
                           double overflow, bool check) {
    if (target == dtype_enum::BFloat16 && from == source_type::float32) {
        return floats_to_bfloat16(static_cast<const float*>(in), n, out, check);
    }
    if (from == source_type::float64) {
        const auto* values = static_cast<const double*>(in);
        return target == dtype_enum::BFloat16 ? doubles_to_bfloat16(values, n, out, check)
                                              : doubles_to_half(values, n, out, check);
    }
    const auto* values = static_cast<const float*>(in);  // F16C, then a scan per block
    return convert_checking_overflow(values, n, out, static_cast<float>(overflow), check,
                                     active_half_kernels().to_half);
}

/// The checked stores by layout class.
template <class Source>
std::size_t store_checked_by_layout(kernel_id kernel, const source_view& view, const kernel_target& into) {
    const auto* in = static_cast<const Source*>(view.data);
    switch (kernel) {
        case kernel_id::checked_contiguous: return store_within(in, view.count, into.out, into.size, into.bounds);
        case kernel_id::checked_rows: return store_rows_within<Source>(view, into.out, into.size, into.bounds);
        case kernel_id::checked_narrowing_transpose:
            return store_narrowed_transposed<Source>(view, into.out, into.size, into.bounds);
        case kernel_id::checked_transposed:
            return store_transposed_within<Source>(view, into.out, into.size, into.bounds);
        default: return store_slabs_within<Source>(view, into.out, into.size, into.bounds);
    }
}

/// Runs a kernel that reads without Python: view.count when it held every value (always, unchecked).
template <class = void>
std::size_t run_kernel(kernel_id kernel, const source_view& view, const kernel_target& into) {
    const std::size_t n = view.count;
    const void* in = view.data;
    const bool check = into.check != value_check::none;
    switch (kernel) {
        case kernel_id::widen_bfloat16:
            bfloat16_to_floats(static_cast<const std::uint16_t*>(in), n, static_cast<float*>(into.out));
            return n;
        case kernel_id::copy_tiled: {
            copy_plan plan = view.c_order_plan(into.size);
            for (std::size_t i = 0; i < plan.ndim; ++i)
                plan.dst[i] = into.layout.strides[i] * static_cast<std::ptrdiff_t>(into.size);
            copy_strided(plan, in, into.out, into.size, swap_unit_of(view));
            return n;
        }
        case kernel_id::half_to_float32:
            active_half_kernels().to_float(static_cast<const std::uint16_t*>(in), n, static_cast<float*>(into.out));
            return n;
        case kernel_id::floats_to_16_bit:
            return convert_floats(view.type, into.id, in, n, static_cast<std::uint16_t*>(into.out),
                                  into.bounds.overflow, check);
        case kernel_id::complex_narrow:
            return narrow_pairs_strided(view.c_order_plan(8), in, into.out, !view.native) || !check ? n : 0;
        default: break;
    }
    return visit_numbers(view.kind, static_cast<std::ptrdiff_t>(view.itemsize), in, [&](const auto* values) {
        using source = pointee_t<decltype(values)>;
        if constexpr (std::is_same_v<source, long double>) {
            return std::size_t{0};  // never chosen
        } else if constexpr (std::is_floating_point_v<source>) {
            return store_checked_by_layout<source>(kernel, view, into);
        } else {
            if constexpr (sizeof(source) >= 4) {
                if (kernel == kernel_id::exact_to_float32)
                    return convert_exact_to_float32(values, static_cast<float*>(into.out), n);
            }
            if (kernel == kernel_id::integers_to_16_bit) {
                return integers_to_16_bit_floats(values, n, static_cast<std::uint16_t*>(into.out),
                                                 into.id == dtype_enum::Float16, check);
            }
            return store_checked_by_layout<source>(kernel, view, into);
        }
    });
}

/// The first value of `view` (C order) `bounds` does not hold, read once: the source copied (into `copy`, C order,
/// native), the copy searched.
template <class = void>
maybe<unfit_value> first_unfit_copied(const source_view& view, const value_bounds& bounds, byte_buffer& copy) {
    const std::size_t n = view.count, size = view.itemsize;
    copy = byte_buffer(n * size);
    copy_strided(view.c_order_plan(size), view.data, copy.get(), size, swap_unit_of(view));
    const std::size_t parts = view.kind == 'c' ? 2 : 1;
    return first_unfit_in(view.kind, static_cast<std::ptrdiff_t>(size / parts), copy.get(), n, parts, bounds,
                          view.shown);
}

/// After a kernel stopped short: first_unfit_copied. When the copy holds none (another thread changed the source), the
/// kernel runs again over the copy and nothing is returned.
template <class = void>
maybe<unfit_value> first_unfit_read_once(kernel_id kernel, const source_view& view, const kernel_target& into) {
    const std::size_t n = view.count, size = view.itemsize;
    byte_buffer copy;
    if (maybe<unfit_value> unfit = first_unfit_copied(view, into.bounds, copy)) return unfit;
    source_view same = view;
    same.data = copy.get();
    same.native = same.aligned = true;
    auto step = static_cast<std::ptrdiff_t>(size);
    for (std::size_t i = view.ndim; i-- > 0;) {
        same.strides[i] = step;
        step *= static_cast<std::ptrdiff_t>(std::max<std::size_t>(view.shape[i], 1));
    }
    const bool checked = kernel >= kernel_id::checked_contiguous && kernel <= kernel_id::checked_slab;
    if (run_kernel(checked ? kernel_id::checked_contiguous : kernel, same, into) != n) {
        throw conversion_error("npybridge: the " + std::string(kernel_name(kernel)) +
                               " kernel refused a value its check holds (a defect: please report it)");
    }
    return std::nullopt;
}

}  // namespace detail
}  // namespace npybridge
