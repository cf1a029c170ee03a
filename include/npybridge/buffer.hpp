// npybridge/buffer.hpp — PEP 3118 buffers over tensors, for code without NumPy (memoryview, struct).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/convert.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/core/tensor.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The struct-module format of a dtype's elements; nullptr when a reader would misread them (packed, quantized,
/// BFloat16).
constexpr const char* buffer_format_of(const dtype_info& entry) noexcept {
    if (entry.is_packed || entry.is_quantized) return nullptr;
    const detail::element_facts* facts = detail::facts_named(entry.storage);
    return facts != nullptr ? facts->buffer_format : nullptr;
}

/// Fills `view` for bf_getbuffer: the tensor's memory, shape and byte strides, `exporter` kept alive. 0, or -1 with
/// BufferError (read-only asked writable, no format, forbidden strides). Pair with release_buffer. GIL required.
template <class Tensor>
int get_buffer(PyObject* exporter, const Tensor& source, Py_buffer* view, int flags) noexcept;

/// bf_releasebuffer's partner of get_buffer.
inline void release_buffer(Py_buffer* view) noexcept { PyMem_Free(view->internal); }

/// Example: the buffer slots of a Python type whose objects hold an npybridge::tensor.
/// ```cpp
/// #include <npybridge/buffer.hpp>
///
/// struct tensor_object {
///     PyObject_HEAD
///     npybridge::tensor value;
/// };
///
/// int get(PyObject* self, Py_buffer* view, int flags) {
///     return npybridge::get_buffer(self, reinterpret_cast<tensor_object*>(self)->value, view, flags);
/// }
/// void release(PyObject*, Py_buffer* view) { npybridge::release_buffer(view); }
/// PyBufferProcs buffer_slots = {get, release};
/// ```

// ---- Definitions ------------------------------------------------------------------------------------------------

template <class Tensor>
int get_buffer(PyObject* exporter, const Tensor& source, Py_buffer* view, int flags) noexcept {
    static_assert(check_adapter<Tensor>());
    using adapter = tensor_adapter<Tensor>;
    try {
        const dtype type = adapter::dtype_of(source);
        const dtype_info& entry = type.info();
        const char* format = buffer_format_of(entry);
        auto refuse = [&](const std::string& why) {
            PyErr_SetString(PyExc_BufferError,
                            ("npybridge: no buffer of the " + type.to_string() + " tensor: " + why).c_str());
            view->obj = nullptr;
            return -1;
        };
        if (format == nullptr) {
            return refuse(
                entry.is_packed      ? "it is packed (" + std::to_string(entry.bits) + " bits per element); use numpy()"
                : entry.is_quantized ? std::string("a buffer cannot carry its quantization params; use numpy()")
                                     : std::string("PEP 3118 has no format for it; use numpy()"));
        }
        const bool writable = is_writable(source);
        if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && !writable) return refuse("it is read-only");
        const tensor_layout layout = adapter::layout_of(source);
        const auto itemsize = static_cast<Py_ssize_t>(entry.element_size);
        const bool contiguous = layout.is_contiguous();
        if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !contiguous) {
            return refuse("it is strided " + layout.shape_text() + " and the request takes no strides");
        }
        // shape and strides in one block.
        auto* dims = static_cast<Py_ssize_t*>(PyMem_Malloc(sizeof(Py_ssize_t) * (2 * layout.ndim + 1)));
        if (dims == nullptr) {
            PyErr_NoMemory();
            view->obj = nullptr;
            return -1;
        }
        Py_ssize_t* strides = dims + layout.ndim;
        for (std::size_t i = 0; i < layout.ndim; ++i) {
            dims[i] = static_cast<Py_ssize_t>(layout.shape[i]);
            strides[i] = static_cast<Py_ssize_t>(layout.strides[i]) * itemsize;
        }
        view->buf = adapter::data(source);
        view->obj = exporter;
        Py_INCREF(exporter);
        view->len = static_cast<Py_ssize_t>(layout.count()) * itemsize;
        view->readonly = writable ? 0 : 1;
        view->itemsize = itemsize;
        view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? const_cast<char*>(format) : nullptr;
        view->ndim = static_cast<int>(layout.ndim);
        view->shape = (flags & PyBUF_ND) == PyBUF_ND ? dims : nullptr;
        view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? strides : nullptr;
        view->suboffsets = nullptr;
        view->internal = dims;
        return 0;
    } catch (...) {
        translate_exception();
        view->obj = nullptr;
        return -1;
    }
}

}  // namespace npybridge
