// npybridge/detail/array_fill.hpp — a copy: the values read, the facts the planner and the kernel table ask, one dispatch.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/detail/array_layout.hpp>
#include <npybridge/detail/lowbit_values.hpp>
#include <npybridge/detail/value_checks.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/detail/numpy_dtypes.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/core/detail/bfloat16_kernels.hpp>
#include <npybridge/core/detail/float_mode.hpp>
#include <npybridge/core/detail/half_kernels.hpp>
#include <npybridge/core/detail/narrowing_kernels.hpp>
#include <npybridge/core/detail/fill_kernels.hpp>
#include <npybridge/core/detail/kernel_table.hpp>
#include <npybridge/core/detail/plan.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/python.hpp>
#include <npybridge/core/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

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
inline object through_own_user_dtype(PyArrayObject* array, const maybe<numpy_dtype_match>& source) {
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

/// The numpy type holding every value of (kind, itemsize) for round_into_bfloat16; -1 for none.
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

/// BFloat16 memory (C order) from a builtin-typed array of numbers, rounding once whatever the FPU mode (bools: 1 for
/// nonzero; complex: real part, 'wrap' only).
template <class = void>
void round_into_bfloat16(PyArrayObject* array, void* out, std::size_t count) {
    const int wide = bfloat16_source_type(descr_kind(PyArray_DESCR(array)), PyArray_ITEMSIZE(array));
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
}

/// The values a copy reads: a user dtype as plain numbers unless it goes into its own dtype. bfloat16 widens on first
/// use (`get`): a fill into Float32 widens straight into the tensor.
struct copy_values {
    mutable object array;
    maybe<numpy_dtype_match> match;
    object bfloat16;  ///< not widened yet
    /// The caller's array when `array` stands in for it: NumPy's cast answers are its.
    object source;

    PyArrayObject* get() const {
        if (!array) array = bfloat16_as_float32(reinterpret_cast<PyArrayObject*>(bfloat16.get()));
        return reinterpret_cast<PyArrayObject*>(array.get());
    }

    /// Makes the values a private copy (widened bfloat16 is one): a check before its kernel and the kernel read the same.
    void read_once() const {
        if (!bfloat16 && PyArray_SIZE(get()) > 1) array = private_copy(get(), "npybridge: copying the values to check");
    }

    /// The type messages show the values in: bfloat16 for widened bfloat16, else the values' own.
    maybe<source_type> shown() const { return bfloat16 ? maybe<source_type>(source_type::bfloat16) : std::nullopt; }
};

inline copy_values values_for(PyArrayObject* array, const maybe<numpy_dtype_match>& match, const dtype& target) {
    if (const maybe<ml_dtypes_subbyte> sub = ml_dtypes_subbyte_kind(PyArray_DESCR(array))) {
        return {low_bits_as_bytes(array, sub->bits, sub->is_signed),
                numpy_dtype_match{dtype(sub->is_signed ? dtype_enum::Int8 : dtype_enum::Uint8), false}, object{},
                object::borrow(reinterpret_cast<PyObject*>(array))};
    }
    if (match && match->type.info().form == numpy_form::user_dtype && match->type.info().is_packed) {
        return {view_as(array, PyArray_DescrFromType(NPY_INT8)), numpy_dtype_match{dtype(dtype_enum::Int8), false},
                object{}, object::borrow(reinterpret_cast<PyObject*>(array))};  // intbN
    }
    if (!match || match->type.info().form != numpy_form::user_dtype || match->type == target) {
        return {through_own_user_dtype(array, match), match, object{}, object{}};
    }
    const numpy_dtype_match as_float32{dtype(dtype_enum::Float32), false};
    if (PyArray_NDIM(array) == 0)
        return {bfloat16_as_float32(array), as_float32, object{}, object{}};  // numpy 1 casts 0-d arrays by value
    return {object{}, as_float32, object::borrow(reinterpret_cast<PyObject*>(array)), object{}};
}

/// The facts plan_fill asks of the values.
inline value_facts value_facts_of(const copy_values& values, const dtype& target, narrowing mode) {
    const bool widening = !values.array;  // bfloat16 not widened yet: float32's facts
    auto* array = reinterpret_cast<PyArrayObject*>(widening ? values.bfloat16.get() : values.array.get());
    value_facts facts;
    // Under 'reject' a stand-in's dtype is not the caller's: NumPy's answer for the source decides.
    facts.type = values.match && !(values.source && mode == narrowing::reject) ? &values.match->type : nullptr;
    facts.narrowed = values.match && values.match->narrowed;
    facts.kind = widening                                              ? 'f'
                 : descr_type_num(PyArray_DESCR(array)) >= NPY_USERDEF ? 'V'
                                                                       : descr_kind(PyArray_DESCR(array));
    facts.itemsize = widening ? sizeof(float) : static_cast<std::size_t>(PyArray_ITEMSIZE(array));
    facts.empty = PyArray_SIZE(array) == 0;
    const bool checked_foreign = mode == narrowing::checked && !is_number_kind(facts.kind);
    if ((mode != narrowing::checked || checked_foreign) && !target.info().is_packed &&
        target.info().form != numpy_form::none) {
        const object descr = numpy_dtype_of(target, user_dtype_choice::own);
        auto* to = reinterpret_cast<PyArray_Descr*>(descr.get());
        auto* asked = values.source ? reinterpret_cast<PyArrayObject*>(values.source.get()) : array;
        const auto can_cast = [&](NPY_CASTING casting) {
            if (!widening) return PyArray_CanCastArrayTo(asked, to, casting) != 0;
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

/// Where a fill writes, and the layout its messages index by.
struct fill_target {
    const dtype& type;
    void* out;
    const tensor_layout& layout;
    lowbit_layout packing = lowbit_layout::compact;
    /// Check every value before writing one (existing memory).
    bool check_first = false;
};

/// The plan's value check, before anything is written: of a private copy of the values, which the kernel then reads.
template <class = void>
void check_values(const fill_plan& plan, const copy_values& values, const std::string& array_dtype,
                  const fill_target& into) {
    if (plan.check == value_check::none) return;
    values.read_once();
    const auto unfit = first_unfit_value(values.get(), *storage_bounds(into.type.info()), values.shown());
    if (!unfit) return;
    if (plan.route == fill_route::same) {
        throw_invalid_code(into.type.info(), unfit->text, index_text(unfit->index, into.layout));
    }
    throw_unfit_value(array_dtype, into.type, plan.check, *unfit, into.layout);
}

/// The kernel table's facts of a plan, the values and where they go (`apart`: the values do not meet it).
template <class = void>
kernel_facts kernel_facts_of(const fill_plan& plan, const source_view& view, const fill_target& into,
                             bool apart) noexcept {
    const dtype_info& to = into.type.info();
    kernel_facts facts;
    facts.route = plan.route;
    facts.check = plan.check;
    facts.source = view.type;
    facts.layout = classify(view, to.element_size);
    facts.target = target_class_of(to);
    facts.native_aligned = view.native && view.aligned;
    facts.same_size = view.itemsize == to.element_size;
    facts.fresh = !into.check_first;
    facts.apart = apart;
    return facts;
}

/// The kernel the table names for the values, and the view it reads (bfloat16 widened first unless the table widens
/// it straight into the tensor).
struct chosen_kernel {
    kernel_id kernel;
    source_view view;
};
template <class = void>
chosen_kernel choose_kernel(const fill_plan& plan, const copy_values& values, const fill_target& into, bool apart) {
    // The values as the kernels read them, bfloat16 not widened yet.
    chosen_kernel chosen{
        kernel_id::refuse,
        source_view_of(reinterpret_cast<PyArrayObject*>((values.array ? values.array : values.bfloat16).get()))};
    if (!values.array) chosen.view.type = chosen.view.shown = source_type::bfloat16;
    chosen.kernel = plan_kernel(kernel_facts_of(plan, chosen.view, into, apart));
    if (chosen.kernel == kernel_id::widen_first) {
        chosen.view = source_view_of(values.get());
        chosen.view.shown = source_type::bfloat16;
        chosen.kernel = plan_kernel(kernel_facts_of(plan, chosen.view, into, apart));
    }
    return chosen;
}

/// check_values (of a private copy), then the kernel for that copy. Out of line: run_fill stays small.
template <class = void>
[[gnu::noinline]] chosen_kernel checked_private_copy(const fill_plan& plan, const copy_values& values,
                                                     const std::string& array_dtype, const fill_target& into) {
    check_values(plan, values, array_dtype, into);
    return choose_kernel(plan, values, into, true);
}

/// Runs a kernel that reads without Python, the GIL released from 1 MiB; an unfit value named from one reading.
template <class = void>
void run_native(const chosen_kernel& chosen, const fill_plan& plan, const fill_target& into,
                const tensor_layout& written, const std::string& array_dtype) {
    const dtype_info& to = into.type.info();
    const kernel_target target{into.out,        to.id,
                               to.element_size, written,
                               plan.check,      plan.check == value_check::none ? value_bounds{} : *storage_bounds(to)};
    const source_view& view = chosen.view;
    maybe<unfit_value> unfit;
    without_gil_if_large(view.count * std::max(view.itemsize, to.element_size), [&] {
        if (run_kernel(chosen.kernel, view, target) != view.count)
            unfit = first_unfit_read_once(chosen.kernel, view, target);
    });
    if (unfit) throw_unfit_value(array_dtype, into.type, plan.check, *unfit, into.layout);
}

/// Runs a fill plan with the kernel the table names (C order into `into.out`): one dispatch, decides nothing.
template <class = void>
void run_fill(const fill_plan& plan, const copy_values& values, const std::string& array_dtype, const fill_target& into,
              narrowing mode) {
    const ieee_float_mode ieee;  // same bits under flush-to-zero
    const dtype& target = into.type;
    if (plan.route == fill_route::refuse) throw_refusal(plan.refused, array_dtype, values.match, target, mode);
    if (plan.route == fill_route::nothing) return;
    chosen_kernel chosen = choose_kernel(plan, values, into, true);
    if (checks_first(chosen.kernel) && plan.check != value_check::none) {
        chosen = checked_private_copy(plan, values, array_dtype, into);
    }
    const tensor_layout contiguous = tensor_layout::contiguous(into.layout.shape.data(), into.layout.ndim);
    switch (chosen.kernel) {
        case kernel_id::nothing:
        case kernel_id::refuse:
        case kernel_id::widen_first: return;  // answered above
        case kernel_id::pack_bytes: {
            object bytes = lowbit_values(values.get(), target, into.layout);
            pack_values(reinterpret_cast<PyArrayObject*>(bytes.get()), target, into.out, into.packing, into.layout);
            return;
        }
        case kernel_id::narrow_wide:
            narrow_into(values.get(), target, into.out, mode, into.layout, into.check_first);
            return;
        case kernel_id::round_to_bfloat16: round_into_bfloat16(values.get(), into.out, into.layout.count()); break;
        case kernel_id::numpy_cast: cast_into(values.get(), target, into.out, contiguous); break;
        default: run_native(chosen, plan, into, contiguous, array_dtype); break;
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
        const byte_buffer values(count);
        unpack(id, staged.data(), {count, staged.layout().innermost()}, values.get(), staged.packing());
        pack_strided(id, values.get(), into.layout.shape.data(), into.layout.strides.data(), into.layout.ndim,
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
    const dtype& target = into.type;
    if (plan.route == fill_route::refuse) throw_refusal(plan.refused, array_dtype, values.match, target, mode);
    if (plan.route == fill_route::nothing) return;
    const bool packed = target.info().is_packed;
    const bool wraps_codes = plan.settle_codes && mode == narrowing::wrap;
    const byte_span span = packed ? byte_span{into.out, 0} : span_of(into.out, into.layout, target.info().element_size);
    const bool same = plan.route == fill_route::same && !wraps_codes;  // into the tensor's own strides
    if (same) check_values(plan, values, array_dtype, into);           // a private copy when it checks
    const bool overlaps = !packed && array_overlaps(values.get(), span.begin, span.bytes);
    if (same) {
        const chosen_kernel chosen = choose_kernel(plan, values, into, !overlaps);
        if (chosen.kernel == kernel_id::copy_tiled) {
            run_native(chosen, plan, into, into.layout, array_dtype);
        } else {
            cast_into(values.get(), target, into.out, into.layout);
        }
        return;
    }
    // Settling codes may refuse after the cast: staged.
    if (!packed && !plan.settle_codes && !overlaps && into.layout.is_contiguous()) {
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
        throw_not_numbers(given ? nullptr : obj, reinterpret_cast<PyArrayObject*>(array));
    }
    return made;
}

}  // namespace detail
}  // namespace npybridge
