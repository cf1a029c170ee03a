// npybridge/detail/mgb_metadata.hpp — metadata["mgb_dtype"] read (validated) and written, as MegEngine does.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/detail/descr_cache.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/detail/numpy_dtype_rows.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// A Python number as the field wants it: float fields take reals and integers, integer fields integers, never bool.
inline double read_number(const dtype_info& type, std::string_view key, bool real, PyObject* obj) {
    auto where = [&] { return std::string(type.name) + ": " + std::string(key); };
    const bool is_bool = PyBool_Check(obj) || PyArray_IsScalar(obj, Bool);
    const bool is_integer = !is_bool && (PyLong_Check(obj) || PyArray_IsScalar(obj, Integer));
    if (real) {
        const bool is_real = !is_bool && (PyFloat_Check(obj) || PyArray_IsScalar(obj, Floating) || is_integer);
        if (!is_real) {
            throw_metadata_kind(where(), "a real number", obj);
        }
        // A subclass's __float__ may raise: its error is the answer (only an integer too large for a double is ours).
        const double value = PyFloat_AsDouble(obj);
        if (value == -1.0 && PyErr_Occurred()) {
            const bool ints_own_float = PyLong_Check(obj) && Py_TYPE(obj)->tp_as_number != nullptr &&
                                        Py_TYPE(obj)->tp_as_number->nb_float == PyLong_Type.tp_as_number->nb_float;
            if (!PyErr_ExceptionMatches(PyExc_OverflowError) || !ints_own_float) throw python_error();
            PyErr_Clear();
            throw_metadata_number_range(where(), obj, type, true);
        }
        return value;
    } else {
        if (!is_integer) {
            throw_metadata_kind(where(), "an integer", obj);
        }
        object index = object::steal(PyNumber_Index(obj));  // its __index__ may raise: that error stands
        if (!index) throw python_error();
        const long long value = PyLong_AsLongLong(index.get());
        if (value == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            throw_metadata_number_range(where(), obj, type, false);
        }
        return static_cast<double>(value);
    }
}

/// A str's UTF-8 text, whole; nullopt for anything else or invalid UTF-8 (no error pending).
inline maybe<std::string_view> utf8_text(PyObject* obj) {
    if (!PyUnicode_Check(obj)) return std::nullopt;
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(obj, &size);
    if (text == nullptr) {
        PyErr_Clear();
        return std::nullopt;
    }
    return std::string_view(text, static_cast<std::size_t>(size));
}

/// A quantized dtype from a dict keyed as metadata['mgb_dtype'] ('name' plus the param keys), validated; `where` names
/// the dict. Values are held by strong references: a __float__ may change the dict.
template <class Where>
dtype params_from_dict(const dtype_info& type, PyObject* fields, const Where& where) {
    param_values values = default_values(param_slots[table_index(type.id)]);
    // Any key beyond 'name' and the params is a mistake worth naming (zero_point on a symmetric dtype, a typo).
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(fields, &pos, &key, &value)) {
        const maybe<std::string_view> key_text = utf8_text(key);
        bool known = key_text && *key_text == "name";
        for (std::size_t i = 0; i < values.count; ++i) known = known || (key_text && *key_text == values.keys[i]);
        if (!known) {
            const object held = object::borrow(key);  // its repr may run Python code
            std::string takes = "name";
            for (std::size_t i = 0; i < values.count; ++i) takes += ", " + std::string(values.keys[i]);
            throw_metadata_key(type, key, {}, where(), takes);
        }
    }
    for (std::size_t i = 0; i < values.count; ++i) {
        const std::string_view key_name = values.keys[i];
        object item = object::borrow(PyDict_GetItemWithError(fields, key_object(key_name)));
        if (!item) {
            if (PyErr_Occurred()) throw python_error();
            throw_metadata_key(type, nullptr, key_name, where(), {});
        }
        const double number = read_number(type, key_name, values.is_real(i), item.get());
        check_field(type, key_name, values.is_real(i), number);
        values.value[i] = number;
    }
    return dtype_from_values(type.id, values);
}

/// A dtype from metadata["mgb_dtype"] as MegEngine writes it; errors name the numpy dtype and the key.
inline dtype parse_mgb_dtype(PyArray_Descr* descr, PyObject* mgb) {
    // Messages are built only when something is wrong.
    auto where = [&] { return "numpy dtype " + descr_text(descr) + ": metadata['mgb_dtype']"; };
    if (!PyDict_Check(mgb)) {
        throw_metadata_kind(where(), "a dict", mgb);
    }
    const object held_name = object::borrow(PyDict_GetItemWithError(mgb, key_object("name")));
    PyObject* name_obj = held_name.get();
    if (name_obj == nullptr) {
        if (PyErr_Occurred()) throw python_error();
        throw_metadata_name(where(), nullptr, nullptr);
    }
    if (!PyUnicode_Check(name_obj)) {
        throw_metadata_kind(where() + "['name']", "a str", name_obj);
    }
    const maybe<std::string_view> name = utf8_text(name_obj);
    if (!name) throw_metadata_name(where(), name_obj, nullptr);
    const dtype_info* found = find_dtype(*name);
    if (found == nullptr || !found->is_quantized) {
        throw_metadata_name(where(), name_obj, found);
    }
    const dtype_info& type = *found;
    const std::size_t row = table_index(type.id);
    // ml_dtypes' int4 / uint4 hold QuantizedS4 / Quantized4Asymm codes, one per byte.
    const maybe<ml_dtypes_subbyte> ml_kind =
        type.bits == 4 && type.is_packed ? ml_dtypes_subbyte_kind(descr) : std::nullopt;
    const bool ml_4bit =
        ml_kind && ml_kind->bits == 4 && ml_kind->is_signed == (type.coding == lowbit_coding::twos_complement);
    if (!ml_4bit &&
        (numpy_kinds[row] != descr_kind(descr) || static_cast<npy_intp>(numpy_itemsize(row)) != descr_elsize(descr))) {
        throw_stored_as(type, descr);
    }
    return params_from_dict(type, mgb, where);
}

inline void set_metadata(PyArray_Descr* descr, PyObject* metadata) noexcept {
#if NPY_ABI_VERSION >= 0x02000000
    PyObject** slot = PyArray_RUNTIME_VERSION >= NPY_2_0_API_VERSION
                          ? &reinterpret_cast<_PyArray_LegacyDescr*>(descr)->metadata
                          : &reinterpret_cast<PyArray_DescrProto*>(descr)->metadata;
#else
    PyObject** slot = &descr->metadata;
#endif
    PyObject* old = *slot;
    *slot = metadata;
    Py_XDECREF(old);
}

/// to_numpy_dtype for quantized and user dtypes, out of line.
[[gnu::noinline]] inline object to_numpy_dtype_slow(const dtype& type, std::size_t row, user_dtype_choice choice) {
    const dtype_info& entry = dtype_table[row];
    if (entry.form == numpy_form::none) {
        throw_no_numpy_form(entry);
    }
    if (entry.form == numpy_form::user_dtype) {
        PyArray_Descr* descr = user_dtype_descr_hook ? user_dtype_descr_hook(entry.id, choice) : nullptr;
        if (descr == nullptr) {
            throw_user_dtype_unregistered(entry);
        }
        return object::steal(reinterpret_cast<PyObject*>(descr));
    }
    const int type_num = numpy_type_nums[row];

    auto& cache = made_descrs();
    const std::size_t hash = type.hash();
    if (auto* hit = cache.find(type, hash)) return object::borrow(reinterpret_cast<PyObject*>(hit->descr));

    object fields = object::steal(PyDict_New());
    object name =
        object::steal(PyUnicode_FromStringAndSize(entry.name.data(), static_cast<Py_ssize_t>(entry.name.size())));
    if (!fields || !name || PyDict_SetItem(fields.get(), key_object("name"), name.get()) != 0) {
        throw_no_descr_made(type, true);
    }
    const param_values values = variant_values(type.all_params());
    for (std::size_t i = 0; i < values.count; ++i) {
        object value = object::steal(values.is_real(i) ? PyFloat_FromDouble(values.value[i])
                                                       : PyLong_FromLongLong(static_cast<long long>(values.value[i])));
        if (!value || PyDict_SetItem(fields.get(), key_object(values.keys[i]), value.get()) != 0) {
            throw_no_descr_made(type, true);
        }
    }
    object metadata = object::steal(PyDict_New());
    if (!metadata || PyDict_SetItem(metadata.get(), key_object("mgb_dtype"), fields.get()) != 0) {
        throw_no_descr_made(type, true);
    }
    PyArray_Descr* descr = PyArray_DescrNewFromType(type_num);
    if (descr == nullptr) throw_no_descr_made(type, false);
    set_metadata(descr, metadata.release());
    object result = object::steal(reinterpret_cast<PyObject*>(descr));
    cache.put(type, hash, descr, 0, metadata_stamp(descr));
    return result;
}

}  // namespace detail
}  // namespace npybridge
