// npybridge/dlpack.hpp — DLPack 1.1 both ways: any adapted tensor to a capsule, any __dlpack__ object to a tensor.
#pragma once

#include <npybridge/convert.hpp>
#include <npybridge/core/dlpack_abi.hpp>

#include <optional>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// What to_dlpack exports (the array API's __dlpack__ arguments).
struct dlpack_options {
    /// The newest version the consumer reads; none or below 1.0: the legacy "dltensor" capsule.
    std::optional<dlpack::DLPackVersion> max_version;
    /// Only the CPU (kDLCPU, 0).
    std::optional<dlpack::DLDevice> device;
    /// true: always a copy (IS_COPIED); false: never (an error when one is needed); none: when needed.
    std::optional<bool> copy;
    /// Quantized dtypes and IntB1/2/4: export the codes. DLPack has no quantized types, so without it their export is
    /// an error, not a silent loss of params.
    bool codes = false;

    /// The options from __dlpack__'s arguments (nullptr or None: not given); a bad one is a conversion_error naming it.
    static dlpack_options from_python(PyObject* stream, PyObject* max_version, PyObject* dl_device, PyObject* copy,
                                      PyObject* codes = nullptr);
};

/// Tensor → DLPack capsule (new reference), as __dlpack__ makes it: versioned (1.1) when max_version allows, else
/// legacy (read-only only with copy=true). The capsule keeps the memory alive until its deleter runs. GIL required;
/// throws dlpack_error.
template <class Tensor>
object to_dlpack(const Tensor& source, const dlpack_options& options = {});

/// Any DLPack producer → Tensor, with to_tensor's options and copy reasons; a borrow calls the deleter once, READ_ONLY
/// gives a read-only tensor, only CPU memory is read. GIL required.
template <class Tensor = tensor>
to_tensor_result<Tensor> from_dlpack(PyObject* obj, const to_tensor_options& options = {},
                                     const placement_t<Tensor>& where = default_placement<Tensor>());

/// Example: a tensor's export for __dlpack__, and a tensor from any DLPack producer.
/// ```cpp
/// #include <npybridge/dlpack.hpp>
///
/// PyObject* dlpack_of(const npybridge::tensor& t) {
///     npybridge::dlpack_options options;
///     options.max_version = npybridge::dlpack::DLPackVersion{1, 1};
///     return npybridge::to_dlpack(t, options).release();
/// }
///
/// npybridge::tensor from_producer(PyObject* producer) { return npybridge::from_dlpack(producer).tensor; }
/// ```

}  // namespace npybridge

// ---- Definitions ------------------------------------------------------------------------------------------------

#include <npybridge/detail/dlpack_export.hpp>
#include <npybridge/detail/dlpack_import.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

template <class Tensor>
object to_dlpack(const Tensor& source, const dlpack_options& options) {
    static_assert(check_adapter<Tensor>());
    using adapter = tensor_adapter<Tensor>;
    const dtype type = adapter::dtype_of(source);
    const tensor_layout layout = adapter::layout_of(source);
    const bool writable = is_writable(source);
    const lowbit_layout packing = type.info().is_packed ? adapter::packed_layout(source) : lowbit_layout::compact;
    const dlpack::DLDataType dl_type = detail::exportable_type(type, layout, packing, writable, options);
    const bool versioned = options.max_version && options.max_version->major >= 1;
    const bool copy = options.copy.value_or(false);
    auto made = std::make_unique<detail::dlpack_export>();
    void* data = adapter::data(source);
    if (copy) {
        tensor fresh = detail::export_copy(type, data, layout, packing);
        data = fresh.data();
        made->owner = fresh.take_owner();
    } else {
        made->owner = adapter::owner(source);
    }
    const tensor_layout& described = copy ? tensor_layout::contiguous(layout.shape.data(), layout.ndim) : layout;
    for (std::size_t i = 0; i < layout.ndim; ++i) made->shape[i] = static_cast<std::int64_t>(layout.shape[i]);
    if (type.info().is_packed) {
        detail::packed_strides(described, type.info().bits, packing, made->strides);
    } else {
        for (std::size_t i = 0; i < layout.ndim; ++i) made->strides[i] = described.strides[i];
    }
    const dlpack::DLTensor view{data,
                                dlpack::DLDevice{dlpack::kDLCPU, 0},
                                static_cast<std::int32_t>(layout.ndim),
                                dl_type,
                                made->shape,
                                made->strides,
                                0};
    const std::uint64_t flags = (writable || copy ? 0 : dlpack::flag_read_only) | (copy ? dlpack::flag_is_copied : 0);
    return detail::export_capsule(std::move(made), view, versioned, flags);
}

template <class Tensor>
to_tensor_result<Tensor> from_dlpack(PyObject* obj, const to_tensor_options& options,
                                     const placement_t<Tensor>& where) {
    static_assert(check_adapter<Tensor>());
    object capsule = detail::dlpack_capsule_of(obj);
    detail::consumed_capsule taken = detail::consume_capsule(capsule.get());
    const bool empty = detail::checked_import_view(taken);
    const dlpack::DLTensor& view = taken.view;
    const bool read_only = (taken.flags & dlpack::flag_read_only) != 0;
    tensor_layout layout;
    if (const dtype* plain = detail::dlpack_borrow_at_once<Tensor>(taken, empty, options, layout)) {
        const dtype type = *plain;
        void* data = detail::dlpack_first_byte(view);
        return {
            std::in_place,
            [&] { return detail::adapter_borrow_at<Tensor>(type, data, layout, true, std::move(taken.owner), where); },
            true};
    }
    to_tensor_options kept = options;
    kept.keep_alive = true;
    if (view.dtype.bits < 8) {
        if ((taken.flags & dlpack::flag_subbyte_padded) == 0)
            return detail::packed_from_dlpack<Tensor>(view, kept, where);
        return detail::padded_from_dlpack<Tensor>(taken, kept, where);
    }
    // Anything else: an ndarray over the memory, planned as any other.
    object descr = detail::numpy_descr_for(view.dtype);
    const auto itemsize = static_cast<std::size_t>(detail::descr_elsize(reinterpret_cast<PyArray_Descr*>(descr.get())));
    object array = detail::array_over_dlpack(view, descr.get(), itemsize, !read_only, taken.owner);
    return to_tensor<Tensor>(array.get(), kept, where);
}

inline dlpack_options dlpack_options::from_python(PyObject* stream, PyObject* max_version, PyObject* dl_device,
                                                  PyObject* copy, PyObject* codes) {
    if (stream != nullptr && stream != Py_None) {
        throw dlpack_error("__dlpack__: stream must be None for CPU memory, got " + safe_repr(stream));
    }
    dlpack_options options;
    if (auto version = detail::dlpack_int_pair(max_version, "max_version", 0xFFFFFFFFLL)) {
        options.max_version = dlpack::DLPackVersion{version->first, version->second};
    }
    if (auto device = detail::dlpack_int_pair(dl_device, "dl_device", 0x7FFFFFFFLL)) {
        options.device =
            dlpack::DLDevice{static_cast<std::int32_t>(device->first), static_cast<std::int32_t>(device->second)};
    }
    options.copy = detail::dlpack_truth(copy);
    options.codes = detail::dlpack_truth(codes).value_or(false);
    return options;
}

}  // namespace npybridge
