// npybridge/detail/numpy_dtype_rows.hpp — the table as NumPy sees it: kinds, type numbers, ml_dtypes' sub-byte types.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/detail/messages.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <array>
#include <cstddef>
#include <optional>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
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
inline maybe<ml_dtypes_subbyte> ml_dtypes_subbyte_kind(PyArray_Descr* descr) {
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

/// A new ml_dtypes int4 / uint4 descr; dtype_error naming ml_dtypes when it cannot be imported.
inline object ml_dtypes_4bit_descr(bool is_signed) {
    object module = object::steal(PyImport_ImportModule("ml_dtypes"));
    if (!module) {
        PyErr_Clear();
        throw_no_ml_dtypes_4_bit("ml_dtypes is not importable here (pip install ml_dtypes)");
    }
    object type = object::steal(PyObject_GetAttrString(module.get(), is_signed ? "int4" : "uint4"));
    PyArray_Descr* descr = nullptr;
    if (!type || !PyArray_DescrConverter(type.get(), &descr)) {
        PyErr_Clear();
        throw_no_ml_dtypes_4_bit(std::string("this ml_dtypes has no ") + (is_signed ? "int4" : "uint4"));
    }
    PyArray_Descr* fresh = PyArray_DescrNew(descr);
    Py_DECREF(descr);
    if (fresh == nullptr) {
        PyErr_Clear();
        throw_no_ml_dtypes_4_bit("numpy could not copy ml_dtypes' 4-bit dtype");
    }
    return object::steal(reinterpret_cast<PyObject*>(fresh));
}

template <class... Use>
struct from_numpy_removed {
    static_assert(always_false<Use...>, "npybridge: from_numpy was removed in 0.6.0: call from_numpy_dtype");
};
template <class... Use>
struct to_numpy_removed {
    static_assert(always_false<Use...>, "npybridge: to_numpy was removed in 0.6.0: call to_numpy_dtype");
};

}  // namespace detail
}  // namespace npybridge
