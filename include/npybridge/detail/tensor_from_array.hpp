// npybridge/detail/tensor_from_array.hpp — to_tensor's and copy_into's steps: the fast borrow, fresh tensors, fills.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/detail/array_layout.hpp>
#include <npybridge/detail/lowbit_values.hpp>
#include <npybridge/detail/value_checks.hpp>
#include <npybridge/detail/array_fill.hpp>
#include <npybridge/core/detail/plan.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/detail/numpy_dtypes.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/python.hpp>
#include <npybridge/detail/python_owner_blocks.hpp>
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

/// Most dimensions a Tensor takes from an array.
template <class Tensor>
inline constexpr std::size_t ndim_limit =
    tensor_adapter<Tensor>::max_ndim < NPYBRIDGE_MAX_NDIM ? tensor_adapter<Tensor>::max_ndim : NPYBRIDGE_MAX_NDIM;

/// layout_of_array for a Tensor; throws past its dimensions.
template <class Tensor>
bool checked_layout(PyArrayObject* array, tensor_layout& layout) {
    if (static_cast<std::size_t>(PyArray_NDIM(array)) > ndim_limit<Tensor>) {
        throw_too_many_dimensions(array_text(array), PyArray_NDIM(array), ndim_limit<Tensor>);
    }
    return layout_of_array(array, tensor_adapter<Tensor>::has_scalar, layout);
}

/// The planner's first case over an ndarray: dtype, flags and layout gathered, borrows_at_once asked. Fills `layout`
/// and returns the dtype (copy it at once), or nullptr for plan_borrow.
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

/// A fresh tensor from make(), checked dense (conversions fill it as one run); its reported packing counts.
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
        throw_adapter_made(type, layout, contiguous);
    }
    return made;
}

/// The array's dtype under the options' narrowing; nullopt when it has none and the options name the target.
inline maybe<numpy_dtype_match> match_of(PyArrayObject* array, const to_tensor_options& options) {
    try {
        return dtype_of_descr(PyArray_DESCR(array), options.narrow);
    } catch (const metadata_error&) {
        throw;
    } catch (const dtype_error&) {
        if (!options.type) throw;
        return std::nullopt;
    }
}

/// The facts plan_borrow asks of an ndarray's memory.
template <class Tensor>
memory_facts memory_facts_of(PyArrayObject* array, const maybe<numpy_dtype_match>& source, const tensor_layout& layout,
                             bool whole_elements) {
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

/// A fresh tensor of `target` filled as plan_fill says.
template <class Tensor>
to_tensor_result<Tensor> copied(PyArrayObject* array, const maybe<numpy_dtype_match>& source, const dtype& target,
                                const tensor_layout& layout, const to_tensor_options& options,
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

/// Everything but the common borrow, out of line so its frame stays small.
template <class Tensor>
[[gnu::noinline]] to_tensor_result<Tensor> to_tensor_general(PyObject* obj, const to_tensor_options& options,
                                                             const placement_t<Tensor>& where) {
    using adapter = tensor_adapter<Tensor>;
    object owner = as_array(obj);
    auto* array = reinterpret_cast<PyArrayObject*>(owner.get());
    tensor_layout layout;
    const bool whole_elements = checked_layout<Tensor>(array, layout);
    const maybe<numpy_dtype_match> source = match_of(array, options);
    const dtype target = options.type ? *options.type : source->type;
    memory_facts facts = memory_facts_of<Tensor>(array, source, layout, whole_elements);
    maybe<unfit_value> bad_code;
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

/// copy_into: the array's values into an existing tensor, by to_tensor's rules.
template <class Tensor>
void copy_into_tensor(PyObject* obj, Tensor& destination, const to_tensor_options& options) {
    static_assert(check_adapter<Tensor>());
    using adapter = tensor_adapter<Tensor>;
    object owner = as_array(obj);
    auto* array = reinterpret_cast<PyArrayObject*>(owner.get());
    tensor_layout layout;
    checked_layout<Tensor>(array, layout);  // copied, never borrowed: partial strides do not matter
    const dtype target = adapter::dtype_of(destination);
    const tensor_layout into = adapter::layout_of(destination);
    if (!is_writable(destination)) throw_read_only_destination();
    bool same_shape = into.ndim == layout.ndim;
    for (std::size_t i = 0; same_shape && i < layout.ndim; ++i) same_shape = into.shape[i] == layout.shape[i];
    if (!same_shape) {
        throw_other_shape(array, into);
    }
    to_tensor_options as_target = options;
    as_target.type = target;
    const copy_values values = values_for(array, match_of(array, as_target), target);
    const fill_plan plan = plan_fill(value_facts_of(values, target, options.narrow), target, options.narrow);
    const lowbit_layout packing =
        target.info().is_packed ? adapter::packed_layout(destination) : lowbit_layout::compact;
    fill_existing(plan, values, descr_text(PyArray_DESCR(array)),
                  fill_target{target, adapter::data(destination), into, packing, true}, options.narrow);
}

}  // namespace detail
}  // namespace npybridge
