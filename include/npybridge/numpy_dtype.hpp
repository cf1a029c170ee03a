// npybridge/numpy_dtype.hpp — np.dtype ↔ npybridge dtype, quantized params carried in metadata["mgb_dtype"].
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/detail/descr_cache.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/core/quantization.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// What a numpy dtype becomes, and whether its values narrow (int64 -> Int32, float64 -> Float32).
struct numpy_dtype_match {
    dtype type;
    bool narrowed = false;
};

/// Which numpy user dtype stands for BFloat16 / IntB1/2/4: `preferred` (MegEngine's when imported, else ml_dtypes',
/// else npybridge's) makes results, `own` (npybridge's) is cast through.
enum class user_dtype_choice { preferred, own };

/// The numpy descr of a user dtype (new reference or nullptr), set by register_user_dtypes(); unset: none.
inline PyArray_Descr* (*user_dtype_descr_hook)(dtype_enum, user_dtype_choice) = nullptr;
/// The dtype of a numpy user type number, set by register_user_dtypes().
inline std::optional<dtype_enum> (*user_dtype_lookup_hook)(int) = nullptr;

/// The npybridge dtype of a numpy dtype (GIL and import_numpy() required). dtype_error when it has no MegBrain dtype,
/// metadata_error for bad quantized metadata, naming the dtype and key.
inline numpy_dtype_match from_numpy_dtype(PyArray_Descr* descr, narrowing mode = narrowing::checked);

/// A quantized dtype from Python values of its params (nullptr or None: not given), validated as metadata['mgb_dtype']
/// is. GIL required; throws metadata_error or the error a __float__ / __index__ raised.
inline dtype quantized_dtype(dtype_enum id, PyObject* scale, PyObject* zero_point = nullptr);

/// The same for anything np.dtype() accepts.
inline numpy_dtype_match from_numpy_dtype(PyObject* dtype_like, narrowing mode = narrowing::checked);

/// The numpy dtype of an npybridge dtype (new reference, cached per dtype). Quantized dtypes carry metadata
/// {"mgb_dtype": {"name", "scale"[, "zero_point"]}} as MegEngine writes it; user dtypes are `choice`'s.
inline object to_numpy_dtype(const dtype& type, user_dtype_choice choice = user_dtype_choice::preferred);

/// Example: a numpy dtype's npybridge dtype, and back (quantized dtypes keep MegEngine's metadata).
/// ```cpp
/// #include <npybridge/numpy_dtype.hpp>
///
/// PyObject* same_dtype(PyObject* numpy_dtype) {
///     const npybridge::numpy_dtype_match match = npybridge::from_numpy_dtype(numpy_dtype);
///     return npybridge::to_numpy_dtype(match.type).release();
/// }
/// ```

}  // namespace npybridge

// ---- Definitions ------------------------------------------------------------------------------------------------

#include <npybridge/detail/numpy_dtype_rows.hpp>
#include <npybridge/detail/mgb_metadata.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

inline numpy_dtype_match from_numpy_dtype(PyArray_Descr* descr, narrowing mode) {
    if (descr == nullptr) throw dtype_error("from_numpy_dtype: no numpy dtype given (NULL)");
    PyObject* metadata = detail::descr_metadata(descr);
    const int type_num = detail::descr_type_num(descr);
    if (metadata == nullptr && type_num >= 0 && type_num < detail::numpy_builtin_type_count) {
        const std::size_t row = detail::rows_by_type_num[static_cast<std::size_t>(type_num)];
        if (row != dtype_count) return {dtype(dtype_table[row].id), false};
    }
    if (type_num >= NPY_USERDEF && user_dtype_lookup_hook != nullptr) {
        if (const std::optional<dtype_enum> id = user_dtype_lookup_hook(type_num)) return {dtype(*id), false};
    }
    if (metadata != nullptr) {
        const std::size_t hash = detail::descr_pointer_hash{}(descr);
        auto& cache = detail::parsed_descrs();
        if (auto* hit = cache.find(descr, hash)) return {*hit->value, false};
        if (!PyDict_Check(metadata)) {
            throw metadata_error("numpy dtype " + detail::descr_text(descr) + ": metadata must be a dict, got " +
                                 safe_repr(metadata));
        }
        // Strong references: a __float__ while parsing may change the dicts.
        const object held_metadata = object::borrow(metadata);
        const object mgb = object::borrow(PyDict_GetItemWithError(metadata, detail::key_object("mgb_dtype")));
        if (!mgb && PyErr_Occurred()) throw python_error();
        if (mgb) {
            detail::metadata_stamp stamp(descr);  // before parsing: a change while parsing is a later miss
            dtype parsed = detail::parse_mgb_dtype(descr, mgb.get());
            cache.put(descr, hash, descr, parsed, std::move(stamp));
            return {parsed, false};
        }
    }
    if (detail::descr_names(descr) != nullptr || detail::descr_has_subarray(descr)) {
        throw dtype_error("numpy dtype " + detail::descr_text(descr) +
                          " is structured or a subarray; npybridge converts only plain numeric dtypes");
    }
    const char kind = detail::descr_kind(descr);
    const auto itemsize = static_cast<std::size_t>(detail::descr_elsize(descr));
    const std::size_t row = detail::plain_row_for(kind, itemsize);
    if (row != dtype_count) return {dtype(dtype_table[row].id), false};
    if (itemsize == 8 && (kind == 'i' || kind == 'f')) {
        const dtype_enum narrow_to = kind == 'i' ? dtype_enum::Int32 : dtype_enum::Float32;
        if (mode == narrowing::reject) {
            throw dtype_error("numpy dtype " + detail::descr_text(descr) + " has no MegBrain dtype and narrowing to " +
                              std::string(name_of(narrow_to)) + " is off (narrowing='reject')");
        }
        return {dtype(narrow_to), true};
    }
    throw dtype_error("numpy dtype " + detail::descr_text(descr) +
                      " has no MegBrain dtype (supported: bool, int8, int16, int32, int64 -> Int32, uint8, uint16, "
                      "float16, float32, float64 -> Float32, complex64, and quantized int/uint with "
                      "metadata['mgb_dtype'])");
}

inline dtype quantized_dtype(dtype_enum id, PyObject* scale, PyObject* zero_point) {
    const dtype_info& type = info(id);
    if (!type.is_quantized) throw dtype_error(std::string(type.name) + " is not a quantized dtype: it takes no params");
    object fields = object::steal(PyDict_New());
    if (!fields) throw python_error();
    auto put = [&](const char* key, PyObject* value) {
        if (value == nullptr || value == Py_None) return;
        if (PyDict_SetItem(fields.get(), detail::key_object(key), value) != 0) throw python_error();
    };
    put("scale", scale);
    put("zero_point", zero_point);
    return detail::params_from_dict(type, fields.get(),
                                    [&] { return std::string("the params given for ") + std::string(type.name); });
}

inline numpy_dtype_match from_numpy_dtype(PyObject* dtype_like, narrowing mode) {
    PyArray_Descr* descr = nullptr;
    if (!PyArray_DescrConverter(dtype_like, &descr)) {
        PyErr_Clear();
        throw dtype_error("not a numpy dtype: " + safe_repr(dtype_like));
    }
    object owner = object::steal(reinterpret_cast<PyObject*>(descr));
    return from_numpy_dtype(descr, mode);
}

inline object to_numpy_dtype(const dtype& type, user_dtype_choice choice) {
    const std::size_t row = table_index(type.id());
    const dtype_info& entry = dtype_table[row];
    if (entry.form == numpy_form::builtin && !entry.is_quantized) {  // numpy's own descr
        return object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(detail::numpy_type_nums[row])));
    }
    return detail::to_numpy_dtype_slow(type, row, choice);
}

/// Removed (a compile error): use from_numpy_dtype.
template <class... Args>
detail::from_numpy_removed<Args...> from_numpy(Args&&...);
/// Removed (a compile error): use to_numpy_dtype.
template <class... Args>
detail::to_numpy_removed<Args...> to_numpy(Args&&...);

}  // namespace npybridge
