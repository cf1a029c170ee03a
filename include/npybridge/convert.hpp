// npybridge/convert.hpp — ndarray ↔ tensor: borrow and share when memory can be shared, copy (and say why) when not.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/detail/array_copy.hpp>
#include <npybridge/detail/array_fill.hpp>
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

/// Why the array's memory cannot back a tensor of `target`; empty when it can.
template <class Tensor>
std::string why_not_borrow(PyArrayObject* array, const std::optional<numpy_dtype_match>& source, const dtype& target,
                           const tensor_layout& layout, bool whole_elements, const to_tensor_options& options) {
    using adapter = tensor_adapter<Tensor>;
    if (target.info().is_packed) {
        return "dtype: " + std::string(target.name()) + " is packed (" + std::to_string(target.info().bits) +
               " bits per element); numpy holds one byte per element";
    }
    if (!source) return "dtype: " + descr_text(PyArray_DESCR(array)) + " must be cast to " + target.to_string();
    if (source->narrowed) {
        return "dtype: " + descr_text(PyArray_DESCR(array)) + " must be narrowed to " + target.to_string();
    }
    if (!same_storage(*source, target)) {
        return "dtype: the array is " + source->type.to_string() + ", the tensor wants " + target.to_string();
    }
    if (!PyArray_ISNOTSWAPPED(array)) {
        return "byte order: the array is " + descr_text(PyArray_DESCR(array)) + " in non-native byte order";
    }
    // Strides first: NumPy calls an array with a 5-byte float32 stride unaligned even when its data pointer is.
    if (!whole_elements) {
        return "strides: " + strides_text(array) + " bytes are not whole " + std::to_string(PyArray_ITEMSIZE(array)) +
               "-byte elements";
    }
    if (!PyArray_ISALIGNED(array)) {
        return "alignment: the data at " + std::to_string(reinterpret_cast<std::uintptr_t>(PyArray_DATA(array))) +
               " is not aligned for " + descr_text(PyArray_DESCR(array));
    }
    if (!adapter::accepts_strides(layout)) {
        return "strides: " + strides_text(array) + " bytes cannot be described by this tensor type";
    }
    if (options.require_writable && !PyArray_ISWRITEABLE(array)) {
        return "read-only: the array is read-only and a writable tensor was asked for";
    }
    return {};
}

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

/// The common borrow, decided and described in one pass: an ndarray of a
/// built-in plain dtype without metadata (or one whose MegEngine metadata was
/// parsed before), aligned, in native order, with whole-element strides the
/// tensor type accepts and no more dimensions than it holds. Fills `layout`
/// and returns the dtype (it lives in a table or the dtype cache: copy it at
/// once), or nullptr to let the general path decide and give its reasons.
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
        // MegEngine's metadata, checked against this descr when first parsed.
        // Packed dtypes (one numpy byte per element) are never borrowed.
        if (parsed == nullptr || !parsed->value || parsed->value->info().is_packed) return nullptr;
        type = &*parsed->value;
        // Codes fewer than the storage holds (QuantizedS1, a quantized dtype: only with metadata) are checked
        // value by value on the general path.
        if (codes_narrower_by_row[table_index(type->id())]) return nullptr;
    }
    const int flags = PyArray_FLAGS(array);
    if ((flags & NPY_ARRAY_ALIGNED) == 0 || !PyArray_ISNOTSWAPPED(array)) return nullptr;
    if (options.require_writable && (flags & NPY_ARRAY_WRITEABLE) == 0) return nullptr;
    if (options.type && !(*options.type == *type)) return nullptr;
    if (static_cast<std::size_t>(PyArray_NDIM(array)) > ndim_limit<Tensor>) return nullptr;
    if (!layout_of_array(array, adapter::has_scalar, layout)) return nullptr;
    return adapter::accepts_strides(layout) ? type : nullptr;
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

/// Everything but the common borrow: array-likes, dtype changes, copies with
/// their reasons. Out of line, so the common borrow's frame stays small.
template <class Tensor>
[[gnu::noinline]] to_tensor_result<Tensor> to_tensor_general(PyObject* obj, const to_tensor_options& options,
                                                             const placement_t<Tensor>& where) {
    using adapter = tensor_adapter<Tensor>;
    object owner = as_array(obj);
    auto* array = reinterpret_cast<PyArrayObject*>(owner.get());
    tensor_layout layout;
    const bool whole_elements = checked_layout<Tensor>(array, layout);

    std::optional<numpy_dtype_match> source;
    try {
        source = from_numpy_dtype(PyArray_DESCR(array), options.narrow);
    } catch (const metadata_error&) {
        throw;
    } catch (const dtype_error&) {
        if (!options.type) throw;  // with a requested dtype, numpy may still cast to it (fill_copy decides)
    }
    const dtype target = options.type ? *options.type : source->type;
    refuse_requantizing(source, target);
    // Values that keep their storage (borrowed, or copied as they are) are checked against the dtype's codes.
    std::optional<std::string> bad_codes;
    if (source && same_storage(*source, target)) bad_codes = check_codes(array, target, options.narrow, layout);

    std::string reason = options.policy == borrow_policy::copy ? std::string("copy requested")
                         : bad_codes                           ? *bad_codes
                                     : why_not_borrow<Tensor>(array, source, target, layout, whole_elements, options);
    if (reason.empty()) {
        const bool writable = PyArray_ISWRITEABLE(array);
        to_tensor_result<Tensor> borrowed{
            std::in_place,
            [&] {
                return adapter_borrow_at<Tensor>(
                    target, PyArray_DATA(array), layout, writable,
                    options.keep_alive ? python_owner(owner.get(), !writable) : owner_handle(), where);
            },
            true};
        // Read-only memory in a tensor type that cannot mark it (C++ could write through it): copied, unless the
        // caller said it only reads and an owner remembers the memory is read-only.
        if (writable || !adapter::writable(borrowed.tensor)) return borrowed;
        if (options.reads_only && options.keep_alive) return borrowed;
        reason = options.keep_alive
                     ? "read-only: the array is read-only and this tensor type cannot mark memory read-only, so "
                       "C++ could write through it (to_tensor_options().reading_only() borrows it for reading)"
                     : "read-only: the array is read-only, this tensor type cannot mark memory read-only, and a "
                       "scoped borrow (keep_alive=false) keeps no owner to remember it";
    }
    if (options.policy == borrow_policy::must_borrow) {
        throw conversion_error("must_borrow: cannot share the memory of the " + array_text(array) + ": " + reason);
    }
    const tensor_layout contiguous = tensor_layout::contiguous(layout.shape.data(), layout.ndim);
    Tensor made = make_dense<Tensor>(target, contiguous, options.layout.value_or(default_layout(target.id())), where);
    const lowbit_layout packing = target.info().is_packed ? adapter::packed_layout(made) : lowbit_layout::compact;
    const object values = through_own_user_dtype(array, source);
    fill_copy(reinterpret_cast<PyArrayObject*>(values.get()), source, target, adapter::data(made), layout, packing,
              options);
    if (!target.info().is_packed) settle_codes(adapter::data(made), target, options.narrow, layout);
    return to_tensor_result<Tensor>(std::move(made), false, std::move(reason));
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
        const bool writable = PyArray_ISWRITEABLE(array);
        // (A read-only array takes the general path, which checks the tensor kept it read-only.)
        if (const dtype* type = detail::quick_borrow<Tensor>(array, options, layout); type && writable) {
            return {std::in_place,
                    [&] {
                        return detail::adapter_borrow_at<Tensor>(
                            *type, PyArray_DATA(array), layout, writable,
                            options.keep_alive ? detail::python_owner(obj, !writable) : owner_handle(), where);
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
/// to_tensor's rules (the options' narrowing). On any error the tensor is left as it was.
template <class Tensor>
void copy_into(PyObject* obj, Tensor& destination, const to_tensor_options& options = {}) {
    static_assert(check_adapter<Tensor>());
    using adapter = tensor_adapter<Tensor>;
    object owner = detail::as_array(obj);
    auto* array = reinterpret_cast<PyArrayObject*>(owner.get());
    if (PyArray_TYPE(array) >= NPY_USERDEF) {  // another library's bfloat16 / intbN: through npybridge's own
        owner = detail::through_own_user_dtype(array, from_numpy_dtype(PyArray_DESCR(array), options.narrow));
        array = reinterpret_cast<PyArrayObject*>(owner.get());
    }
    tensor_layout layout;
    detail::checked_layout<Tensor>(array, layout);  // copied, never borrowed: partial strides do not matter
    const dtype target = adapter::dtype_of(destination);
    const tensor_layout dest_layout = adapter::layout_of(destination);
    if (!is_writable(destination)) throw conversion_error("copy_into: the destination tensor is read-only");
    bool same_shape = dest_layout.ndim == layout.ndim;
    for (std::size_t i = 0; same_shape && i < layout.ndim; ++i) same_shape = dest_layout.shape[i] == layout.shape[i];
    if (!same_shape) {
        throw conversion_error("copy_into: the " + detail::array_text(array) + " does not match the tensor's shape " +
                               dest_layout.shape_text());
    }
    // An array dtype npybridge has no dtype for under this narrowing (float64 under reject) may still cast to
    // the tensor's: to_tensor decides, through the staged copy below.
    numpy_dtype_match source{target, false};
    bool matched = true;
    if (!target.info().is_packed) {
        try {
            source = from_numpy_dtype(PyArray_DESCR(array), options.narrow);
        } catch (const dtype_error&) {
            matched = false;
        }
    }
    if (target.info().is_packed && detail::descr_metadata(PyArray_DESCR(array)) != nullptr) {
        detail::refuse_requantizing(from_numpy_dtype(PyArray_DESCR(array), options.narrow), target);
    }
    // Another dtype converts by to_tensor's rules (docs/policies.md: narrowing, the casts each mode allows),
    // through the staged copy below; the same storage copies straight in.
    const bool same = matched && (source.type == target || detail::same_storage(source, target));
    // A dtype whose codes are fewer than its storage holds (QuantizedS1) takes the staged path below unless every
    // value is a code: wrap then wraps them in a fresh tensor first.
    const bool codes_unfit = !target.info().is_packed && same && !source.narrowed &&
                             detail::check_codes(array, target, options.narrow, layout);
    if (!target.info().is_packed && same && !source.narrowed && !codes_unfit) {
        // Same storage (up to byte order, or plain codes into a quantized
        // tensor): numpy's copy checks no value, so nothing can fail once it
        // writes. It copies straight in (memory shared with the array is
        // handled by numpy, which then copies the source first).
        const std::size_t itemsize = target.info().element_size;
        detail::copy_plan plan;
        const detail::byte_span span = detail::span_of(adapter::data(destination), dest_layout, itemsize);
        if (static_cast<std::size_t>(PyArray_ITEMSIZE(array)) == itemsize &&
            !detail::array_overlaps(array, span.begin, span.bytes) &&
            detail::copy_plan_of(array, dest_layout, itemsize, plan)) {
            detail::without_gil_if_large(plan.count() * itemsize, [&] {
                detail::copy_strided(plan, PyArray_DATA(array), adapter::data(destination), itemsize,
                                     detail::swap_unit_of(array));
            });
            return;
        }
        object into = detail::array_over(target, adapter::data(destination), dest_layout, true, user_dtype_choice::own);
        if (PyArray_CopyInto(reinterpret_cast<PyArrayObject*>(into.get()), array) != 0) {
            detail::throw_numpy_failure("copy_into");
        }
        return;
    }
    if (!target.info().is_packed && matched && source.narrowed && source.type == target &&
        dest_layout.is_contiguous() &&
        !detail::array_overlaps(array, adapter::data(destination), dest_layout.count() * target.info().element_size)) {
        // Narrowing: every value is checked before the first is written.
        detail::narrow_into(array, target, adapter::data(destination), options.narrow, layout, /*check_first=*/true);
        return;
    }
    to_tensor_options as_copy = options;
    as_copy.type = target;
    as_copy.policy = borrow_policy::copy;
    if (target.info().is_packed) as_copy.layout = adapter::packed_layout(destination);
    // Packing can find a bad value halfway (and narrowing into strided or
    // overlapping memory is left to the general path): convert into a fresh
    // tensor first, so a failure cannot leave the destination half-written.
    tensor staged = to_tensor<tensor>(obj, as_copy).tensor;
    if (target.info().is_packed) {
        if (dest_layout.is_dense_packed(target.id(), as_copy.layout.value())) {
            copy_packed_dense(target.id(), staged.data(), {staged.count(), staged.layout().innermost()},
                              adapter::data(destination), staged.packing());
        } else {  // a packed sub-tensor: element by element, the bits around it kept
            std::vector<std::uint8_t> values(staged.count());
            unpack(target.id(), staged.data(), {staged.count(), staged.layout().innermost()}, values.data(),
                   staged.packing());
            pack_strided(target.id(), values.data(), dest_layout.shape.data(), dest_layout.strides.data(),
                         dest_layout.ndim, adapter::data(destination));
        }
        return;
    }
    object from = to_array(staged, share_policy::try_share);
    object into = detail::array_over(target, adapter::data(destination), dest_layout, true, user_dtype_choice::own);
    if (PyArray_CopyInto(reinterpret_cast<PyArrayObject*>(into.get()), reinterpret_cast<PyArrayObject*>(from.get())) !=
        0) {
        detail::throw_numpy_failure("copy_into");
    }
}

}  // namespace npybridge
