// npybridge/detail/messages.hpp — every copy reason and refusal, written from the planner's codes.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/detail/plan.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/core/tensor.hpp>
#include <npybridge/detail/messages_arguments.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// str(descr) for messages; keeps a pending Python error as it was.
inline std::string descr_text(PyArray_Descr* descr) {
    const pending_error_kept kept;
    object text = object::steal(PyObject_Str(reinterpret_cast<PyObject*>(descr)));
    const char* utf8 = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
    if (utf8 == nullptr) {
        PyErr_Clear();
        return safe_repr(reinterpret_cast<PyObject*>(descr));
    }
    return utf8;
}

inline std::string type_text(PyObject* obj) { return std::string(Py_TYPE(obj)->tp_name); }

inline std::string index_text(std::size_t flat, const tensor_layout& layout) {
    std::array<std::size_t, NPYBRIDGE_MAX_NDIM> index{};
    for (std::size_t i = layout.ndim; i-- > 0;) {
        const std::size_t extent = layout.shape[i] == 0 ? 1 : layout.shape[i];
        index[i] = flat % extent;
        flat /= extent;
    }
    return tuple_text(index.data(), layout.ndim);
}

inline std::string array_text(PyArrayObject* array) {
    tensor_layout shape;
    shape.ndim = std::min<std::size_t>(static_cast<std::size_t>(PyArray_NDIM(array)), NPYBRIDGE_MAX_NDIM);
    for (std::size_t i = 0; i < shape.ndim; ++i)
        shape.shape[i] = static_cast<std::size_t>(PyArray_DIM(array, static_cast<int>(i)));
    std::string dims = static_cast<std::size_t>(PyArray_NDIM(array)) > NPYBRIDGE_MAX_NDIM
                           ? std::to_string(PyArray_NDIM(array)) + "-d"
                           : shape.shape_text();
    return "array of shape " + dims + " and dtype " + descr_text(PyArray_DESCR(array));
}

inline std::string strides_text(PyArrayObject* array) {
    return tuple_text(PyArray_STRIDES(array), static_cast<std::size_t>(PyArray_NDIM(array)));
}

/// numpy's error while converting, as a conversion_error with numpy's message.
[[noreturn]] inline void throw_numpy_failure(const std::string& what) {
    python_error cause;
    std::string message = cause.what();
    const auto last_line = message.rfind('\n');
    if (last_line != std::string::npos) message = message.substr(last_line + 1);
    throw conversion_error(what + ": " + message);
}

/// A value that is not a code of a packed or narrow-coded dtype.
[[noreturn]] inline void throw_invalid_code(const dtype_info& type, const std::string& value,
                                            const std::string& index) {
    throw value_range_error(std::string(type.name) + ": value " + value + " at index " + index + " is not valid (" +
                            std::string(type.name) + " holds " + valid_set_text(type) + ")");
}

/// The copy reason of sub-byte source data (`type`: its DLPack type's text).
inline std::string sub_byte_reason_text(copy_cause cause, const std::string& type) {
    if (cause == copy_cause::packed_source) {
        return "packing: packed " + type +
               " data is copied into the tensor's own packing (tensor types borrow "
               "unpacked memory only)";
    }
    if (cause == copy_cause::padded_source) return "packing: " + type + " values one per byte are unpacked into a copy";
    return cause == copy_cause::copy_requested ? "copy requested" : std::string();
}

/// The copy reason for `cause` (must_borrow's refusal says the same).
inline std::string copy_reason_text(copy_cause cause, PyArrayObject* array, const maybe<numpy_dtype_match>& source,
                                    const dtype& target, const tensor_layout& layout,
                                    const maybe<unfit_value>& code = {}) {
    const std::string descr = descr_text(PyArray_DESCR(array));
    switch (cause) {
        case copy_cause::none: return {};
        case copy_cause::copy_requested:
        case copy_cause::packed_source:
        case copy_cause::padded_source: return sub_byte_reason_text(cause, descr);
        case copy_cause::packed_target:
            return "dtype: " + std::string(target.name()) + " is packed (" + std::to_string(target.info().bits) +
                   " bits per element); numpy holds one byte per element";
        case copy_cause::foreign_dtype: return "dtype: " + descr + " must be cast to " + target.to_string();
        case copy_cause::narrowing: return "dtype: " + descr + " must be narrowed to " + target.to_string();
        case copy_cause::other_dtype:
            return "dtype: the array is " + (source ? source->type.to_string() : descr) + ", the tensor wants " +
                   target.to_string();
        case copy_cause::byte_order: return "byte order: the array is " + descr + " in non-native byte order";
        case copy_cause::partial_strides:
            return "strides: " + strides_text(array) + " bytes are not whole " +
                   std::to_string(PyArray_ITEMSIZE(array)) + "-byte elements";
        case copy_cause::misaligned:
            return "alignment: the data at " + std::to_string(reinterpret_cast<std::uintptr_t>(PyArray_DATA(array))) +
                   " is not aligned for " + descr;
        case copy_cause::refused_strides:
            return "strides: " + strides_text(array) + " bytes cannot be described by this tensor type";
        case copy_cause::invalid_codes:
            return "codes: value " + (code ? code->text : std::string("?")) + " at index " +
                   (code ? index_text(code->index, layout) : std::string("?")) + " is not a " +
                   std::string(target.name()) + " code (narrowing='wrap' copies, wrapping each code into " +
                   valid_set_text(target.info()) + ")";
        case copy_cause::read_only_writable:
            return "read-only: the array is read-only and a writable tensor was asked for";
        case copy_cause::read_only_unmarked:
            return "read-only: the array is read-only and this tensor type cannot mark memory read-only, so C++ "
                   "could write through it (to_tensor_options().reading_only() borrows it for reading)";
        case copy_cause::read_only_scoped:
            return "read-only: the array is read-only, this tensor type cannot mark memory read-only, and a scoped "
                   "borrow (keep_alive=false) keeps no owner to remember it";
    }
    return {};
}

/// A refusal after MegEngine's cast to `cast` (a NumPy type): the value named is the cast one.
[[noreturn]] inline void throw_after_megengine_cast(const value_range_error& refused, int cast) {
    const object descr = object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(cast)));
    throw value_range_error(std::string(refused.what()) + " (MegEngine's conversion casts the array to " +
                            descr_text(reinterpret_cast<PyArray_Descr*>(descr.get())) + " first, as MegEngine does)");
}

/// must_borrow's error: the array, then why.
[[noreturn]] inline void throw_must_borrow(const std::string& what, const std::string& reason) {
    throw conversion_error("must_borrow: cannot share the memory of the " + what + ": " + reason);
}
[[noreturn]] inline void throw_must_borrow(PyArrayObject* array, const std::string& reason) {
    throw_must_borrow(array_text(array), reason);
}

/// A checked value the dtype does not hold: the caller's array dtype, value, index, the way out.
[[noreturn]] inline void throw_unfit_value(const std::string& array_dtype, const dtype& target, value_check check,
                                           const unfit_value& unfit, const tensor_layout& layout) {
    const std::string name(target.name());
    const std::string way_out =
        check == value_check::whole
            ? (target.is_quantized() ? "narrowing='checked' takes whole numbers in range as codes; quantize() "
                                       "converts real values, 'wrap' casts as NumPy does"
                                     : "narrowing='checked' takes whole numbers in range; 'wrap' casts as NumPy does")
            : "narrowing='checked'; 'wrap' casts anyway";
    const std::string what = check == value_check::whole ? " is not held exactly by " : " does not fit ";
    throw value_range_error("narrowing " + array_dtype + " to " + name + ": value " + unfit.text + " at index " +
                            index_text(unfit.index, layout) + what + name + " (" + way_out + ")");
}

/// A copy the planner refused.
[[noreturn]] inline void throw_refusal(refusal why, const std::string& array_dtype,
                                       const maybe<numpy_dtype_match>& source, const dtype& target, narrowing mode) {
    const std::string to = target.to_string();
    switch (why) {
        case refusal::requantizing:
        case refusal::dropping_params: {
            const std::string from = source->type.to_string();
            throw dtype_error((why == refusal::requantizing
                                   ? "requantizing is not supported: the array is " + from + ", the tensor wants " + to
                                   : "the array holds " + from + " codes; converting them to " + to +
                                         " would drop the quantization parameters") +
                              " (take the raw codes with a view of the plain numpy dtype, e.g. a.view(np." +
                              std::string(source->type.info().numpy_name()) + "), or dequantize first)");
        }
        case refusal::kind:
            throw dtype_error("cannot cast numpy " + array_dtype + " to " + to +
                              " with narrowing='checked': complex numbers go only into complex dtypes "
                              "(narrowing='wrap' casts as NumPy does, keeping the real parts)");
        case refusal::unsafe:
            throw dtype_error("cannot cast numpy " + array_dtype + " to " + to +
                              " with casting='safe' (narrowing='reject' allows no cast that can lose values; "
                              "'checked' checks every value, 'wrap' casts anyway)");
        case refusal::no_numpy_form:
            throw dtype_error("cannot convert numpy " + array_dtype + " to " + to + ": " + std::string(target.name()) +
                              " has no numpy form (only its own bytes go into it)");
        case refusal::not_integers:
            throw dtype_error(std::string(target.name()) + " takes integer values" +
                              (mode == narrowing::checked ? std::string(" (and whole floats)") : std::string()) +
                              ", got numpy " + array_dtype);
        case refusal::no_cast:
        case refusal::none: break;
    }
    throw dtype_error("cannot cast numpy " + array_dtype + " to " + to +
                      (mode == narrowing::wrap ? " (numpy has no cast between them)"
                                               : " with casting='safe': npybridge cannot check values of " +
                                                     array_dtype + " (narrowing='wrap' allows any cast numpy has)"));
}

// ---- The other errors of the conversion paths

template <class = void>
[[noreturn]] void throw_too_many_dimensions(const std::string& what, long long ndim, std::size_t limit) {
    throw conversion_error(what + " has " + std::to_string(ndim) + " dimensions; the tensor type holds at most " +
                           std::to_string(limit));
}

template <class = void>
[[noreturn]] void throw_adapter_made(const dtype& type, const tensor_layout& made, const tensor_layout& asked) {
    throw conversion_error("tensor_adapter::make gave a " + type.to_string() + " tensor of shape " + made.shape_text() +
                           " and strides " + tuple_text(made.strides.data(), made.ndim) + " for shape " +
                           asked.shape_text() + "; conversions need a dense tensor of the shape asked for");
}

template <class = void>
[[noreturn]] void throw_read_only_destination() {
    throw conversion_error("copy_into: the destination tensor is read-only");
}
template <class = void>
[[noreturn]] void throw_other_shape(PyArrayObject* array, const tensor_layout& into) {
    throw conversion_error("copy_into: the " + array_text(array) + " does not match the tensor's shape " +
                           into.shape_text());
}

/// to_array of a packed tensor.
template <class = void>
[[noreturn]] void throw_must_share_packed(const dtype_info& entry) {
    throw conversion_error("must_share: " + std::string(entry.name) + " is packed (" + std::to_string(entry.bits) +
                           " bits per element); numpy needs one byte per element, so it can only be copied");
}
template <class = void>
[[noreturn]] void throw_no_numpy_form(const dtype_info& entry) {
    throw dtype_error(std::string(entry.name) + " has no numpy form (MegEngine gives it none either)");
}
template <class = void>
[[noreturn]] void throw_not_ml_dtypes_4_bit(const dtype_info& entry, const std::string& four_bit_integers) {
    throw dtype_error(std::string(entry.name) + ": lowbit_format='ml_dtypes' holds 4-bit integers (int4 / uint4: " +
                      four_bit_integers + "); " + std::string(entry.name) + " holds " + valid_set_text(entry));
}

/// quantize / dequantize.
template <class = void>
[[noreturn]] void throw_not_quantized(const char* call, const dtype& type) {
    throw dtype_error(std::string(call) + ": " + type.to_string() + " is not a quantized dtype");
}
template <class = void>
[[noreturn]] void throw_not_real_values(PyArray_Descr* descr) {
    throw dtype_error("quantize: values must be real numbers, got a " + descr_text(descr) + " array");
}
template <class = void>
[[noreturn]] void throw_invalid_stored_code(long long code, const std::string& index, const dtype& type) {
    const dtype_info& info = type.info();
    throw value_range_error("dequantize: code " + std::to_string(code) + " at index " + index + " is not a " +
                            type.to_string() + " code (" + std::to_string(static_cast<long long>(info.range.lo)) +
                            ".." + std::to_string(static_cast<long long>(info.range.hi)) + ")");
}

template <class = void>
[[noreturn]] void throw_cannot_cast(const std::string& purpose, PyArray_Descr* from, PyArray_Descr* to, bool unsafe) {
    throw dtype_error(purpose + ": cannot cast numpy " + descr_text(from) + " to " + descr_text(to) +
                      (unsafe ? "" : " without losing values (pass narrowing='wrap' to cast anyway)"));
}

template <class = void>
[[noreturn]] void throw_takes_integers(const dtype_info& type, PyArray_Descr* descr) {
    throw dtype_error(std::string(type.name) + " takes integer values, got numpy " + descr_text(descr));
}

template <class = void>
[[noreturn]] void throw_not_numbers(PyObject* given, PyArrayObject* made) {
    throw dtype_error(given != nullptr
                          ? "expected an array-like of numbers, got " + std::string(Py_TYPE(given)->tp_name)
                          : "expected an array of numbers, got a numpy " + descr_text(PyArray_DESCR(made)) + " array");
}

// ---- The numpy dtype of an array or argument

template <class = void>
[[noreturn]] void throw_no_numpy_dtype(PyObject* given) {
    throw dtype_error(given == nullptr ? std::string("from_numpy_dtype: no numpy dtype given (NULL)")
                                       : "not a numpy dtype: " + safe_repr(given));
}

template <class = void>
[[noreturn]] void throw_metadata_not_dict(PyArray_Descr* descr, PyObject* metadata) {
    throw metadata_error("numpy dtype " + descr_text(descr) + ": metadata must be a dict, got " + safe_repr(metadata));
}

template <class = void>
[[noreturn]] void throw_no_megbrain_dtype(PyArray_Descr* descr, bool structured, const dtype_info* narrow_to) {
    const std::string named = "numpy dtype " + descr_text(descr);
    if (structured)
        throw dtype_error(named + " is structured or a subarray; npybridge converts only plain numeric dtypes");
    if (narrow_to != nullptr) {
        throw dtype_error(named + " has no MegBrain dtype and narrowing to " + std::string(narrow_to->name) +
                          " is off (narrowing='reject')");
    }
    throw dtype_error(named +
                      " has no MegBrain dtype (supported: bool, int8, int16, int32, int64 -> Int32, uint8, uint16, "
                      "float16, float32, float64 -> Float32, complex64, and quantized int/uint with "
                      "metadata['mgb_dtype'])");
}

template <class = void>
[[noreturn]] void throw_takes_no_params(const dtype_info& type) {
    throw dtype_error(std::string(type.name) + " is not a quantized dtype: it takes no params");
}

// ---- metadata['mgb_dtype'] and the numpy forms of dtypes

template <class = void>
[[noreturn]] void throw_metadata_kind(const std::string& where, const char* expected, PyObject* got) {
    throw metadata_error(where + " must be " + expected + ", got " + safe_repr(got) + " (" + type_text(got) + ")");
}

template <class = void>
[[noreturn]] void throw_metadata_number_range(const std::string& where, PyObject* got, const dtype_info& type,
                                              bool real) {
    throw metadata_error(
        where + " " + safe_repr(got) +
        (real ? std::string(" does not fit a float")
              : " is outside [" + number_text(type.range.lo) + ", " + number_text(type.range.hi) + "]"));
}

/// An unexpected key (`key`), or a param missing.
template <class = void>
[[noreturn]] void throw_metadata_key(const dtype_info& type, PyObject* key, std::string_view missing,
                                     const std::string& where, const std::string& takes) {
    if (key != nullptr) {
        throw metadata_error(std::string(type.name) + ": unexpected key " + safe_repr(key) + " in " + where + " (" +
                             std::string(type.name) + " takes " + takes + ")");
    }
    throw metadata_error(std::string(type.name) + ": " + std::string(missing) + " is missing from " + where);
}

/// metadata['mgb_dtype']['name']: absent (null), not UTF-8, or not a quantized dtype's.
template <class = void>
[[noreturn]] void throw_metadata_name(const std::string& where, PyObject* name, const dtype_info* found) {
    if (name == nullptr) throw metadata_error(where + " has no 'name'");
    if (!PyUnicode_Check(name) || PyUnicode_AsUTF8(name) == nullptr) {
        PyErr_Clear();
        throw metadata_error(where + "['name'] is not valid UTF-8");
    }
    std::string known;
    for (const dtype_info& entry : dtype_table) {
        if (entry.is_quantized) known += (known.empty() ? "" : ", ") + std::string(entry.name);
    }
    throw metadata_error(where + "['name'] " + safe_repr(name) +
                         (found ? " is not a quantized dtype" : " is not a dtype npybridge knows") +
                         " (quantized dtypes: " + known + ")");
}

template <class = void>
[[noreturn]] void throw_stored_as(const dtype_info& type, PyArray_Descr* descr) {
    throw metadata_error(std::string(type.name) + " is stored as numpy " + std::string(type.numpy_name()) +
                         ", not as numpy " + descr_text(descr));
}

template <class = void>
[[noreturn]] void throw_user_dtype_unregistered(const dtype_info& entry) {
    throw dtype_error(std::string(entry.name) + "'s numpy user dtype '" + std::string(entry.numpy_name()) +
                      "' is not registered in this interpreter");
}

template <class = void>
[[noreturn]] void throw_no_descr_made(const dtype& type, bool memory) {
    throw error(memory ? "to_numpy_dtype: out of memory building metadata for " + type.to_string()
                       : "to_numpy_dtype: numpy could not make a dtype for " + type.to_string());
}

template <class = void>
[[noreturn]] void throw_no_ml_dtypes_4_bit(const std::string& missing) {
    throw dtype_error("lowbit_format='ml_dtypes': " + missing);
}

}  // namespace detail
}  // namespace npybridge
