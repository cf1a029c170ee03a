// npybridge/detail/array_fill.hpp — a copy's executors: the values read, the planner's facts, a function per route.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/array_layout.hpp>
#include <npybridge/detail/lowbit_values.hpp>
#include <npybridge/detail/value_checks.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/policies.hpp>
#include <npybridge/core/detail/bfloat16_kernels.hpp>
#include <npybridge/core/detail/float_mode.hpp>
#include <npybridge/core/detail/half_kernels.hpp>
#include <npybridge/core/detail/narrowing_kernels.hpp>
#include <npybridge/core/detail/plan.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/python.hpp>
#include <npybridge/core/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// The array's bytes viewed as `descr` (steals it), in the array's byte order.
inline object view_as(PyArrayObject* array, PyArray_Descr* descr) {
    if (!PyArray_ISNOTSWAPPED(array)) {
        PyArray_Descr* swapped = PyArray_DescrNewByteorder(descr, NPY_SWAP);
        Py_DECREF(descr);
        if (swapped == nullptr) throw_numpy_failure("npybridge: a byte-swapped view of the " + array_text(array));
        descr = swapped;
    }
    PyObject* view = PyArray_View(array, descr, nullptr);  // steals descr
    if (view == nullptr) throw_numpy_failure("npybridge: a view of the " + array_text(array));
    return object::steal(view);
}

/// Another library's bfloat16 / intbN array viewed through npybridge's own user dtype, so every cast is npybridge's.
inline object through_own_user_dtype(PyArrayObject* array, const std::optional<numpy_dtype_match>& source) {
    object same = object::borrow(reinterpret_cast<PyObject*>(array));
    if (!source || source->type.info().form != numpy_form::user_dtype || user_dtype_descr_hook == nullptr) return same;
    PyArray_Descr* own = user_dtype_descr_hook(source->type.id(), user_dtype_choice::own);
    if (own == nullptr) return same;
    if (descr_type_num(own) == descr_type_num(PyArray_DESCR(array))) {
        Py_DECREF(own);
        return same;
    }
    return view_as(array, own);
}

/// A bfloat16 array as a new float32 array, widened by bits (DAZ-proof, NaN payloads kept).
inline object bfloat16_as_float32(PyArrayObject* array) {
    const object as_bits = view_as(array, PyArray_DescrFromType(NPY_UINT16));
    const object native =
        contiguous_as(reinterpret_cast<PyArrayObject*>(as_bits.get()), NPY_UINT16, NPY_SAFE_CASTING, "bfloat16 values");
    auto* native_array = reinterpret_cast<PyArrayObject*>(native.get());
    PyObject* floats = PyArray_SimpleNew(PyArray_NDIM(native_array), PyArray_DIMS(native_array), NPY_FLOAT32);
    if (floats == nullptr) throw_numpy_failure("npybridge: widening bfloat16 values");
    object result = object::steal(floats);
    const auto* in = static_cast<const std::uint16_t*>(PyArray_DATA(native_array));
    auto* widened = static_cast<float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(floats)));
    const auto n = static_cast<std::size_t>(PyArray_SIZE(native_array));
    without_gil_if_large(n * sizeof(float), [&] { bfloat16_to_floats(in, n, widened); });
    return result;
}

/// The numpy type holding every value of (kind, itemsize) for fill_bfloat16; -1 for none.
inline int bfloat16_source_type(char kind, npy_intp itemsize) noexcept {
    const npy_intp real = kind == 'c' ? itemsize / 2 : itemsize;
    const int precision = real <= 4 ? 0 : real == 8 ? 1 : 2;
    switch (kind) {
        case 'b': return NPY_BOOL;
        case 'i': return NPY_INT64;
        case 'u': return NPY_UINT64;
        case 'f': return precision == 0 ? NPY_FLOAT32 : precision == 1 ? NPY_DOUBLE : NPY_LONGDOUBLE;
        case 'c': return precision == 0 ? NPY_CFLOAT : precision == 1 ? NPY_CDOUBLE : NPY_CLONGDOUBLE;
        default: return -1;
    }
}

/// Each value (complex: its real part, `step` 2) rounded once to nearest even.
template <class T>
void round_each_to_bfloat16(const void* data, std::size_t step, bfloat16* out, std::size_t count) {
    const auto* in = static_cast<const T*>(data);
    for (std::size_t i = 0; i < count; ++i) out[i] = round_to_bfloat16(in[i * step]);
}

/// Builtin integers (contiguous, aligned, native) into float16 / bfloat16 bits: how many it held; else nothing.
template <class = void>
std::optional<std::size_t> integer_array_to_16_bit_floats(PyArrayObject* array, void* out, bool to_half, bool exact) {
    const char kind = descr_kind(PyArray_DESCR(array));
    if ((kind != 'i' && kind != 'u') || descr_type_num(PyArray_DESCR(array)) >= NPY_USERDEF ||
        !PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISALIGNED(array) || !PyArray_ISNOTSWAPPED(array)) {
        return std::nullopt;
    }
    const npy_intp itemsize = PyArray_ITEMSIZE(array);
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
    return without_gil_if_large(n * static_cast<std::size_t>(itemsize), [&] {
        return visit_numbers(kind, itemsize, PyArray_DATA(array), [&](const auto* in) -> std::size_t {
            if constexpr (std::is_integral_v<std::remove_cv_t<std::remove_pointer_t<decltype(in)>>>) {
                return integers_to_16_bit_floats(in, n, static_cast<std::uint16_t*>(out), to_half, exact);
            } else {
                return 0;  // integers only
            }
        });
    });
}

/// Fills contiguous BFloat16 memory from a builtin-typed array, rounding once whatever the FPU mode (bools: 1 for
/// nonzero; complex: real part, 'wrap' only). False for another kind.
template <class = void>
bool fill_bfloat16(PyArrayObject* array, void* out, std::size_t count) {
    if (integer_array_to_16_bit_floats(array, out, false, false)) return true;
    const int wide = descr_type_num(PyArray_DESCR(array)) >= NPY_USERDEF
                         ? -1
                         : bfloat16_source_type(descr_kind(PyArray_DESCR(array)), PyArray_ITEMSIZE(array));
    if (wide < 0) return false;
    const object values = contiguous_as(array, wide, NPY_SAFE_CASTING, "bfloat16 conversion");
    const void* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(values.get()));
    auto* result = static_cast<bfloat16*>(out);
    const std::size_t step = PyTypeNum_ISCOMPLEX(wide) ? 2 : 1;
    const auto read = static_cast<std::size_t>(PyArray_ITEMSIZE(reinterpret_cast<PyArrayObject*>(values.get())));
    without_gil_if_large(count * read, [&] {
        switch (wide) {
            case NPY_BOOL: {
                const auto* in = static_cast<const npy_bool*>(data);
                for (std::size_t i = 0; i < count; ++i)
                    result[i] = bfloat16{static_cast<std::uint16_t>(in[i] ? 0x3F80u : 0u)};
                break;
            }
            case NPY_INT64:
                integers_to_16_bit_floats(static_cast<const std::int64_t*>(data), count,
                                          reinterpret_cast<std::uint16_t*>(result), false, false);
                break;
            case NPY_UINT64:
                integers_to_16_bit_floats(static_cast<const std::uint64_t*>(data), count,
                                          reinterpret_cast<std::uint16_t*>(result), false, false);
                break;
            case NPY_FLOAT32:
                floats_to_bfloat16(static_cast<const float*>(data), count, reinterpret_cast<std::uint16_t*>(result));
                break;
            case NPY_DOUBLE:
                doubles_to_bfloat16(static_cast<const double*>(data), count, reinterpret_cast<std::uint16_t*>(result));
                break;
            case NPY_CFLOAT: round_each_to_bfloat16<float>(data, step, result, count); break;
            case NPY_CDOUBLE: round_each_to_bfloat16<double>(data, step, result, count); break;
            default: round_each_to_bfloat16<long double>(data, step, result, count); break;
        }
    });
    return true;
}

/// The values a copy reads: a user dtype as plain numbers unless it goes into its own dtype. bfloat16 widens on first
/// use (`get`): a fill into Float32 widens straight into the tensor.
struct copy_values {
    mutable object array;
    std::optional<numpy_dtype_match> match;
    object bfloat16;  ///< not widened yet

    PyArrayObject* get() const {
        if (!array) array = bfloat16_as_float32(reinterpret_cast<PyArrayObject*>(bfloat16.get()));
        return reinterpret_cast<PyArrayObject*>(array.get());
    }
};

inline copy_values values_for(PyArrayObject* array, const std::optional<numpy_dtype_match>& match,
                              const dtype& target) {
    if (const std::optional<ml_dtypes_subbyte> sub = ml_dtypes_subbyte_kind(PyArray_DESCR(array))) {
        return {low_bits_as_bytes(array, sub->bits, sub->is_signed),
                numpy_dtype_match{dtype(sub->is_signed ? dtype_enum::Int8 : dtype_enum::Uint8), false}, object{}};
    }
    if (match && match->type.info().form == numpy_form::user_dtype && match->type.info().is_packed) {
        return {view_as(array, PyArray_DescrFromType(NPY_INT8)), numpy_dtype_match{dtype(dtype_enum::Int8), false},
                object{}};  // intbN
    }
    if (!match || match->type.info().form != numpy_form::user_dtype || match->type == target) {
        return {through_own_user_dtype(array, match), match, object{}};
    }
    const numpy_dtype_match as_float32{dtype(dtype_enum::Float32), false};
    if (PyArray_NDIM(array) == 0)
        return {bfloat16_as_float32(array), as_float32, object{}};  // numpy 1 casts 0-d arrays by value
    return {object{}, as_float32, object::borrow(reinterpret_cast<PyObject*>(array))};
}

/// The facts plan_fill asks of the values.
inline value_facts value_facts_of(const copy_values& values, const dtype& target, narrowing mode) {
    const bool widening = !values.array;  // bfloat16 not widened yet: float32's facts
    auto* array = reinterpret_cast<PyArrayObject*>(widening ? values.bfloat16.get() : values.array.get());
    value_facts facts;
    facts.type = values.match ? &values.match->type : nullptr;
    facts.narrowed = values.match && values.match->narrowed;
    facts.kind = widening                                              ? 'f'
                 : descr_type_num(PyArray_DESCR(array)) >= NPY_USERDEF ? 'V'
                                                                       : descr_kind(PyArray_DESCR(array));
    facts.itemsize = widening ? sizeof(float) : static_cast<std::size_t>(PyArray_ITEMSIZE(array));
    facts.empty = PyArray_SIZE(array) == 0;
    const bool checked_foreign = mode == narrowing::checked && !is_number_kind(facts.kind);
    if ((mode != narrowing::checked || checked_foreign) && !target.info().is_packed &&
        target.info().form != numpy_form::none) {
        const object descr = to_numpy_dtype(target, user_dtype_choice::own);
        auto* to = reinterpret_cast<PyArray_Descr*>(descr.get());
        const auto can_cast = [&](NPY_CASTING casting) {
            if (!widening) return PyArray_CanCastArrayTo(array, to, casting) != 0;
            const object float32 = object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(NPY_FLOAT32)));
            return PyArray_CanCastTypeTo(reinterpret_cast<PyArray_Descr*>(float32.get()), to, casting) != 0;
        };
        facts.numpy_safe = can_cast(NPY_SAFE_CASTING);
        facts.numpy_casts = facts.numpy_safe || can_cast(NPY_UNSAFE_CASTING);
    }
    return facts;
}

/// numpy's cast into `target`'s memory with `into`'s strides (a 0-d array fills a shape-(1,) tensor).
template <class = void>
void cast_into(PyArrayObject* array, const dtype& target, void* out, const tensor_layout& into) {
    object view = array_over(target, out, into, true, user_dtype_choice::own);
    auto* destination = reinterpret_cast<PyArrayObject*>(view.get());
    object source = object::borrow(reinterpret_cast<PyObject*>(array));
    if (PyArray_NDIM(array) != PyArray_NDIM(destination)) {
        PyArray_Dims dims{PyArray_DIMS(destination), PyArray_NDIM(destination)};
        PyObject* reshaped = PyArray_Newshape(array, &dims, NPY_CORDER);
        if (reshaped == nullptr) throw_numpy_failure("npybridge: reshape of a 0-d array");
        source = object::steal(reshaped);
    }
    if (PyArray_CopyInto(destination, reinterpret_cast<PyArrayObject*>(source.get())) != 0) {
        throw_numpy_failure("npybridge: copying " + array_text(array));
    }
}

/// The same values in another layout or byte order: the tiled copier, else numpy's copy.
template <class = void>
void copy_same(PyArrayObject* array, const dtype& target, void* out, const tensor_layout& into) {
    const std::size_t itemsize = target.info().element_size;
    copy_plan plan;
    if (static_cast<std::size_t>(PyArray_ITEMSIZE(array)) == itemsize && copy_plan_of(array, into, itemsize, plan)) {
        without_gil_if_large(plan.count() * itemsize,
                             [&] { copy_strided(plan, PyArray_DATA(array), out, itemsize, swap_unit_of(array)); });
        return;
    }
    cast_into(array, target, out, into);
}

/// 32- and 64-bit integers into Float32, checked while converted (contiguous, aligned, native, fresh memory); else
/// false.
template <class = void>
bool convert_exact_into_float32(PyArrayObject* array, const std::string& array_dtype, void* out,
                                const tensor_layout& layout) {
    const char kind = descr_kind(PyArray_DESCR(array));
    if (!PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISALIGNED(array) || !PyArray_ISNOTSWAPPED(array) ||
        (kind != 'i' && kind != 'u') || PyArray_ITEMSIZE(array) < 4) {
        return false;
    }
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
    const value_bounds bounds = *storage_bounds(info(dtype_enum::Float32));
    const auto convert = [&](const auto* in) {
        const std::size_t bad = without_gil_if_large(
            n * sizeof(*in), [&] { return convert_exact_to_float32(in, static_cast<float*>(out), n); });
        if (bad != n) {
            throw_unfit_value(array_dtype, dtype(dtype_enum::Float32), value_check::exact,
                              unfit_value{bad, inexact_text(in[bad], bounds)}, layout);
        }
    };
    const void* data = PyArray_DATA(array);
    if (kind == 'i') {
        PyArray_ITEMSIZE(array) == 4 ? convert(static_cast<const std::int32_t*>(data))
                                     : convert(static_cast<const std::int64_t*>(data));
    } else {
        PyArray_ITEMSIZE(array) == 4 ? convert(static_cast<const std::uint32_t*>(data))
                                     : convert(static_cast<const std::uint64_t*>(data));
    }
    return true;
}

/// Where a fill writes, and the layout its messages index by.
struct fill_target {
    const dtype& type;
    void* out;
    const tensor_layout& layout;
    lowbit_layout packing = lowbit_layout::compact;
    /// Check every value before writing one (existing memory).
    bool check_first = false;
};

/// An unwidened bfloat16 array (contiguous, aligned, native) widened straight into Float32; else false.
inline bool widen_bfloat16_into(const copy_values& values, const fill_target& into) {
    auto* array = reinterpret_cast<PyArrayObject*>(values.bfloat16.get());
    if (values.array || into.type.id() != dtype_enum::Float32 || !PyArray_IS_C_CONTIGUOUS(array) ||
        !PyArray_ISALIGNED(array) || !PyArray_ISNOTSWAPPED(array)) {
        return false;
    }
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
    const auto* in = static_cast<const std::uint16_t*>(PyArray_DATA(array));
    without_gil_if_large(n * sizeof(float), [&] { bfloat16_to_floats(in, n, static_cast<float*>(into.out)); });
    return true;
}

/// float32 / float64 into BFloat16 or Float16: the index of the first overflow (checked), else n.
template <class Out>
std::size_t convert_floats(int type_num, dtype_enum target, const void* in, std::size_t n, Out* out, double overflow,
                           bool check) {
    if (target == dtype_enum::BFloat16 && type_num == NPY_FLOAT32) {
        return floats_to_bfloat16(static_cast<const float*>(in), n, out, check);
    }
    if (type_num == NPY_DOUBLE) {
        const auto* values = static_cast<const double*>(in);
        return target == dtype_enum::BFloat16 ? doubles_to_bfloat16(values, n, out, check)
                                              : doubles_to_half(values, n, out, check);
    }
    const auto* values = static_cast<const float*>(in);  // F16C, then a scan per block
    return convert_checking_overflow(values, n, out, static_cast<float>(overflow), check,
                                     active_half_kernels().to_half);
}

/// float32 / float64 into BFloat16 and Float16, float16 into Float32, with the overflow test, in one pass (contiguous,
/// aligned, native, fresh memory); else false.
template <class = void>
bool convert_by_kernel(const fill_plan& plan, PyArrayObject* array, const std::string& array_dtype,
                       const fill_target& into) {
    const dtype_enum target = into.type.id();
    const int type_num = descr_type_num(PyArray_DESCR(array));
    const bool to_narrow = (target == dtype_enum::BFloat16 || target == dtype_enum::Float16) &&
                           (type_num == NPY_FLOAT32 || type_num == NPY_DOUBLE);
    const bool widen = target == dtype_enum::Float32 && type_num == NPY_HALF;
    if ((!to_narrow && !widen) || into.check_first || !PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISALIGNED(array) ||
        !PyArray_ISNOTSWAPPED(array) || (plan.check != value_check::none && plan.check != value_check::overflow)) {
        return false;
    }
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
    const void* in = PyArray_DATA(array);
    if (widen) {
        without_gil_if_large(n * 2, [&] {
            active_half_kernels().to_float(static_cast<const std::uint16_t*>(in), n, static_cast<float*>(into.out));
        });
        return true;
    }
    const double overflow = storage_bounds(into.type.info())->overflow;
    const bool check = plan.check == value_check::overflow;
    const std::size_t bad = without_gil_if_large(n * static_cast<std::size_t>(PyArray_ITEMSIZE(array)), [&] {
        return convert_floats(type_num, target, in, n, static_cast<std::uint16_t*>(into.out), overflow, check);
    });
    if (bad != n) {
        const double value = type_num == NPY_DOUBLE ? static_cast<const double*>(in)[bad]
                                                    : static_cast<double>(static_cast<const float*>(in)[bad]);
        throw_unfit_value(array_dtype, into.type, plan.check, unfit_value{bad, number_text(value)}, into.layout);
    }
    return true;
}

/// store_checked into 1-, 2- or 4-byte storage.
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

/// Whether rows are read straight: the last dimension long, stepping least and by at most 32 bytes.
inline bool short_step_rows(PyArrayObject* array) {
    const int ndim = PyArray_NDIM(array);
    if (ndim == 0 || PyArray_DIMS(array)[ndim - 1] < 64) return false;
    const npy_intp step = std::abs(PyArray_STRIDES(array)[ndim - 1]);
    for (int k = 0; k + 1 < ndim; ++k) {
        const npy_intp outer = std::abs(PyArray_STRIDES(array)[k]);
        if (PyArray_DIMS(array)[k] > 1 && outer != 0 && outer < step) return false;
    }
    return step != 0 && step <= 32;
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
std::size_t store_rows_within(PyArrayObject* array, const Source* first, void* out, std::size_t size,
                              const value_bounds& bounds) {
    const int ndim = PyArray_NDIM(array);
    const npy_intp* dims = PyArray_DIMS(array);
    const npy_intp* strides = PyArray_STRIDES(array);
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
    const auto inner = static_cast<std::size_t>(dims[ndim - 1]);
    const std::ptrdiff_t step = strides[ndim - 1];
    npy_intp index[NPY_MAXDIMS] = {};
    std::ptrdiff_t offset = 0;  // to the row's first element
    for (std::size_t row = 0; row * inner < n; ++row) {
        const char* in = reinterpret_cast<const char*>(first) + offset;
        char* to = static_cast<char*>(out) + row * inner * size;
        const std::size_t held = step == static_cast<std::ptrdiff_t>(sizeof(Source))
                                     ? store_within(reinterpret_cast<const Source*>(in), inner, to, size, bounds)
                                     : store_stepped_within<Source>(in, step, inner, to, size, bounds);
        if (held != inner) return 0;
        for (int k = ndim - 2; k >= 0; --k) {  // an odometer over the outer dimensions
            offset += strides[k];
            if (++index[k] < dims[k]) break;
            offset -= strides[k] * dims[k];
            index[k] = 0;
        }
    }
    return n;
}

/// store_gathered_within for a 2-D array whose rows step least through the source (a transpose): blocks of 64 rows
/// by a part of each, so that the copy reads 64 values of each source row it visits, not a slab's few.
template <class Source>
std::size_t store_transposed_within(PyArrayObject* array, const Source* first, void* out, std::size_t size,
                                    const value_bounds& bounds) {
    const npy_intp* strides = PyArray_STRIDES(array);
    const auto rows = static_cast<std::size_t>(PyArray_DIMS(array)[0]),
               cols = static_cast<std::size_t>(PyArray_DIMS(array)[1]);
    constexpr std::size_t block_rows = 64, block_cols = 1024;
    const std::unique_ptr<Source[]> buffer(new Source[block_rows * block_cols]);
    for (std::size_t r = 0; r < rows; r += block_rows) {
        const std::size_t m = std::min(block_rows, rows - r);
        for (std::size_t c = 0; c < cols; c += block_cols) {
            const std::size_t w = std::min(block_cols, cols - c);
            copy_plan plan;
            plan.ndim = 2;
            plan.shape[0] = m;
            plan.shape[1] = w;
            plan.src[0] = strides[0];
            plan.src[1] = strides[1];
            plan.dst[0] = static_cast<std::ptrdiff_t>(w * sizeof(Source));
            plan.dst[1] = sizeof(Source);
            const char* from = reinterpret_cast<const char*>(first) + static_cast<std::ptrdiff_t>(r) * strides[0] +
                               static_cast<std::ptrdiff_t>(c) * strides[1];
            if (plan.simplify()) copy_strided(plan, from, buffer.get(), sizeof(Source));
            for (std::size_t i = 0; i < m; ++i) {
                char* to = static_cast<char*>(out) + ((r + i) * cols + c) * size;
                if (store_within(buffer.get() + i * w, w, to, size, bounds) != w) return 0;
            }
        }
    }
    return rows * cols;
}

/// store_gathered_within for a transpose into narrower storage: each source run of a block stored (tested) into a
/// buffer, then the block transposed into place, moving `size` bytes a value, not the source's.
template <class Source>
std::size_t store_narrowed_transposed(PyArrayObject* array, const Source* first, void* out, std::size_t size,
                                      const value_bounds& bounds) {
    const std::ptrdiff_t step = PyArray_STRIDES(array)[1];
    const auto rows = static_cast<std::size_t>(PyArray_DIMS(array)[0]),
               cols = static_cast<std::size_t>(PyArray_DIMS(array)[1]);
    // Blocks one destination line wide by runs of up to 8192 rows.
    const std::size_t block_cols = 64 / size, block_rows = std::min<std::size_t>(rows, 8192);
    const std::unique_ptr<unsigned char[]> narrowed(new unsigned char[block_rows * block_cols * size]);
    for (std::size_t r = 0; r < rows; r += block_rows) {
        const std::size_t m = std::min(block_rows, rows - r);
        for (std::size_t c = 0; c < cols; c += block_cols) {
            const std::size_t w = std::min(block_cols, cols - c);
            for (std::size_t j = 0; j < w; ++j) {
                const Source* run = reinterpret_cast<const Source*>(reinterpret_cast<const char*>(first) +
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

/// store_within over any strides: slabs copied by the tiled copier into a buffer in cache, tested and stored from
/// there. n when every value is held, else less.
template <class Source>
std::size_t store_gathered_within(PyArrayObject* array, const Source* first, void* out, std::size_t size,
                                  const value_bounds& bounds) {
    const auto ndim = static_cast<std::size_t>(PyArray_NDIM(array));
    const npy_intp* dims = PyArray_DIMS(array);
    const npy_intp* strides = PyArray_STRIDES(array);
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
    if (n == 0) return n;
    if (ndim == 2 && strides[0] == static_cast<npy_intp>(sizeof(Source)) && size < sizeof(Source) && dims[0] >= 64 &&
        dims[1] >= 64 && std::abs(strides[1]) > strides[0])
        return store_narrowed_transposed(array, first, out, size, bounds);
    if (ndim == 2 && dims[0] >= 64 && dims[1] >= 1024 && std::abs(strides[0]) < std::abs(strides[1]))
        return store_transposed_within(array, first, out, size, bounds);
    // A slab: whole trailing dimensions after `k`, and `chunk` indices of dimension k.
    const std::size_t slab = (std::size_t{256} << 10) / sizeof(Source);
    std::size_t k = ndim - 1, below = 1;  // below: elements of one index of dimension k
    while (k > 0 && below * static_cast<std::size_t>(dims[k]) <= slab) below *= static_cast<std::size_t>(dims[k--]);
    const std::size_t chunk = std::max<std::size_t>(1, std::min<std::size_t>(dims[k], slab / below));
    const std::unique_ptr<Source[]> buffer(new Source[chunk * below]);  // every slab overwrites what it reads
    npy_intp index[NPY_MAXDIMS] = {};
    std::ptrdiff_t offset = 0;  // to the first element of the current index of dimensions 0..k-1
    std::size_t written = 0;
    for (;;) {
        for (std::size_t at = 0; at < static_cast<std::size_t>(dims[k]); at += chunk) {
            copy_plan plan;
            plan.ndim = ndim - k;
            std::ptrdiff_t step = sizeof(Source);
            for (std::size_t d = ndim; d-- > k;) {
                plan.shape[d - k] = d == k ? std::min(chunk, static_cast<std::size_t>(dims[k]) - at)
                                           : static_cast<std::size_t>(dims[d]);
                plan.src[d - k] = strides[d];
                plan.dst[d - k] = step;
                step *= static_cast<std::ptrdiff_t>(plan.shape[d - k]);
            }
            const std::size_t count = plan.count();
            const char* from =
                reinterpret_cast<const char*>(first) + offset + static_cast<std::ptrdiff_t>(at) * strides[k];
            if (plan.simplify()) copy_strided(plan, from, buffer.get(), sizeof(Source));
            if (store_within(buffer.get(), count, static_cast<char*>(out) + written * size, size, bounds) != count)
                return 0;
            written += count;
        }
        std::size_t d = k;
        for (; d-- > 0;) {  // an odometer over dimensions 0..k-1
            offset += strides[d];
            if (++index[d] < dims[d]) break;
            offset -= strides[d] * dims[d];
            index[d] = 0;
        }
        if (d == static_cast<std::size_t>(-1)) return n;
    }
}

/// Integers and floats into 1-, 2- or 4-byte integer storage under 'checked', tested as stored (aligned, native, any
/// strides, fresh memory); else false.
template <class = void>
bool convert_checked_into_integers(const fill_plan& plan, PyArrayObject* array, const std::string& array_dtype,
                                   const fill_target& into) {
    const char kind = descr_kind(PyArray_DESCR(array));
    const npy_intp itemsize = PyArray_ITEMSIZE(array);
    const std::size_t size = into.type.info().element_size;
    const bool source_fits = kind == 'i' || kind == 'u' || (kind == 'f' && (itemsize == 4 || itemsize == 8));
    const bool contiguous = PyArray_IS_C_CONTIGUOUS(array);
    const bool rows = short_step_rows(array);
    if ((plan.check != value_check::range && plan.check != value_check::whole) || into.check_first ||
        into.type.info().is_packed || size > 4 || !source_fits || !PyArray_ISALIGNED(array) ||
        !PyArray_ISNOTSWAPPED(array)) {
        return false;
    }
    const value_bounds bounds = *storage_bounds(into.type.info());
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array));
    const std::size_t held = without_gil_if_large(n * static_cast<std::size_t>(itemsize), [&] {
        return visit_numbers(kind, itemsize, PyArray_DATA(array), [&](const auto* in) -> std::size_t {
            if constexpr (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(in)>>, long double>) {
                return 0;  // long double: not taken
            } else {
                if (contiguous) return store_within(in, n, into.out, size, bounds);
                return rows ? store_rows_within(array, in, into.out, size, bounds)
                            : store_gathered_within(array, in, into.out, size, bounds);
            }
        });
    });
    if (held != n) {  // read again to name the value
        throw_unfit_value(array_dtype, into.type, plan.check, *first_unfit_value(array, bounds), into.layout);
    }
    return true;
}

/// complex128 -> Complex64: both parts narrowed as float64 -> float32 by the tiled copier (any strides, either byte
/// order, fresh memory), checked on the way; else false.
template <class = void>
bool narrow_complex_into(const fill_plan& plan, PyArrayObject* array, const std::string& array_dtype,
                         const fill_target& into) {
    copy_plan pairs;
    if (into.type.id() != dtype_enum::Complex64 || into.check_first ||
        descr_type_num(PyArray_DESCR(array)) != NPY_CDOUBLE || !copy_plan_c_order(array, 8, pairs)) {
        return false;
    }
    const bool swap = !PyArray_ISNOTSWAPPED(array);
    const bool all_fit = without_gil_if_large(
        pairs.count() * 16, [&] { return narrow_pairs_strided(pairs, PyArray_DATA(array), into.out, swap); });
    if (!all_fit && plan.check == value_check::overflow) {  // read again to name the value
        throw_unfit_value(array_dtype, into.type, plan.check,
                          *first_unfit_value(array, *storage_bounds(into.type.info())), into.layout);
    }
    return true;
}

/// The plan's value check, before anything is written.
template <class = void>
void check_values(const fill_plan& plan, PyArrayObject* array, const std::string& array_dtype,
                  const fill_target& into) {
    if (plan.check == value_check::none) return;
    const auto unfit = first_unfit_value(array, *storage_bounds(into.type.info()));
    if (!unfit) return;
    if (plan.route == fill_route::same) {
        throw_invalid_code(into.type.info(), unfit->text, index_text(unfit->index, into.layout));
    }
    throw_unfit_value(array_dtype, into.type, plan.check, *unfit, into.layout);
}

/// Integers into Float16 or BFloat16 in one pass, exactness tested as stored (contiguous, aligned, native, fresh
/// memory); else false. Unchecked Float16 only from 8- and 16-bit sources, as NumPy's cast rounds those.
template <class = void>
bool convert_integers_to_16_bit_floats(const fill_plan& plan, PyArrayObject* array, const std::string& array_dtype,
                                       const fill_target& into) {
    const bool to_half = into.type.id() == dtype_enum::Float16;
    const bool exact = plan.check == value_check::exact;
    if ((!to_half && into.type.id() != dtype_enum::BFloat16) || (!exact && plan.check != value_check::none) ||
        (to_half && !exact && PyArray_ITEMSIZE(array) > 2) || into.check_first) {
        return false;
    }
    const std::optional<std::size_t> held = integer_array_to_16_bit_floats(array, into.out, to_half, exact);
    if (!held) return false;
    if (*held != static_cast<std::size_t>(PyArray_SIZE(array))) {  // read again to name the value
        throw_unfit_value(array_dtype, into.type, plan.check,
                          *first_unfit_value(array, *storage_bounds(into.type.info())), into.layout);
    }
    return true;
}

/// The one-pass kernels, each testing values as it stores them; false when none takes this conversion.
template <class = void>
bool convert_in_one_pass(const fill_plan& plan, PyArrayObject* array, const std::string& array_dtype,
                         const fill_target& into) {
    if (static_cast<std::size_t>(PyArray_NDIM(array)) != into.layout.ndim) return false;
    if (plan.check == value_check::exact && !into.check_first && into.type.id() == dtype_enum::Float32 &&
        convert_exact_into_float32(array, array_dtype, into.out, into.layout)) {
        return true;
    }
    return plan.route == fill_route::convert &&
           (convert_by_kernel(plan, array, array_dtype, into) || narrow_complex_into(plan, array, array_dtype, into) ||
            convert_checked_into_integers(plan, array, array_dtype, into) ||
            convert_integers_to_16_bit_floats(plan, array, array_dtype, into));
}

/// Runs a fill plan: the check, then the route; decides nothing. A template, like fill_existing, so a translation unit
/// that converts nothing does not instantiate the kernels.
template <class = void>
void run_fill(const fill_plan& plan, const copy_values& values, const std::string& array_dtype, const fill_target& into,
              narrowing mode) {
    const ieee_float_mode ieee;  // same bits under flush-to-zero
    const dtype& target = into.type;
    if (plan.route == fill_route::refuse) throw_refusal(plan.refused, array_dtype, values.match, target, mode);
    if (plan.route == fill_route::nothing) return;
    if (plan.route == fill_route::same && !into.check_first && widen_bfloat16_into(values, into)) return;
    PyArrayObject* array = values.get();
    const tensor_layout contiguous = tensor_layout::contiguous(into.layout.shape.data(), into.layout.ndim);
    if (plan.route == fill_route::pack) {
        object bytes = lowbit_values(array, target, into.layout);
        pack_values(reinterpret_cast<PyArrayObject*>(bytes.get()), target, into.out, into.packing, into.layout);
        return;
    }
    if (plan.route == fill_route::narrow) {
        narrow_into(array, target, into.out, mode, into.layout, into.check_first);
        return;
    }
    if (convert_in_one_pass(plan, array, array_dtype, into)) return;
    check_values(plan, array, array_dtype, into);
    if (plan.route == fill_route::same) {
        copy_same(array, target, into.out, contiguous);
    } else if (!(target.id() == dtype_enum::BFloat16 && fill_bfloat16(array, into.out, into.layout.count()))) {
        cast_into(array, target, into.out, contiguous);
    }
    if (plan.settle_codes) settle_codes(into.out, target, mode, into.layout);
}

/// A staged tensor's values into the destination (bits around a packed sub-tensor kept). Cannot fail.
template <class = void>
void copy_staged(const tensor& staged, const fill_target& into) {
    const dtype_enum id = into.type.id();
    const std::size_t count = staged.count();
    if (into.type.info().is_packed) {
        if (into.layout.is_dense_packed(id, into.packing)) {
            copy_packed_dense(id, staged.data(), {count, staged.layout().innermost()}, into.out, staged.packing());
            return;
        }
        std::vector<std::uint8_t> values(count);
        unpack(id, staged.data(), {count, staged.layout().innermost()}, values.data(), staged.packing());
        pack_strided(id, values.data(), into.layout.shape.data(), into.layout.strides.data(), into.layout.ndim,
                     into.out);
        return;
    }
    const std::size_t itemsize = into.type.info().element_size;
    copy_plan plan;
    plan.ndim = into.layout.ndim;
    for (std::size_t i = 0; i < plan.ndim; ++i) {
        plan.shape[i] = into.layout.shape[i];
        plan.src[i] = staged.layout().strides[i] * static_cast<std::ptrdiff_t>(itemsize);
        plan.dst[i] = into.layout.strides[i] * static_cast<std::ptrdiff_t>(itemsize);
    }
    without_gil_if_large(count * itemsize, [&] { copy_strided(plan, staged.data(), into.out, itemsize); });
}

/// A fill plan into an existing tensor: straight in when nothing can fail halfway, else staged so an error leaves it as
/// it was.
template <class = void>
void fill_existing(const fill_plan& plan, const copy_values& values, const std::string& array_dtype,
                   const fill_target& into, narrowing mode) {
    const ieee_float_mode ieee;
    PyArrayObject* array = values.get();
    const dtype& target = into.type;
    if (plan.route == fill_route::refuse) throw_refusal(plan.refused, array_dtype, values.match, target, mode);
    if (plan.route == fill_route::nothing) return;
    const bool packed = target.info().is_packed;
    const bool wraps_codes = plan.settle_codes && mode == narrowing::wrap;
    const byte_span span = packed ? byte_span{into.out, 0} : span_of(into.out, into.layout, target.info().element_size);
    const bool overlaps = !packed && array_overlaps(array, span.begin, span.bytes);
    if (plan.route == fill_route::same && !wraps_codes) {
        check_values(plan, array, array_dtype, into);
        overlaps ? cast_into(array, target, into.out, into.layout) : copy_same(array, target, into.out, into.layout);
        return;
    }
    if (!packed && !wraps_codes && !overlaps && into.layout.is_contiguous()) {
        run_fill(plan, values, array_dtype, into, mode);
        return;
    }
    const tensor staged = tensor::empty(target, into.layout.shape.data(), into.layout.ndim, into.packing);
    run_fill(plan, values, array_dtype, fill_target{target, staged.data(), staged.layout(), into.packing}, mode);
    copy_staged(staged, into);
}

/// The array for an object: itself, or numpy's conversion (numbers only).
inline object as_array(PyObject* obj) {
    const bool given = PyArray_Check(obj);
    PyObject* array = given ? obj : PyArray_FromAny(obj, nullptr, 0, 0, 0, nullptr);
    if (array == nullptr) throw_numpy_failure("npybridge: cannot make an array from " + safe_repr(obj));
    object made = given ? object::borrow(obj) : object::steal(array);
    const char kind = descr_kind(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(array)));
    if (kind == 'O' || kind == 'U' || kind == 'S') {
        throw dtype_error(given ? "expected an array of numbers, got a numpy " +
                                      descr_text(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(array))) + " array"
                                : "expected an array-like of numbers, got " + std::string(Py_TYPE(obj)->tp_name));
    }
    return made;
}

}  // namespace detail
}  // namespace npybridge
