// npybridge/detail/numpy_compat.hpp — PyArray_Descr field access that compiles against NumPy 1.x and 2.x.
#pragma once

#include <npybridge/core/config.hpp>

// NumPy 2 moved elsize, alignment and the legacy fields behind npy_2_compat.h's PyDataType_* accessors, which NumPy
// 1.x lacks; npybridge reads a descr through these functions only.

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

#if NPY_ABI_VERSION >= 0x02000000
inline npy_intp descr_elsize(const PyArray_Descr* descr) noexcept { return PyDataType_ELSIZE(descr); }
inline npy_intp descr_alignment(const PyArray_Descr* descr) noexcept { return PyDataType_ALIGNMENT(descr); }
inline PyObject* descr_metadata(const PyArray_Descr* descr) noexcept { return PyDataType_METADATA(descr); }
inline PyObject* descr_names(const PyArray_Descr* descr) noexcept { return PyDataType_NAMES(descr); }
inline bool descr_has_subarray(const PyArray_Descr* descr) noexcept { return PyDataType_SUBARRAY(descr) != nullptr; }
inline npy_uint64 descr_flags(const PyArray_Descr* descr) noexcept { return PyDataType_FLAGS(descr); }
#else
inline npy_intp descr_elsize(const PyArray_Descr* descr) noexcept { return descr->elsize; }
inline npy_intp descr_alignment(const PyArray_Descr* descr) noexcept { return descr->alignment; }
inline PyObject* descr_metadata(const PyArray_Descr* descr) noexcept { return descr->metadata; }
inline PyObject* descr_names(const PyArray_Descr* descr) noexcept { return descr->names; }
inline bool descr_has_subarray(const PyArray_Descr* descr) noexcept { return descr->subarray != nullptr; }
inline npy_uint64 descr_flags(const PyArray_Descr* descr) noexcept { return static_cast<unsigned char>(descr->flags); }
#endif

/// How many built-in numpy type numbers there are.
#if NPY_ABI_VERSION >= 0x02000000
inline constexpr int numpy_builtin_type_count = NPY_NTYPES_LEGACY;
#else
inline constexpr int numpy_builtin_type_count = NPY_NTYPES;
#endif

/// Type number, kind and byte order: the struct's stable head.
inline int descr_type_num(const PyArray_Descr* descr) noexcept { return descr->type_num; }
inline char descr_kind(const PyArray_Descr* descr) noexcept { return descr->kind; }
inline char descr_byteorder(const PyArray_Descr* descr) noexcept { return descr->byteorder; }

}  // namespace detail
}  // namespace npybridge
