// npybridge/detail/user_dtype_registry.hpp — user dtypes found, registered and shared once per interpreter.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/detail/mgb_metadata.hpp>
#include <npybridge/detail/user_dtype_casts.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

inline PyArray_Descr* own_descr_for(dtype_enum id) {
    const std::size_t slot = user_dtype_slot(id);
    const int type_num = slot < user_dtype_count ? user_dtypes_found()[slot].type_num : -1;
    return type_num < 0 ? nullptr : PyArray_DescrFromType(type_num);
}

inline std::optional<dtype_enum> own_dtype_of(int type_num) {
    if (type_num < 0) return std::nullopt;
    for (std::size_t slot = 0; slot < user_dtype_count; ++slot) {
        if (user_dtypes_found()[slot].type_num == type_num) return user_dtype_ids[slot];
    }
    return std::nullopt;
}

/// Registers each row this interpreter lacks.
using own_user_dtypes = std::tuple<bf16_user_dtype, intb_user_dtype<1>, intb_user_dtype<2>, intb_user_dtype<4>>;
static_assert(std::tuple_size_v<own_user_dtypes> == user_dtype_count,
              "npybridge: one behaviour struct per user dtype row");

template <std::size_t... I>
bool register_missing(const std::string& module_name, std::index_sequence<I...>) {
    return ((std::tuple_element_t<I, own_user_dtypes>::type_num() >= 0 ||
             register_one<std::tuple_element_t<I, own_user_dtypes>>(module_name)) &&
            ...);
}

// ---- other libraries' bfloat16 / intbN

/// Another library's user dtype holding one of npybridge's with the same bytes; rows in order of preference for results
/// (docs/dtypes.md).
struct foreign_user_dtype {
    const char* module;  ///< looked up in sys.modules, never imported
    const char* name;    ///< the scalar type's name there
    dtype_enum id;
};

inline constexpr foreign_user_dtype foreign_user_dtypes[] = {
    {"megengine.core._imperative_rt", "pybfloat16", dtype_enum::BFloat16},
    {"megengine.core._imperative_rt", "pyintb1", dtype_enum::IntB1},
    {"megengine.core._imperative_rt", "pyintb2", dtype_enum::IntB2},
    {"megengine.core._imperative_rt", "pyintb4", dtype_enum::IntB4},
    {"ml_dtypes", "bfloat16", dtype_enum::BFloat16},
};
inline constexpr std::size_t foreign_user_dtype_count = sizeof(foreign_user_dtypes) / sizeof(foreign_user_dtypes[0]);

/// Bytes of an element of `id` in numpy.
constexpr npy_intp unpacked_itemsize(dtype_enum id) noexcept { return id == dtype_enum::BFloat16 ? 2 : 1; }

/// The row of a user dtype whose scalar type is a row's `<module>.<name>` with its item size; else nullopt.
inline std::optional<dtype_enum> foreign_row_of(PyArray_Descr* descr) {
    auto* scalar = reinterpret_cast<PyObject*>(descr->typeobj);
    object module = object::steal(PyObject_GetAttrString(scalar, "__module__"));
    object name = module ? object::steal(PyObject_GetAttrString(scalar, "__name__")) : object{};
    const maybe<std::string_view> module_text = module ? utf8_text(module.get()) : std::nullopt;
    const maybe<std::string_view> name_text = name ? utf8_text(name.get()) : std::nullopt;
    PyErr_Clear();
    if (!module_text || !name_text) return std::nullopt;
    for (const foreign_user_dtype& row : foreign_user_dtypes) {
        if (*module_text == row.module && *name_text == row.name && descr_elsize(descr) == unpacked_itemsize(row.id)) {
            return row.id;
        }
    }
    return std::nullopt;
}

/// What each user type number is, found once (NumPy never removes a registration). GIL required.
class foreign_type_nums {
public:
    std::optional<dtype_enum> lookup(int type_num) {
        const int slot = type_num - NPY_USERDEF;
        if (slot < 0) return std::nullopt;
        if (slot >= static_cast<int>(cached.size())) return find(type_num);  // past the cache: asked every time
        std::int8_t& entry = cached[static_cast<std::size_t>(slot)];
        if (entry == unknown) {
            const std::optional<dtype_enum> found = find(type_num);
            entry = found ? static_cast<std::int8_t>(table_index(*found)) : not_foreign;
        }
        if (entry == not_foreign) return std::nullopt;
        return dtype_table[static_cast<std::size_t>(entry)].id;
    }

private:
    static constexpr std::int8_t unknown = -1, not_foreign = -2;
    static std::optional<dtype_enum> find(int type_num) {
        PyArray_Descr* descr = PyArray_DescrFromType(type_num);
        if (descr == nullptr) {
            PyErr_Clear();
            return std::nullopt;
        }
        object held = object::steal(reinterpret_cast<PyObject*>(descr));
        return foreign_row_of(descr);
    }
    std::array<std::int8_t, 64> cached = filled();
    static constexpr std::array<std::int8_t, 64> filled() {
        std::array<std::int8_t, 64> all{};
        for (auto& entry : all) entry = unknown;
        return all;
    }
};

inline foreign_type_nums& foreign_types() {
    static foreign_type_nums types;
    return types;
}

/// The descr of a row whose module is imported, or nullptr; each row keeps the module and descr it saw, so a call is
/// one sys.modules lookup. GIL required.
inline PyArray_Descr* foreign_descr(std::size_t row_index) {
    struct seen {
        PyObject* key = nullptr;     // interned
        PyObject* module = nullptr;  // where the descr came from
        PyArray_Descr* descr = nullptr;
    };
    static std::array<seen, foreign_user_dtype_count> rows{};
    const foreign_user_dtype& row = foreign_user_dtypes[row_index];
    seen& s = rows[row_index];
    if (s.key == nullptr && (s.key = PyUnicode_InternFromString(row.module)) == nullptr) {
        PyErr_Clear();
        return nullptr;
    }
    PyObject* module = PyDict_GetItemWithError(PyImport_GetModuleDict(), s.key);  // borrowed
    if (module == nullptr) {
        PyErr_Clear();
        return nullptr;
    }
    if (module != s.module) {
        Py_XDECREF(s.descr);
        s.descr = nullptr;
        Py_INCREF(module);
        Py_XSETREF(s.module, module);
        object type = object::steal(PyObject_GetAttrString(module, row.name));
        PyArray_Descr* descr = nullptr;
        if (type && PyArray_DescrConverter(type.get(), &descr)) {
            if (descr_type_num(descr) >= NPY_USERDEF && foreign_row_of(descr) == row.id) {
                s.descr = descr;
            } else {
                Py_DECREF(descr);
            }
        }
        PyErr_Clear();
    }
    if (s.descr == nullptr) return nullptr;
    Py_INCREF(s.descr);
    return s.descr;
}

/// The descr for `id`: `preferred`, the first imported row, else npybridge's own (maybe ml_dtypes' bfloat16, adopted).
inline PyArray_Descr* user_descr_for(dtype_enum id, user_dtype_choice choice) {
    if (choice == user_dtype_choice::preferred) {
        for (std::size_t row = 0; row < foreign_user_dtype_count; ++row) {
            if (foreign_user_dtypes[row].id != id) continue;
            if (PyArray_Descr* descr = foreign_descr(row)) return descr;
        }
    }
    return own_descr_for(id);
}

/// The npybridge dtype of a user type number, npybridge's or another library's.
inline std::optional<dtype_enum> user_dtype_of(int type_num) {
    if (const std::optional<dtype_enum> own = own_dtype_of(type_num)) return own;
    return foreign_types().lookup(type_num);
}

/// Where registrations live, so every npybridge module (each with its own statics) reuses them.
inline constexpr const char* registry_module = "_npybridge_user_dtypes";

/// The type number an npybridge module registered under `name` (marked with registration_mark), or -1; found even when
/// the registry module left sys.modules. Sets `type` (new reference).
inline int find_registered(const char* name, PyObject*& type) {
    for (int type_num = NPY_USERDEF;; ++type_num) {
        PyArray_Descr* descr = PyArray_DescrFromType(type_num);
        if (descr == nullptr) {  // past the last user dtype
            PyErr_Clear();
            return -1;
        }
        object held = object::steal(reinterpret_cast<PyObject*>(descr));
        auto* scalar = reinterpret_cast<PyObject*>(descr->typeobj);
        object mark = object::steal(PyObject_GetAttrString(scalar, registration_mark));
        const maybe<std::string_view> text = mark ? utf8_text(mark.get()) : std::nullopt;
        PyErr_Clear();
        if (text && *text == name) {
            Py_INCREF(scalar);
            type = scalar;
            return type_num;
        }
    }
}

using found_user_dtypes = std::array<user_dtype_found, user_dtype_count>;

inline const char* user_dtype_name(std::size_t slot) { return info(user_dtype_ids[slot]).numpy.chars.data(); }

/// `owner.<name>`'s type and type number; false with an error.
inline bool adopt_type(PyObject* owner, const char* name, user_dtype_found& into) {
    object type = object::steal(PyObject_GetAttrString(owner, name));
    PyArray_Descr* descr = nullptr;
    if (!type || !PyArray_DescrConverter(type.get(), &descr)) return false;
    into.type_num = descr_type_num(descr);
    Py_DECREF(descr);
    into.type = type.release();
    return true;
}

/// No registry module: types registered before (NumPy keeps them), ml_dtypes' bfloat16 when present, the rest
/// registered now under `module`'s name.
inline bool find_or_register(PyObject* module, found_user_dtypes& found) {
    for (std::size_t slot = 0; slot < user_dtype_count; ++slot) {
        found[slot].type_num = find_registered(user_dtype_name(slot), found[slot].type);
    }
    object module_name = object::steal(PyModule_GetNameObject(module));
    if (!module_name) return false;
    const char* name = PyUnicode_AsUTF8(module_name.get());
    if (name == nullptr) return false;
    user_dtype_found& bf16 = found[user_dtype_slot(dtype_enum::BFloat16)];
    if (bf16.type_num < 0) {
        object ml_dtypes = object::steal(PyImport_ImportModule("ml_dtypes"));
        if (!ml_dtypes || !adopt_type(ml_dtypes.get(), "bfloat16", bf16)) PyErr_Clear();
    }
    return register_missing(name, std::make_index_sequence<user_dtype_count>{});
}

/// The registry module the next npybridge module reads.
inline bool make_registry(PyObject* sys_modules, const found_user_dtypes& found) {
    object made = object::steal(PyModule_New(registry_module));
    if (!made) return false;
    for (std::size_t slot = 0; slot < user_dtype_count; ++slot) {
        Py_INCREF(found[slot].type);
        if (PyModule_AddObject(made.get(), user_dtype_name(slot), found[slot].type) != 0) return false;
    }
    return PyDict_SetItemString(sys_modules, registry_module, made.get()) == 0;
}

/// Publishes what was found: user_dtype_set, the hooks, `module`'s attributes.
inline bool publish_user_dtypes(PyObject* module, const found_user_dtypes& found, user_dtype_set& state) {
    const auto at = [&](dtype_enum id) -> const user_dtype_found& { return found[user_dtype_slot(id)]; };
    state.bfloat16 = at(dtype_enum::BFloat16).type_num;
    state.intb1 = at(dtype_enum::IntB1).type_num;
    state.intb2 = at(dtype_enum::IntB2).type_num;
    state.intb4 = at(dtype_enum::IntB4).type_num;
    state.bfloat16_type = at(dtype_enum::BFloat16).type;
    state.intb1_type = at(dtype_enum::IntB1).type;
    state.intb2_type = at(dtype_enum::IntB2).type;
    state.intb4_type = at(dtype_enum::IntB4).type;
    // ml_dtypes' bfloat16 carries no mark.
    state.bfloat16_from_ml_dtypes = PyObject_HasAttrString(state.bfloat16_type, registration_mark) == 0;
    user_dtype_descr_hook = user_descr_for;
    user_dtype_lookup_hook = user_dtype_of;
    for (std::size_t slot = 0; slot < user_dtype_count; ++slot) {
        Py_INCREF(found[slot].type);
        if (PyModule_AddObject(module, user_dtype_name(slot), found[slot].type) != 0) {
            Py_DECREF(found[slot].type);
            return false;
        }
    }
    return true;
}

}  // namespace detail
}  // namespace npybridge
