// npybridge/detail/numpy_dtypes.hpp — np.dtype <-> npybridge dtype: the mechanism behind numpy_dtype.hpp.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/options.hpp>
#include <npybridge/core/quantization.hpp>
#include <npybridge/detail/descr_cache.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/detail/mgb_metadata.hpp>
#include <npybridge/detail/numpy_dtype_rows.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// from_numpy_dtype of a descr.
inline numpy_dtype_match dtype_of_descr(PyArray_Descr* descr, narrowing mode) {
    if (descr == nullptr) throw_no_numpy_dtype(nullptr);
    PyObject* metadata = descr_metadata(descr);
    const int type_num = descr_type_num(descr);
    if (metadata == nullptr && type_num >= 0 && type_num < numpy_builtin_type_count) {
        const std::size_t row = rows_by_type_num[static_cast<std::size_t>(type_num)];
        if (row != dtype_count) return {dtype(dtype_table[row].id), false};
    }
    if (type_num >= NPY_USERDEF && user_dtype_lookup_hook != nullptr) {
        if (const std::optional<dtype_enum> id = user_dtype_lookup_hook(type_num)) return {dtype(*id), false};
    }
    if (metadata != nullptr) {
        const std::size_t hash = descr_pointer_hash{}(descr);
        auto& cache = parsed_descrs();
        if (auto* hit = cache.find(descr, hash)) return {*hit->value, false};
        if (!PyDict_Check(metadata)) {
            throw_metadata_not_dict(descr, metadata);
        }
        // Strong references: a __float__ while parsing may change the dicts.
        const object held_metadata = object::borrow(metadata);
        const object mgb = object::borrow(PyDict_GetItemWithError(metadata, key_object("mgb_dtype")));
        if (!mgb && PyErr_Occurred()) throw python_error();
        if (mgb) {
            metadata_stamp stamp(descr);  // before parsing: a change while parsing is a later miss
            dtype parsed = parse_mgb_dtype(descr, mgb.get());
            cache.put(descr, hash, descr, parsed, std::move(stamp));
            return {parsed, false};
        }
    }
    if (descr_names(descr) != nullptr || descr_has_subarray(descr)) {
        throw_no_megbrain_dtype(descr, true, nullptr);
    }
    const char kind = descr_kind(descr);
    const auto itemsize = static_cast<std::size_t>(descr_elsize(descr));
    const std::size_t row = plain_row_for(kind, itemsize);
    if (row != dtype_count) return {dtype(dtype_table[row].id), false};
    if (itemsize == 8 && (kind == 'i' || kind == 'f')) {
        const dtype_enum narrow_to = kind == 'i' ? dtype_enum::Int32 : dtype_enum::Float32;
        if (mode == narrowing::reject) {
            throw_no_megbrain_dtype(descr, false, &info(narrow_to));
        }
        return {dtype(narrow_to), true};
    }
    throw_no_megbrain_dtype(descr, false, nullptr);
}

/// quantized_dtype.
inline dtype quantized_dtype_of(dtype_enum id, PyObject* scale, PyObject* zero_point) {
    const dtype_info& type = info(id);
    if (!type.is_quantized) throw_takes_no_params(type);
    object fields = object::steal(PyDict_New());
    if (!fields) throw python_error();
    auto put = [&](const char* key, PyObject* value) {
        if (value == nullptr || value == Py_None) return;
        if (PyDict_SetItem(fields.get(), key_object(key), value) != 0) throw python_error();
    };
    put("scale", scale);
    put("zero_point", zero_point);
    return params_from_dict(type, fields.get(),
                            [&] { return std::string("the params given for ") + std::string(type.name); });
}

/// from_numpy_dtype of anything np.dtype() accepts.
inline numpy_dtype_match dtype_of_object(PyObject* dtype_like, narrowing mode) {
    PyArray_Descr* descr = nullptr;
    if (!PyArray_DescrConverter(dtype_like, &descr)) {
        PyErr_Clear();
        throw_no_numpy_dtype(dtype_like);
    }
    object owner = object::steal(reinterpret_cast<PyObject*>(descr));
    return dtype_of_descr(descr, mode);
}

/// to_numpy_dtype.
inline object numpy_dtype_of(const dtype& type, user_dtype_choice choice = user_dtype_choice::preferred) {
    const std::size_t row = table_index(type.id());
    const dtype_info& entry = dtype_table[row];
    if (entry.form == numpy_form::builtin && !entry.is_quantized) {  // numpy's own descr
        return object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(numpy_type_nums[row])));
    }
    return to_numpy_dtype_slow(type, row, choice);
}

}  // namespace detail
}  // namespace npybridge
