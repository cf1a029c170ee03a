// npybridge/convert.hpp — ndarray ↔ tensor: borrow and share when memory can be shared, copy (and say why) when not.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/array_layout.hpp>
#include <npybridge/detail/lowbit_values.hpp>
#include <npybridge/detail/value_checks.hpp>
#include <npybridge/detail/array_fill.hpp>
#include <npybridge/core/detail/plan.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/policies.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/python_owner.hpp>
#include <npybridge/core/tensor.hpp>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Most dimensions a Tensor takes from an array: its adapter's limit, capped by tensor_layout's.
template <class Tensor>
inline constexpr std::size_t ndim_limit =
    tensor_adapter<Tensor>::max_ndim < NPYBRIDGE_MAX_NDIM ? tensor_adapter<Tensor>::max_ndim : NPYBRIDGE_MAX_NDIM;

/// layout_of_array for a Tensor, throwing when the array has more dimensions than it holds.
template <class Tensor>
bool checked_layout(PyArrayObject* array, tensor_layout& layout) {
    if (static_cast<std::size_t>(PyArray_NDIM(array)) > ndim_limit<Tensor>) {
        throw conversion_error(array_text(array) + " has " + std::to_string(PyArray_NDIM(array)) +
                               " dimensions; the tensor type holds at most " + std::to_string(ndim_limit<Tensor>));
    }
    return layout_of_array(array, tensor_adapter<Tensor>::has_scalar, layout);
}

/// The planner's first case over an ndarray: its plain dtype (or MegEngine metadata parsed before), flags and
/// layout gathered without a copy, and borrows_at_once asked. Fills `layout` and returns the dtype (it lives in
/// a table or the dtype cache: copy it at once), or nullptr to let plan_borrow decide and give its reasons.
template <class Tensor>
[[gnu::always_inline]] inline const dtype* quick_borrow(PyArrayObject* array, const to_tensor_options& options,
                                                        tensor_layout& layout) {
    using adapter = tensor_adapter<Tensor>;
    PyArray_Descr* descr = PyArray_DESCR(array);
    const dtype* type;
    if (descr_metadata(descr) == nullptr) {
        const int type_num = descr_type_num(descr);
        if (type_num < 0 || type_num >= numpy_builtin_type_count) return nullptr;
        const std::size_t row = rows_by_type_num[static_cast<std::size_t>(type_num)];
        if (row == dtype_count) return nullptr;
        type = &dtype::of_row(row);
    } else {
        const auto* parsed = parsed_descrs().find(descr, descr_pointer_hash{}(descr));
        if (parsed == nullptr || !parsed->value) return nullptr;
        type = &*parsed->value;
    }
    constexpr int plain = NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE;
    const bool plain_memory = (PyArray_FLAGS(array) & plain) == plain && PyArray_ISNOTSWAPPED(array);
    if (!plain_memory || static_cast<std::size_t>(PyArray_NDIM(array)) > ndim_limit<Tensor>) return nullptr;
    const bool accepted = layout_of_array(array, adapter::has_scalar, layout) && adapter::accepts_strides(layout);
    return borrows_at_once(type, true, accepted, options) ? type : nullptr;
}

/// A fresh tensor from the adapter's make, checked to be dense (C-contiguous;
/// packed: compact, or row-aligned at padded strides), since conversions fill
/// it as one run of bytes. The packing the tensor reports is what counts.
template <class Tensor>
Tensor make_dense(const dtype& type, const tensor_layout& contiguous, lowbit_layout packing,
                  const placement_t<Tensor>& where) {
    using adapter = tensor_adapter<Tensor>;
    Tensor made = adapter_make_at<Tensor>(type, contiguous, packing, where);
    const tensor_layout layout = adapter::layout_of(made);
    bool same_shape = layout.ndim == contiguous.ndim;
    for (std::size_t i = 0; same_shape && i < layout.ndim; ++i) same_shape = layout.shape[i] == contiguous.shape[i];
    const bool dense = type.info().is_packed ? layout.is_dense_packed(type.id(), adapter::packed_layout(made))
                                             : layout.is_contiguous();
    if (!same_shape || !dense) {
        throw conversion_error("tensor_adapter::make gave a " + type.to_string() + " tensor of shape " +
                               layout.shape_text() + " and strides " + tuple_text(layout.strides.data(), layout.ndim) +
                               " for shape " + contiguous.shape_text() +
                               "; conversions need a dense tensor of the shape asked for");
    }
    return made;
}

/// The array's dtype as npybridge reads it under the options' narrowing; nullopt when it has none and the
/// options name the tensor's dtype (numpy may still cast to it: plan_fill decides).
inline std::optional<numpy_dtype_match> match_of(PyArrayObject* array, const to_tensor_options& options) {
    try {
        return from_numpy_dtype(PyArray_DESCR(array), options.narrow);
    } catch (const metadata_error&) {
        throw;
    } catch (const dtype_error&) {
        if (!options.type) throw;
        return std::nullopt;
    }
}

/// The facts plan_borrow asks of an ndarray's memory.
template <class Tensor>
memory_facts memory_facts_of(PyArrayObject* array, const std::optional<numpy_dtype_match>& source,
                             const tensor_layout& layout, bool whole_elements) {
    memory_facts facts;
    facts.type = source ? &source->type : nullptr;
    facts.narrowed = source && source->narrowed;
    facts.native_order = PyArray_ISNOTSWAPPED(array);
    facts.whole_elements = whole_elements;
    facts.aligned = PyArray_ISALIGNED(array);
    facts.strides_accepted = tensor_adapter<Tensor>::accepts_strides(layout);
    facts.writable = PyArray_ISWRITEABLE(array);
    return facts;
}

/// A fresh tensor of `target` filled from the array as plan_fill says.
template <class Tensor>
to_tensor_result<Tensor> copied(PyArrayObject* array, const std::optional<numpy_dtype_match>& source,
                                const dtype& target, const tensor_layout& layout, const to_tensor_options& options,
                                const placement_t<Tensor>& where, std::string reason) {
    using adapter = tensor_adapter<Tensor>;
    const copy_values values = values_for(array, source, target);
    const fill_plan plan = plan_fill(value_facts_of(values, target, options.narrow), target, options.narrow);
    const std::string array_dtype = descr_text(PyArray_DESCR(array));
    if (plan.route == fill_route::refuse)
        throw_refusal(plan.refused, array_dtype, values.match, target, options.narrow);
    const tensor_layout contiguous = tensor_layout::contiguous(layout.shape.data(), layout.ndim);
    Tensor made = make_dense<Tensor>(target, contiguous, options.layout.value_or(default_layout(target.id())), where);
    const lowbit_layout packing = target.info().is_packed ? adapter::packed_layout(made) : lowbit_layout::compact;
    run_fill(plan, values, array_dtype, fill_target{target, adapter::data(made), layout, packing}, options.narrow);
    return to_tensor_result<Tensor>(std::move(made), false, std::move(reason));
}

/// Everything but the common borrow: array-likes, dtype changes, copies with their reasons. Out of line, so the
/// common borrow's frame stays small.
template <class Tensor>
[[gnu::noinline]] to_tensor_result<Tensor> to_tensor_general(PyObject* obj, const to_tensor_options& options,
                                                             const placement_t<Tensor>& where) {
    using adapter = tensor_adapter<Tensor>;
    object owner = as_array(obj);
    auto* array = reinterpret_cast<PyArrayObject*>(owner.get());
    tensor_layout layout;
    const bool whole_elements = checked_layout<Tensor>(array, layout);
    const std::optional<numpy_dtype_match> source = match_of(array, options);
    const dtype target = options.type ? *options.type : source->type;
    memory_facts facts = memory_facts_of<Tensor>(array, source, layout, whole_elements);
    std::optional<unfit_value> bad_code;
    if (options.policy != borrow_policy::copy && checks_codes(facts, target)) {
        bad_code = first_unfit_value(array, *storage_bounds(target.info()));
        facts.codes_fit = !bad_code;
    }
    borrow_verdict verdict = plan_borrow(facts, target, options, read_only_marking::unknown);
    if (verdict.quantized != refusal::none) {
        throw_refusal(verdict.quantized, descr_text(PyArray_DESCR(array)), source, target, options.narrow);
    }
    if (verdict.invalid_code) throw_invalid_code(target.info(), bad_code->text, index_text(bad_code->index, layout));
    if (verdict.cause == copy_cause::none) {
        const bool writable = facts.writable;
        to_tensor_result<Tensor> borrowed{
            std::in_place,
            [&] {
                return adapter_borrow_at<Tensor>(
                    target, PyArray_DATA(array), layout, writable,
                    options.keep_alive ? python_owner(owner.get(), !writable) : owner_handle(), where);
            },
            true};
        if (!verdict.check_marking || !adapter::writable(borrowed.tensor)) return borrowed;
        verdict = plan_borrow(facts, target, options, read_only_marking::cannot);
    }
    std::string reason = copy_reason_text(verdict.cause, array, source, target, layout, bad_code);
    if (verdict.refused) throw_must_borrow(array, reason);
    return copied<Tensor>(array, source, target, layout, options, where, std::move(reason));
}

}  // namespace detail

/// numpy (or anything numpy can make an array of) → Tensor. Requires the GIL.
/// Throws conversion_error (and its subclasses) naming the dtype, shape,
/// index or flag at fault; on error nothing is left behind.
template <class Tensor = tensor>
to_tensor_result<Tensor> to_tensor(PyObject* obj, const to_tensor_options& options = {},
                                   const placement_t<Tensor>& where = default_placement<Tensor>()) {
    static_assert(check_adapter<Tensor>());
    if (options.policy != borrow_policy::copy && PyArray_Check(obj)) {
        auto* array = reinterpret_cast<PyArrayObject*>(obj);
        tensor_layout layout;
        if (const dtype* type = detail::quick_borrow<Tensor>(array, options, layout)) {
            return {std::in_place,
                    [&] {
                        return detail::adapter_borrow_at<Tensor>(
                            *type, PyArray_DATA(array), layout, true,
                            options.keep_alive ? detail::python_owner(obj, false) : owner_handle(), where);
                    },
                    true};
        }
    }
    return detail::to_tensor_general<Tensor>(obj, options, where);
}

namespace detail {

/// to_array of a packed tensor: unpacked into a new array (out of line, so
/// sharing keeps a small frame).
template <class Tensor>
[[gnu::noinline]] object unpacked_array(const Tensor& source, const dtype& type, const tensor_layout& layout,
                                        share_policy policy, lowbit_format format) {
    using adapter = tensor_adapter<Tensor>;
    const dtype_info& entry = type.info();
    if (policy == share_policy::must_share) {
        throw conversion_error("must_share: " + std::string(entry.name) + " is packed (" + std::to_string(entry.bits) +
                               " bits per element); numpy needs one byte per element, so it can only be copied");
    }
    if (entry.form == numpy_form::none) {
        throw dtype_error(std::string(entry.name) + " has no numpy form (MegEngine gives it none either)");
    }
    const bool ml_4bit = format == lowbit_format::ml_dtypes;
    if (ml_4bit && (entry.bits != 4 || entry.coding == lowbit_coding::odd)) {
        const std::string four_bit_integers =
            dtype_names([](const dtype_info& row) { return row.bits == 4 && row.coding != lowbit_coding::odd; });
        throw dtype_error(std::string(entry.name) + ": lowbit_format='ml_dtypes' holds 4-bit integers (int4 / uint4: " +
                          four_bit_integers + "); " + std::string(entry.name) + " holds " + valid_set_text(entry));
    }
    npy_intp dims[NPYBRIDGE_MAX_NDIM + 1];
    for (std::size_t i = 0; i < layout.ndim; ++i) dims[i] = static_cast<npy_intp>(layout.shape[i]);
    object descr;
    if (ml_4bit) {
        descr = ml_dtypes_4bit_descr(entry.coding == lowbit_coding::twos_complement);
        object quantized = to_numpy_dtype(type);  // the same mgb_dtype metadata
        PyObject* metadata = descr_metadata(reinterpret_cast<PyArray_Descr*>(quantized.get()));
        Py_XINCREF(metadata);
        set_metadata(reinterpret_cast<PyArray_Descr*>(descr.get()), metadata);
    } else {
        PyArray_Descr* user = !type.is_quantized() && user_dtype_descr_hook
                                  ? user_dtype_descr_hook(entry.id, user_dtype_choice::preferred)
                                  : nullptr;
        descr = type.is_quantized() ? to_numpy_dtype(type)
                : user != nullptr   ? object::steal(reinterpret_cast<PyObject*>(user))  // intbN
                                    : object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(NPY_INT8)));
    }
    PyObject* array = PyArray_NewFromDescr(&PyArray_Type, reinterpret_cast<PyArray_Descr*>(descr.release()),
                                           static_cast<int>(layout.ndim), dims, nullptr, nullptr, 0, nullptr);
    if (array == nullptr) throw_numpy_failure("npybridge: allocating the unpacked array");
    object result = object::steal(array);
    auto* out = static_cast<std::uint8_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(array)));
    const std::size_t count = layout.count();
    const lowbit_layout packing = adapter::packed_layout(source);
    without_gil_if_large(count, [&] {
        if (layout.is_dense_packed(entry.id, packing)) {
            unpack(entry.id, adapter::data(source), {count, layout.innermost()}, out, packing);
        } else {  // a sub-tensor: each element from its strides
            unpack_strided(entry.id, adapter::data(source), layout.shape.data(), layout.strides.data(), layout.ndim,
                           out);
        }
        if (ml_4bit) {
            for (std::size_t i = 0; i < count; ++i) out[i] &= 0x0F;  // ml_dtypes keeps the upper bits zero
        }
    });
    return result;
}

/// Whether tensor_adapter<Tensor> can move the owner out of a tensor (optional member take_owner).
template <class Tensor, class = void>
struct can_take_owner : std::false_type {};
template <class Tensor>
struct can_take_owner<Tensor, std::void_t<decltype(tensor_adapter<Tensor>::take_owner(std::declval<Tensor&>()))>>
    : std::true_type {};

/// to_array for both overloads. `consumed` (the rvalue overload) lets a shared
/// array take over the tensor's owner instead of copying it: no atomic count
/// update now, none when the array goes. It is taken only once the array
/// exists, so a failure before that leaves the tensor as it was.
template <class Tensor>
object to_array(const Tensor& source, share_policy policy, Tensor* consumed, lowbit_format format) {
    using adapter = tensor_adapter<Tensor>;
    const dtype type = adapter::dtype_of(source);
    const tensor_layout layout = adapter::layout_of(source);
    if (type.info().is_packed) return unpacked_array(source, type, layout, policy, format);
    // A dtype without a numpy form (Byte) fails in array_over's to_numpy, naming it.
    object view =
        array_over(type, adapter::data(source), layout, adapter::writable(source), user_dtype_choice::preferred);
    if (policy == share_policy::copy) {
        auto* from = reinterpret_cast<PyArrayObject*>(view.get());
        if (layout.is_contiguous()) {
            PyObject* copied = PyArray_NewCopy(from, NPY_CORDER);
            if (copied == nullptr) throw_numpy_failure("npybridge: copying the tensor");
            return object::steal(copied);
        }
        return contiguous_copy(from, "npybridge: copying the tensor");  // strided: the tiled copier
    }
    owner_handle owner;
    if constexpr (can_take_owner<Tensor>::value) {
        owner = consumed != nullptr ? adapter::take_owner(*consumed) : adapter::owner(source);
    } else {
        owner = adapter::owner(source);
    }
    if (owner.read_only()) {  // borrowed read-only memory stays read-only, whatever the tensor type says
        PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(view.get()), NPY_ARRAY_WRITEABLE);
    }
    object base = base_object_for(std::move(owner));
    if (base && PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(view.get()), base.release()) != 0) {
        throw_numpy_failure("npybridge: could not attach the tensor's owner to the array");
    }
    return view;
}

}  // namespace detail

/// Tensor → numpy. Requires the GIL. A shared array keeps the tensor's
/// storage alive through its base object; a packed tensor is unpacked into a
/// new array (one byte per element, int8 or uint8, with metadata when
/// quantized; or ml_dtypes' int4 / uint4 with lowbit_format::ml_dtypes).
template <class Tensor>
object to_array(const Tensor& source, share_policy policy = share_policy::try_share,
                lowbit_format format = lowbit_format::int8) {
    static_assert(check_adapter<Tensor>());
    return detail::to_array<Tensor>(source, policy, nullptr, format);
}

/// The same for a tensor you are done with (`to_array(std::move(t))`): when
/// the adapter has take_owner (npybridge::tensor's does), the shared array
/// takes the tensor's owner over, and the tensor is left empty; otherwise
/// this is the copy above. (If making the array's base object runs out of
/// memory after that, the error comes with the tensor already released.)
template <class Tensor, class = std::enable_if_t<!std::is_reference_v<Tensor> && !std::is_const_v<Tensor>>>
object to_array(Tensor&& source, share_policy policy = share_policy::try_share,
                lowbit_format format = lowbit_format::int8) {
    static_assert(check_adapter<Tensor>());
    return detail::to_array<Tensor>(source, policy, &source, format);
}

/// Copies the array into an existing tensor of the same shape; values convert to the tensor's dtype by
/// to_tensor's rules (the same planner, the options' narrowing). On any error the tensor is left as it was.
template <class Tensor>
void copy_into(PyObject* obj, Tensor& destination, const to_tensor_options& options = {}) {
    static_assert(check_adapter<Tensor>());
    using adapter = tensor_adapter<Tensor>;
    object owner = detail::as_array(obj);
    auto* array = reinterpret_cast<PyArrayObject*>(owner.get());
    tensor_layout layout;
    detail::checked_layout<Tensor>(array, layout);  // copied, never borrowed: partial strides do not matter
    const dtype target = adapter::dtype_of(destination);
    const tensor_layout into = adapter::layout_of(destination);
    if (!is_writable(destination)) throw conversion_error("copy_into: the destination tensor is read-only");
    bool same_shape = into.ndim == layout.ndim;
    for (std::size_t i = 0; same_shape && i < layout.ndim; ++i) same_shape = into.shape[i] == layout.shape[i];
    if (!same_shape) {
        throw conversion_error("copy_into: the " + detail::array_text(array) + " does not match the tensor's shape " +
                               into.shape_text());
    }
    to_tensor_options as_target = options;
    as_target.type = target;
    const detail::copy_values values = detail::values_for(array, detail::match_of(array, as_target), target);
    const detail::fill_plan plan =
        detail::plan_fill(detail::value_facts_of(values, target, options.narrow), target, options.narrow);
    const lowbit_layout packing =
        target.info().is_packed ? adapter::packed_layout(destination) : lowbit_layout::compact;
    detail::fill_existing(plan, values, detail::descr_text(PyArray_DESCR(array)),
                          detail::fill_target{target, adapter::data(destination), into, packing, true}, options.narrow);
}

}  // namespace npybridge
