// examples/example_support.hpp — what the three example modules share: the Python API's option strings,
// dtype arguments, from_storage and the dtype table, each written once so that npybridge_example (CPython
// API), npybridge_pybind11_example and npybridge_nanobind_example accept the same arguments and fail with
// the same messages. Every function takes the GIL as held and reports bad input with npybridge's exceptions.
#pragma once

#include <npybridge/npybridge.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace example {

namespace npb = npybridge;

/// The whole text of a str argument (a NUL inside included).
inline std::string text_of(PyObject* obj, const char* what) {
    if (!PyUnicode_Check(obj))
        throw npb::conversion_error(std::string(what) + " must be a str, got " + npb::safe_repr(obj));
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(obj, &size);
    if (utf8 == nullptr) throw npb::python_error();
    return std::string(utf8, static_cast<std::size_t>(size));
}

/// A dtype argument: an npybridge dtype name ("IntB4", "Int8"), or anything np.dtype() accepts (quantized
/// dtypes carry their params in metadata).
inline std::optional<npb::dtype> dtype_of(PyObject* obj, npb::narrowing mode) {
    if (obj == nullptr || obj == Py_None) return std::nullopt;
    if (PyUnicode_Check(obj)) {
        if (const npb::dtype_info* found = npb::find_dtype(std::string_view(text_of(obj, "dtype")))) {
            if (found->is_quantized) {
                throw npb::dtype_error(std::string(found->name) +
                                       " needs its params: pass a numpy dtype with metadata={'mgb_dtype': {...}}");
            }
            return npb::dtype(found->id);
        }
    }
    return npb::from_numpy_dtype(obj, mode).type;
}

/// The options of from_numpy / from_dlpack (dtype=None, policy='try_borrow', narrowing='checked',
/// layout=None); nullptr stands for an argument not given.
inline npb::to_tensor_options to_tensor_options_of(PyObject* dtype, PyObject* policy, PyObject* narrowing,
                                                   PyObject* layout) {
    npb::to_tensor_options options;
    if (dtype != nullptr || policy != nullptr || narrowing != nullptr || layout != nullptr) {
        options.narrow = npb::narrowing_from(narrowing);
        options.policy = npb::borrow_policy_from(policy);
        options.layout = npb::lowbit_layout_from(layout);
        options.type = dtype_of(dtype, options.narrow);
    }
    return options;
}

/// Tensor.from_storage(data, dtype_name, shape, scale=None, zero_point=None, layout=None): a tensor over a
/// copy of raw storage bytes (packed bytes for low-bit dtypes). nullptr or None: not given.
inline npb::tensor tensor_from_storage(PyObject* data, PyObject* name, PyObject* shape, PyObject* scale,
                                       PyObject* zero_point, PyObject* layout) {
    if (scale == nullptr) scale = Py_None;
    if (zero_point == nullptr) zero_point = Py_None;
    const std::string dtype_name = text_of(name, "dtype_name");
    const npb::dtype_info* found = npb::find_dtype(std::string_view(dtype_name));
    if (found == nullptr) throw npb::dtype_error("from_storage: unknown dtype name " + npb::safe_repr(name));
    std::optional<npb::dtype> type;
    if (found->is_quantized) {
        type = npb::quantized_dtype(found->id, scale, zero_point);  // validated as metadata is
    } else {
        if (scale != Py_None || zero_point != Py_None) {
            throw npb::metadata_error(std::string(found->name) + " takes no scale or zero_point");
        }
        type = npb::dtype(found->id);
    }
    npb::object sequence = npb::object::steal(PySequence_Fast(shape, "shape must be a sequence of ints"));
    if (!sequence) throw npb::python_error();
    const Py_ssize_t ndim = PySequence_Fast_GET_SIZE(sequence.get());
    if (ndim > NPYBRIDGE_MAX_NDIM) {
        throw npb::conversion_error("from_storage: more than " + std::to_string(NPYBRIDGE_MAX_NDIM) + " dimensions");
    }
    std::size_t dims[NPYBRIDGE_MAX_NDIM] = {};
    for (Py_ssize_t i = 0; i < ndim; ++i) {
        const long long extent = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sequence.get(), i));
        if (extent == -1 && PyErr_Occurred()) throw npb::python_error();
        if (extent < 0)
            throw npb::conversion_error("from_storage: negative dimension in shape " + npb::safe_repr(shape));
        dims[i] = static_cast<std::size_t>(extent);
    }
    // The size first (the layout refuses shapes memory cannot hold), then the memory.
    const npb::tensor_layout contiguous = npb::tensor_layout::contiguous(dims, static_cast<std::size_t>(ndim));
    const npb::lowbit_layout packing = npb::lowbit_layout_from(layout).value_or(npb::default_layout(type->id()));
    const std::size_t expected = npb::tensor::storage_bytes_for(*type, contiguous, packing);
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) != 0) throw npb::python_error();
    const auto given = static_cast<std::size_t>(view.len);
    if (given != expected) {
        PyBuffer_Release(&view);
        throw npb::conversion_error("from_storage: " + type->to_string() + " of shape " + contiguous.shape_text() +
                                    " takes " + std::to_string(expected) + " bytes, got " + std::to_string(given));
    }
    npb::tensor made;
    try {
        made = npb::tensor::empty(*type, dims, static_cast<std::size_t>(ndim), packing);
    } catch (...) {
        PyBuffer_Release(&view);
        throw;
    }
    std::memcpy(made.data(), view.buf, given);
    PyBuffer_Release(&view);
    return made;
}

inline const char* const from_storage_copy_reason = "from_storage copies the bytes";

/// Tensor.storage(): the raw storage as bytes (packed for low-bit dtypes; a strided view's elements in C order).
inline npb::object storage_bytes(const npb::tensor& t) {
    if (t.type().info().is_packed || t.layout().is_contiguous()) {
        return npb::object::steal(
            PyBytes_FromStringAndSize(static_cast<const char*>(t.data()), static_cast<Py_ssize_t>(t.storage_bytes())));
    }
    npb::object copy = npb::to_array(t, npb::share_policy::copy);
    auto* array = reinterpret_cast<PyArrayObject*>(copy.get());
    return npb::object::steal(PyBytes_FromStringAndSize(static_cast<const char*>(PyArray_DATA(array)),
                                                        static_cast<Py_ssize_t>(PyArray_NBYTES(array))));
}

/// repr(Tensor): "Tensor(QuantizedS8(scale=0.5), shape=(2, 3), borrowed, read-only)".
inline std::string repr_text(const npb::tensor& t) {
    return "Tensor(" + t.type().to_string() + ", shape=" + t.layout().shape_text() +
           (t.borrowed() ? ", borrowed" : "") + (t.writable() ? "" : ", read-only") + ")";
}

/// Tensor.shape / Tensor.strides (in elements) as tuples: item(i) is the Python int of dimension i.
template <class Item>
npb::object tuple_of(std::size_t ndim, Item item) {
    npb::object tuple = npb::object::steal(PyTuple_New(static_cast<Py_ssize_t>(ndim)));
    if (!tuple) throw npb::python_error();
    for (std::size_t i = 0; i < ndim; ++i) {
        PyObject* value = item(i);
        if (value == nullptr) throw npb::python_error();
        PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i), value);
    }
    return tuple;
}

inline npb::object shape_tuple(const npb::tensor_layout& layout) {
    return tuple_of(layout.ndim, [&](std::size_t i) { return PyLong_FromSize_t(layout.shape[i]); });
}

inline npb::object strides_tuple(const npb::tensor_layout& layout) {
    return tuple_of(layout.ndim, [&](std::size_t i) { return PyLong_FromSsize_t(layout.strides[i]); });
}

/// Tensor.dtype: the numpy dtype (with metadata when quantized), or None for a dtype without a numpy form.
inline npb::object numpy_dtype_or_none(const npb::dtype& type) {
    if (type.info().form == npb::numpy_form::none) return npb::object::borrow(Py_None);
    return npb::to_numpy_dtype(type);
}

/// dtype_table(): one dict per dtype: name, enum, bits, category, packed, numpy (dtype string or None).
inline npb::object dtype_table_rows() {
    npb::object list = npb::object::steal(PyList_New(0));
    if (!list) throw npb::python_error();
    for (const npb::dtype_info& entry : npb::dtype_table) {
        const std::string category(npb::category_name(entry.category));
        npb::object row = npb::object::steal(Py_BuildValue(
            "{s:s#,s:k,s:I,s:s,s:O,s:O}", "name", entry.name.data(), static_cast<Py_ssize_t>(entry.name.size()), "enum",
            static_cast<unsigned long>(entry.value()), "bits", entry.bits, "category", category.c_str(), "packed",
            entry.is_packed ? Py_True : Py_False, "numpy", Py_None));
        if (!row) throw npb::python_error();
        if (entry.form != npb::numpy_form::none) {
            const std::string numpy_name(entry.numpy_name());
            npb::object name = npb::object::steal(PyUnicode_FromString(numpy_name.c_str()));
            if (!name || PyDict_SetItemString(row.get(), "numpy", name.get()) != 0) throw npb::python_error();
        }
        if (PyList_Append(list.get(), row.get()) != 0) throw npb::python_error();
    }
    return list;
}

/// register_user_dtypes(): registers them (a no-op after the first time) and returns their type numbers.
inline npb::object user_dtype_numbers(PyObject* module) {
    if (!npb::register_user_dtypes(module)) throw npb::python_error();
    const npb::user_dtype_set& set = npb::user_dtypes();
    PyObject* numbers =
        Py_BuildValue("{s:i,s:i,s:i,s:i,s:O}", "bfloat16", set.bfloat16, "intb1", set.intb1, "intb2", set.intb2,
                      "intb4", set.intb4, "bfloat16_from_ml_dtypes", set.bfloat16_from_ml_dtypes ? Py_True : Py_False);
    if (numbers == nullptr) throw npb::python_error();
    return npb::object::steal(numbers);
}

/// The quantized dtype a dtype-like object names, or a DTypeError naming it.
inline npb::dtype quantized_dtype_of(PyObject* dtype_like, const char* function) {
    const npb::dtype type = npb::from_numpy_dtype(dtype_like, npb::narrowing::reject).type;
    if (!type.is_quantized())
        throw npb::dtype_error(std::string(function) + ": " + type.to_string() + " is not a quantized dtype");
    return type;
}

/// quantize(values, dtype): real values -> their codes by npybridge::quantize (MegDNN's rounding, half away
/// from zero, and clamps), as an array of the quantized numpy dtype (codes of 4- and 1-bit dtypes one per byte).
inline npb::object quantize_values(PyObject* values, PyObject* dtype_like) {
    return npb::to_array(npb::quantize(values, quantized_dtype_of(dtype_like, "quantize")));
}

/// dequantize(codes): the float32 values of a quantized tensor (`tensor`, the module's Tensor) or array
/// (npybridge::dequantize of the tensor it borrows or, packed, is copied into; a code the dtype does not hold is
/// refused by name and index on the way).
inline npb::object dequantize_codes(PyObject* codes, const npb::tensor* tensor = nullptr) {
    if (tensor != nullptr) return npb::dequantize(*tensor);
    if (!PyArray_Check(codes))
        throw npb::conversion_error("dequantize: codes must be a Tensor or a numpy array, got " +
                                    npb::safe_repr(codes));
    quantized_dtype_of(reinterpret_cast<PyObject*>(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(codes))),
                       "dequantize");
    return npb::dequantize(npb::to_tensor(codes).tensor);
}

/// call(fn, *args): fn(*args) called from C++; a Python exception travels through the C++ frames as
/// npybridge::python_error and comes back as the same object.
inline npb::object call_from_cpp(PyObject* fn, PyObject* args) {
    PyObject* result = PyObject_Call(fn, args, nullptr);
    if (result == nullptr) throw npb::python_error();
    return npb::object::steal(result);
}

struct not_a_std_exception {
    int code;
};

/// throw_cpp(kind, message): throws a C++ exception of the named kind.
[[noreturn]] inline void throw_cpp(std::string_view kind, const std::string& message) {
    if (kind == "out_of_range") throw std::out_of_range(message);
    if (kind == "bad_alloc") throw std::bad_alloc();
    if (kind == "runtime_error") throw std::runtime_error(message);
    if (kind == "conversion") throw npb::conversion_error(message);
    if (kind == "unknown") throw not_a_std_exception{42};
    throw npb::conversion_error(
        "throw_cpp: kind must be out_of_range, bad_alloc, runtime_error, conversion or unknown, got '" +
        std::string(kind) + "'");
}

/// The tracker of OriginTracker: keys stand for C++ objects (an operator, a node) made by create().
using tracker = npb::origin_tracker<unsigned long long>;

}  // namespace example
