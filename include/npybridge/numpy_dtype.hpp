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

namespace detail {

template <std::size_t... I>
constexpr std::array<char, sizeof...(I)> make_numpy_kinds(std::index_sequence<I...>) {
    return {(dtype_table[I].form == numpy_form::builtin ? facts_of<typename row_t<I>::element_type>().numpy_kind
                                                        : '\0')...};
}

/// numpy kind of each row's element type (0: no built-in form).
inline constexpr std::array<char, dtype_count> numpy_kinds = make_numpy_kinds(std::make_index_sequence<dtype_count>{});

constexpr std::size_t numpy_itemsize(std::size_t row) noexcept {
    return dtype_table[row].is_packed ? 1 : dtype_table[row].element_size;
}

/// The plain dtype of numpy's (kind, itemsize), or dtype_count.
constexpr std::size_t plain_row_for(char kind, std::size_t itemsize) noexcept {
    for (std::size_t i = 0; i < dtype_count; ++i) {
        if (numpy_kinds[i] == kind && numpy_itemsize(i) == itemsize && !dtype_table[i].is_quantized) return i;
    }
    return dtype_count;
}

/// Row of each built-in numpy type number that maps to a plain dtype without narrowing, else dtype_count.
constexpr std::array<std::uint8_t, numpy_builtin_type_count> make_rows_by_type_num() {
    std::array<std::uint8_t, numpy_builtin_type_count> rows{};
    for (auto& row : rows) row = static_cast<std::uint8_t>(dtype_count);
    for (std::size_t i = dtype_count; i-- > 0;) {
        if (dtype_table[i].is_quantized || numpy_type_nums[i] < 0) continue;
        rows[static_cast<std::size_t>(numpy_type_nums[i])] = static_cast<std::uint8_t>(i);
    }
    return rows;
}

inline constexpr std::array<std::uint8_t, numpy_builtin_type_count> rows_by_type_num = make_rows_by_type_num();

/// ml_dtypes' sub-byte integer types: one value per byte, in the low bits.
struct ml_dtypes_subbyte {
    unsigned bits;
    bool is_signed;
};

/// Which ml_dtypes sub-byte type `descr` is, else nullopt. Looks in sys.modules only: an array of one means ml_dtypes
/// is loaded.
inline std::optional<ml_dtypes_subbyte> ml_dtypes_subbyte_kind(PyArray_Descr* descr) {
    if (descr_kind(descr) != 'V' || descr_elsize(descr) != 1) return std::nullopt;
    object module = object::steal(PyImport_GetModule(key_object("ml_dtypes")));
    if (!module) {
        PyErr_Clear();
        return std::nullopt;
    }
    const auto* scalar_type = reinterpret_cast<PyObject*>(descr->typeobj);
    static constexpr struct {
        const char* name;
        ml_dtypes_subbyte kind;
    } types[] = {{"int4", {4, true}},   {"uint4", {4, false}}, {"int2", {2, true}},
                 {"uint2", {2, false}}, {"int1", {1, true}},   {"uint1", {1, false}}};
    for (const auto& candidate : types) {
        object type = object::steal(PyObject_GetAttrString(module.get(), candidate.name));
        if (!type) {
            PyErr_Clear();
            continue;
        }
        if (type.get() == scalar_type) return candidate.kind;
    }
    return std::nullopt;
}

/// Whether `descr` is ml_dtypes' int4 (true) or uint4 (false).
inline std::optional<bool> ml_dtypes_4bit_kind(PyArray_Descr* descr) {
    const std::optional<ml_dtypes_subbyte> kind = ml_dtypes_subbyte_kind(descr);
    if (!kind || kind->bits != 4) return std::nullopt;
    return kind->is_signed;
}

/// A new ml_dtypes int4 / uint4 descr; dtype_error naming ml_dtypes when it cannot be imported.
inline object ml_dtypes_4bit_descr(bool is_signed) {
    object module = object::steal(PyImport_ImportModule("ml_dtypes"));
    if (!module) {
        PyErr_Clear();
        throw dtype_error("lowbit_format='ml_dtypes': ml_dtypes is not importable here (pip install ml_dtypes)");
    }
    object type = object::steal(PyObject_GetAttrString(module.get(), is_signed ? "int4" : "uint4"));
    PyArray_Descr* descr = nullptr;
    if (!type || !PyArray_DescrConverter(type.get(), &descr)) {
        PyErr_Clear();
        throw dtype_error(std::string("lowbit_format='ml_dtypes': this ml_dtypes has no ") +
                          (is_signed ? "int4" : "uint4"));
    }
    PyArray_Descr* fresh = PyArray_DescrNew(descr);
    Py_DECREF(descr);
    if (fresh == nullptr) {
        PyErr_Clear();
        throw dtype_error("lowbit_format='ml_dtypes': numpy could not copy ml_dtypes' 4-bit dtype");
    }
    return object::steal(reinterpret_cast<PyObject*>(fresh));
}

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

/// A Python number as the field wants it: float fields take reals and integers, integer fields integers, never bool.
inline double read_number(const dtype_info& type, std::string_view key, bool real, PyObject* obj) {
    auto where = [&] { return std::string(type.name) + ": " + std::string(key) + " "; };
    const bool is_bool = PyBool_Check(obj) || PyArray_IsScalar(obj, Bool);
    const bool is_integer = !is_bool && (PyLong_Check(obj) || PyArray_IsScalar(obj, Integer));
    if (real) {
        const bool is_real = !is_bool && (PyFloat_Check(obj) || PyArray_IsScalar(obj, Floating) || is_integer);
        if (!is_real) {
            throw metadata_error(where() + "must be a real number, got " + safe_repr(obj) + " (" + type_text(obj) +
                                 ")");
        }
        // A subclass's __float__ may raise: its error is the answer (only an integer too large for a double is ours).
        const double value = PyFloat_AsDouble(obj);
        if (value == -1.0 && PyErr_Occurred()) {
            const bool ints_own_float = PyLong_Check(obj) && Py_TYPE(obj)->tp_as_number != nullptr &&
                                        Py_TYPE(obj)->tp_as_number->nb_float == PyLong_Type.tp_as_number->nb_float;
            if (!PyErr_ExceptionMatches(PyExc_OverflowError) || !ints_own_float) throw python_error();
            PyErr_Clear();
            throw metadata_error(where() + safe_repr(obj) + " does not fit a float");
        }
        return value;
    } else {
        if (!is_integer) {
            throw metadata_error(where() + "must be an integer, got " + safe_repr(obj) + " (" + type_text(obj) + ")");
        }
        object index = object::steal(PyNumber_Index(obj));  // its __index__ may raise: that error stands
        if (!index) throw python_error();
        const long long value = PyLong_AsLongLong(index.get());
        if (value == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            throw metadata_error(where() + safe_repr(obj) + " is outside [" + number_text(type.range.lo) + ", " +
                                 number_text(type.range.hi) + "]");
        }
        return static_cast<double>(value);
    }
}

/// A str's UTF-8 text, whole; nullopt for anything else or invalid UTF-8 (no error pending).
inline std::optional<std::string_view> utf8_text(PyObject* obj) {
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
        const std::optional<std::string_view> key_text = utf8_text(key);
        bool known = key_text == std::optional<std::string_view>("name");
        for (std::size_t i = 0; i < values.count; ++i) known = known || key_text == values.keys[i];
        if (!known) {
            const object held = object::borrow(key);  // its repr may run Python code
            std::string takes = "name";
            for (std::size_t i = 0; i < values.count; ++i) takes += ", " + std::string(values.keys[i]);
            throw metadata_error(std::string(type.name) + ": unexpected key " + safe_repr(key) + " in " + where() +
                                 " (" + std::string(type.name) + " takes " + takes + ")");
        }
    }
    for (std::size_t i = 0; i < values.count; ++i) {
        const std::string_view key_name = values.keys[i];
        object item = object::borrow(PyDict_GetItemWithError(fields, key_object(key_name)));
        if (!item) {
            if (PyErr_Occurred()) throw python_error();
            throw metadata_error(std::string(type.name) + ": " + std::string(key_name) + " is missing from " + where());
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
        throw metadata_error(where() + " must be a dict, got " + safe_repr(mgb) + " (" + type_text(mgb) + ")");
    }
    const object held_name = object::borrow(PyDict_GetItemWithError(mgb, key_object("name")));
    PyObject* name_obj = held_name.get();
    if (name_obj == nullptr) {
        if (PyErr_Occurred()) throw python_error();
        throw metadata_error(where() + " has no 'name'");
    }
    if (!PyUnicode_Check(name_obj)) {
        throw metadata_error(where() + "['name'] must be a str, got " + safe_repr(name_obj) + " (" +
                             type_text(name_obj) + ")");
    }
    const std::optional<std::string_view> name = utf8_text(name_obj);
    if (!name) throw metadata_error(where() + "['name'] is not valid UTF-8");
    const dtype_info* found = find_dtype(*name);
    if (found == nullptr || !found->is_quantized) {
        std::string known;
        for (const dtype_info& entry : dtype_table) {
            if (!entry.is_quantized) continue;
            known += (known.empty() ? "" : ", ") + std::string(entry.name);
        }
        throw metadata_error(where() + "['name'] " + safe_repr(name_obj) +
                             (found ? " is not a quantized dtype" : " is not a dtype npybridge knows") +
                             " (quantized dtypes: " + known + ")");
    }
    const dtype_info& type = *found;
    const std::size_t row = table_index(type.id);
    // ml_dtypes' int4 / uint4 hold QuantizedS4 / Quantized4Asymm codes, one per byte.
    const bool ml_4bit =
        type.bits == 4 && type.is_packed &&
        ml_dtypes_4bit_kind(descr) == std::optional<bool>(type.coding == lowbit_coding::twos_complement);
    if (!ml_4bit &&
        (numpy_kinds[row] != descr_kind(descr) || static_cast<npy_intp>(numpy_itemsize(row)) != descr_elsize(descr))) {
        throw metadata_error(std::string(type.name) + " is stored as numpy " + std::string(type.numpy_name()) +
                             ", not as numpy " + descr_text(descr));
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

}  // namespace detail

/// Which numpy user dtype stands for BFloat16 / IntB1/2/4 when several libraries registered one: `preferred`
/// (MegEngine's when imported, else ml_dtypes', else npybridge's) makes results; `own` is npybridge's, which its
/// conversions cast through.
enum class user_dtype_choice { preferred, own };

/// The numpy descr of a user dtype (new reference or nullptr), set by register_user_dtypes(); unset: none.
inline PyArray_Descr* (*user_dtype_descr_hook)(dtype_enum, user_dtype_choice) = nullptr;
/// The dtype of a numpy user type number, set by register_user_dtypes().
inline std::optional<dtype_enum> (*user_dtype_lookup_hook)(int) = nullptr;

/// The npybridge dtype of a numpy dtype (GIL and import_numpy() required). dtype_error when it has no MegBrain dtype,
/// metadata_error for bad quantized metadata, naming the dtype and key.
inline numpy_dtype_match from_numpy_dtype(PyArray_Descr* descr, narrowing mode = narrowing::checked) {
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

/// A quantized dtype from Python values of its params (nullptr or None: not given), validated as metadata['mgb_dtype']
/// is. GIL required; throws metadata_error or the error a __float__ / __index__ raised.
inline dtype quantized_dtype(dtype_enum id, PyObject* scale, PyObject* zero_point = nullptr) {
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

/// The same for anything np.dtype() accepts.
inline numpy_dtype_match from_numpy_dtype(PyObject* dtype_like, narrowing mode = narrowing::checked) {
    PyArray_Descr* descr = nullptr;
    if (!PyArray_DescrConverter(dtype_like, &descr)) {
        PyErr_Clear();
        throw dtype_error("not a numpy dtype: " + safe_repr(dtype_like));
    }
    object owner = object::steal(reinterpret_cast<PyObject*>(descr));
    return from_numpy_dtype(descr, mode);
}

namespace detail {

/// to_numpy_dtype for quantized and user dtypes, out of line.
[[gnu::noinline]] inline object to_numpy_dtype_slow(const dtype& type, std::size_t row, user_dtype_choice choice) {
    const dtype_info& entry = dtype_table[row];
    if (entry.form == numpy_form::none) {
        throw dtype_error(std::string(entry.name) + " has no numpy form (MegEngine gives it none either)");
    }
    if (entry.form == numpy_form::user_dtype) {
        PyArray_Descr* descr = user_dtype_descr_hook ? user_dtype_descr_hook(entry.id, choice) : nullptr;
        if (descr == nullptr) {
            throw dtype_error(std::string(entry.name) + "'s numpy user dtype '" + std::string(entry.numpy_name()) +
                              "' is not registered in this interpreter");
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
        throw error("to_numpy_dtype: out of memory building metadata for " + type.to_string());
    }
    const param_values values = variant_values(type.all_params());
    for (std::size_t i = 0; i < values.count; ++i) {
        object value = object::steal(values.is_real(i) ? PyFloat_FromDouble(values.value[i])
                                                       : PyLong_FromLongLong(static_cast<long long>(values.value[i])));
        if (!value || PyDict_SetItem(fields.get(), key_object(values.keys[i]), value.get()) != 0) {
            throw error("to_numpy_dtype: out of memory building metadata for " + type.to_string());
        }
    }
    object metadata = object::steal(PyDict_New());
    if (!metadata || PyDict_SetItem(metadata.get(), key_object("mgb_dtype"), fields.get()) != 0) {
        throw error("to_numpy_dtype: out of memory building metadata for " + type.to_string());
    }
    PyArray_Descr* descr = PyArray_DescrNewFromType(type_num);
    if (descr == nullptr) throw error("to_numpy_dtype: numpy could not make a dtype for " + type.to_string());
    set_metadata(descr, metadata.release());
    object result = object::steal(reinterpret_cast<PyObject*>(descr));
    cache.put(type, hash, descr, 0, metadata_stamp(descr));
    return result;
}

}  // namespace detail

/// The numpy dtype of an npybridge dtype (new reference, cached per dtype). Quantized dtypes carry metadata
/// {"mgb_dtype": {"name", "scale"[, "zero_point"]}} as MegEngine writes it; user dtypes are `choice`'s.
inline object to_numpy_dtype(const dtype& type, user_dtype_choice choice = user_dtype_choice::preferred) {
    const std::size_t row = table_index(type.id());
    const dtype_info& entry = dtype_table[row];
    if (entry.form == numpy_form::builtin && !entry.is_quantized) {  // numpy's own descr
        return object::steal(reinterpret_cast<PyObject*>(PyArray_DescrFromType(detail::numpy_type_nums[row])));
    }
    return detail::to_numpy_dtype_slow(type, row, choice);
}

namespace detail {

template <class... Use>
struct from_numpy_removed {
    static_assert(always_false<Use...>, "npybridge: from_numpy was removed in 0.6.0: call from_numpy_dtype");
};
template <class... Use>
struct to_numpy_removed {
    static_assert(always_false<Use...>, "npybridge: to_numpy was removed in 0.6.0: call to_numpy_dtype");
};

}  // namespace detail

/// Removed: calling it is a compile error naming from_numpy_dtype.
template <class... Args>
detail::from_numpy_removed<Args...> from_numpy(Args&&...);
/// Removed: calling it is a compile error naming to_numpy_dtype.
template <class... Args>
detail::to_numpy_removed<Args...> to_numpy(Args&&...);

}  // namespace npybridge
