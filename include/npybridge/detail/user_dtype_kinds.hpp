// npybridge/detail/user_dtype_kinds.hpp — what NumPy needs of npybridge's user dtypes bfloat16 and intb1 / intb2 /
// intb4: their scalar types, ArrFuncs, casts and comparison loops, and register_one() of a single dtype.
// Registration itself (once per interpreter, shared with other modules and libraries) is user_dtypes.hpp's.
#pragma once

#include <npybridge/config.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/numpy_dtype.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/scalar_types.hpp>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The four user dtypes as this interpreter has them (type numbers and scalar
/// types, which stay referenced for the life of the process), after
/// register_user_dtypes(): a view of what it found for each user dtype row.
struct user_dtype_set {
    int bfloat16 = -1;
    int intb1 = -1;
    int intb2 = -1;
    int intb4 = -1;
    PyObject* bfloat16_type = nullptr;  ///< scalar types (strong references)
    PyObject* intb1_type = nullptr;
    PyObject* intb2_type = nullptr;
    PyObject* intb4_type = nullptr;
    bool bfloat16_from_ml_dtypes = false;
};

namespace detail {

/// npybridge's user dtypes are the table's rows of numpy_form::user_dtype (BFloat16, IntB1, IntB2, IntB4):
/// the NumPy name is the row's (also the scalar type's name), the type character its category's.
constexpr std::size_t user_dtype_count = [] {
    std::size_t n = 0;
    for (const dtype_info& row : dtype_table) n += row.form == numpy_form::user_dtype ? 1 : 0;
    return n;
}();

/// The user dtype rows in table order.
inline constexpr std::array<dtype_enum, user_dtype_count> user_dtype_ids = [] {
    std::array<dtype_enum, user_dtype_count> ids{};
    std::size_t n = 0;
    for (const dtype_info& row : dtype_table) {
        if (row.form == numpy_form::user_dtype) ids[n++] = row.id;
    }
    return ids;
}();

/// Where `id` is in user_dtype_ids (user_dtype_count for a dtype that is not a user dtype).
constexpr std::size_t user_dtype_slot(dtype_enum id) noexcept {
    std::size_t i = 0;
    while (i < user_dtype_count && user_dtype_ids[i] != id) ++i;
    return i;
}

/// What registration found for each user dtype row: its type number and scalar type (a strong reference).
struct user_dtype_found {
    int type_num = -1;
    PyObject* type = nullptr;
};

inline std::array<user_dtype_found, user_dtype_count>& user_dtypes_found() noexcept {
    static std::array<user_dtype_found, user_dtype_count> found{};
    return found;
}

inline user_dtype_set& user_dtypes_state() noexcept {
    static user_dtype_set set;
    return set;
}

/// Class attribute of the scalar types npybridge registers: the dtype's name.
inline constexpr const char* registration_mark = "__npybridge_user_dtype__";

// ---- the scalar values -----------------------------------------------------------

/// intbN: one int8 holding the odd value itself, |v| <= 2^N - 1.
template <unsigned Bits>
struct intb_traits {
    static constexpr int top = (1 << Bits) - 1;
    static constexpr bool valid(long long v) noexcept { return v >= -top && v <= top && (v & 1) != 0; }
};

template <class Value>
struct scalar_object {
    PyObject_HEAD
    Value value;
};

inline std::string value_text(double v) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.6g", v);
    return buffer;
}

/// A Python number as double, or a Python error (-1 returned, error set).
inline bool number_of(PyObject* obj, double& out) {
    if (PyFloat_Check(obj)) {
        out = PyFloat_AS_DOUBLE(obj);
        return true;
    }
    object as_float = object::steal(PyNumber_Float(obj));
    if (!as_float) return false;
    out = PyFloat_AS_DOUBLE(as_float.get());
    return true;
}

/// An integral Python number for intbN, or ValueError / TypeError.
template <unsigned Bits>
bool intb_of(PyObject* obj, std::int8_t& out) {
    long long value = 0;
    if (PyLong_Check(obj) || PyArray_IsScalar(obj, Integer) || PyArray_IsScalar(obj, Bool) || PyBool_Check(obj)) {
        object index = object::steal(PyNumber_Index(obj));
        if (!index) {
            PyErr_Clear();
            object as_long = object::steal(PyNumber_Long(obj));
            if (!as_long) return false;
            index = std::move(as_long);
        }
        value = PyLong_AsLongLong(index.get());
        if (value == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "intb%u: %S is out of range [-%d, %d]", Bits, obj, intb_traits<Bits>::top,
                         intb_traits<Bits>::top);
            return false;
        }
    } else {
        double d = 0;
        if (!number_of(obj, d)) return false;
        if (!(d == std::floor(d)) || std::fabs(d) > 1e18) {
            PyErr_Format(PyExc_ValueError, "intb%u: %S is not an odd integer in [-%d, %d]", Bits, obj,
                         intb_traits<Bits>::top, intb_traits<Bits>::top);
            return false;
        }
        value = static_cast<long long>(d);
    }
    if (!intb_traits<Bits>::valid(value)) {
        PyErr_Format(PyExc_ValueError, "intb%u: %lld is not an odd integer in [-%d, %d]", Bits, value,
                     intb_traits<Bits>::top, intb_traits<Bits>::top);
        return false;
    }
    out = static_cast<std::int8_t>(value);
    return true;
}

/// Per-type behaviour shared by the generic scalar, ArrFuncs and cast code.
struct bf16_kind {
    using storage = bfloat16;
    static constexpr dtype_enum id = dtype_enum::BFloat16;
    static constexpr bool is_float = true;
    static constexpr const char* name = info(id).numpy.chars.data();
    static int& type_num() { return user_dtypes_found()[user_dtype_slot(id)].type_num; }
    static PyObject*& type_object() { return user_dtypes_found()[user_dtype_slot(id)].type; }
    static double to_double(storage v) { return static_cast<double>(v.to_float()); }
    static bool from_object(PyObject* obj, storage& out) {
        double d = 0;
        if (!number_of(obj, d)) return false;
        out = bfloat16::from_float(static_cast<float>(d));
        return true;
    }
    static PyObject* to_python_number(storage v) { return PyFloat_FromDouble(to_double(v)); }
    static std::string text(storage v) { return value_text(to_double(v)); }
    static void swap(storage& v) { v.bits = static_cast<std::uint16_t>((v.bits >> 8) | (v.bits << 8)); }
};

template <unsigned Bits>
struct intb_kind {
    using storage = std::int8_t;
    static constexpr dtype_enum id = Bits == 1 ? dtype_enum::IntB1 : Bits == 2 ? dtype_enum::IntB2 : dtype_enum::IntB4;
    static_assert(info(id).bits == Bits, "npybridge: intb_kind<Bits> is the IntB dtype of Bits bits");
    static constexpr bool is_float = false;
    static constexpr const char* name = info(id).numpy.chars.data();
    static int& type_num() { return user_dtypes_found()[user_dtype_slot(id)].type_num; }
    static PyObject*& type_object() { return user_dtypes_found()[user_dtype_slot(id)].type; }
    static double to_double(storage v) { return static_cast<double>(v); }
    static bool from_object(PyObject* obj, storage& out) { return intb_of<Bits>(obj, out); }
    static PyObject* to_python_number(storage v) { return PyLong_FromLong(v); }
    static std::string text(storage v) { return std::to_string(static_cast<int>(v)); }
    static void swap(storage&) {}
};

// ---- scalar type slots --------------------------------------------------------------

template <class Kind>
PyObject* scalar_new_value(typename Kind::storage value) {
    auto* type = reinterpret_cast<PyTypeObject*>(Kind::type_object());
    auto* self = reinterpret_cast<scalar_object<typename Kind::storage>*>(type->tp_alloc(type, 0));
    if (self == nullptr) return nullptr;
    self->value = value;
    return reinterpret_cast<PyObject*>(self);
}

template <class Kind>
typename Kind::storage& scalar_value(PyObject* obj) {
    return reinterpret_cast<scalar_object<typename Kind::storage>*>(obj)->value;
}

template <class Kind>
bool is_scalar(PyObject* obj) {
    return Kind::type_object() != nullptr && PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(Kind::type_object()));
}

template <class Kind>
PyObject* scalar_tp_new(PyTypeObject*, PyObject* args, PyObject* kwargs) {
    PyObject* value = nullptr;
    static const char* keywords[] = {"value", nullptr};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", const_cast<char**>(keywords), &value)) return nullptr;
    typename Kind::storage stored{};
    if (value == nullptr) {
        if constexpr (!Kind::is_float) stored = 1;  // 0 is not an intb value
    } else if (is_scalar<Kind>(value)) {
        stored = scalar_value<Kind>(value);
    } else if (!Kind::from_object(value, stored)) {
        return nullptr;
    }
    return scalar_new_value<Kind>(stored);
}

template <class Kind>
PyObject* scalar_repr(PyObject* self) {
    return PyUnicode_FromString(Kind::text(scalar_value<Kind>(self)).c_str());
}

template <class Kind>
PyObject* scalar_float(PyObject* self) {
    return PyFloat_FromDouble(Kind::to_double(scalar_value<Kind>(self)));
}

template <class Kind>
PyObject* scalar_int(PyObject* self) {
    const double value = Kind::to_double(scalar_value<Kind>(self));
    if (!std::isfinite(value)) {
        PyErr_SetString(PyExc_ValueError, "cannot convert a non-finite value to int");
        return nullptr;
    }
    return PyLong_FromDouble(value);
}

template <class Kind>
int scalar_bool(PyObject* self) {
    return Kind::to_double(scalar_value<Kind>(self)) != 0.0;
}

template <class Kind>
Py_hash_t scalar_hash(PyObject* self) {
    object number = object::steal(PyFloat_FromDouble(Kind::to_double(scalar_value<Kind>(self))));
    return number ? PyObject_Hash(number.get()) : -1;
}

template <class Kind>
PyObject* scalar_richcompare(PyObject* a, PyObject* b, int op) {
    // Compare as Python floats: exact for both bfloat16 and intbN values.
    object left = object::steal(is_scalar<Kind>(a) ? PyFloat_FromDouble(Kind::to_double(scalar_value<Kind>(a)))
                                                   : (Py_INCREF(a), a));
    object right = object::steal(is_scalar<Kind>(b) ? PyFloat_FromDouble(Kind::to_double(scalar_value<Kind>(b)))
                                                    : (Py_INCREF(b), b));
    if (!left || !right) return nullptr;
    return PyObject_RichCompare(left.get(), right.get(), op);
}

template <class Kind>
PyObject* scalar_reduce(PyObject* self, PyObject*) {
    object number = object::steal(Kind::to_python_number(scalar_value<Kind>(self)));
    if (!number) return nullptr;
    return Py_BuildValue("(O(O))", reinterpret_cast<PyObject*>(Py_TYPE(self)), number.get());
}

// ---- ArrFuncs -----------------------------------------------------------------------

template <class Kind>
PyObject* array_getitem(void* data, void* array) {
    typename Kind::storage value;
    std::memcpy(&value, data, sizeof value);
    if (array != nullptr && !PyArray_ISNOTSWAPPED(static_cast<PyArrayObject*>(array))) Kind::swap(value);
    return scalar_new_value<Kind>(value);
}

template <class Kind>
int array_setitem(PyObject* item, void* data, void* array) {
    typename Kind::storage value{};
    if (is_scalar<Kind>(item)) {
        value = scalar_value<Kind>(item);
    } else if (!Kind::from_object(item, value)) {
        return -1;
    }
    if (array != nullptr && !PyArray_ISNOTSWAPPED(static_cast<PyArrayObject*>(array))) Kind::swap(value);
    std::memcpy(data, &value, sizeof value);
    return 0;
}

template <class Kind>
void array_copyswapn(void* dst, npy_intp dst_stride, void* src, npy_intp src_stride, npy_intp n, int swap, void*) {
    using storage = typename Kind::storage;
    // No source: swap dst in place (ndarray.byteswap); numpy's contract for copyswapn.
    auto* out = static_cast<char*>(dst);
    const auto* in = src != nullptr ? static_cast<const char*>(src) : out;
    const npy_intp in_stride = src != nullptr ? src_stride : dst_stride;
    if (src == nullptr && !swap) return;
    for (npy_intp i = 0; i < n; ++i) {
        storage value;
        std::memcpy(&value, in + i * in_stride, sizeof value);
        if (swap) Kind::swap(value);
        std::memcpy(out + i * dst_stride, &value, sizeof value);
    }
}

template <class Kind>
void array_copyswap(void* dst, void* src, int swap, void* array) {
    array_copyswapn<Kind>(dst, 0, src, 0, 1, swap, array);
}

template <class Kind>
npy_bool array_nonzero(void* data, void* array) {
    typename Kind::storage value;
    std::memcpy(&value, data, sizeof value);
    if (array != nullptr && !PyArray_ISNOTSWAPPED(static_cast<PyArrayObject*>(array))) Kind::swap(value);
    return Kind::to_double(value) != 0.0;
}

template <class Kind>
int array_compare(const void* a, const void* b, void*) {
    typename Kind::storage x, y;
    std::memcpy(&x, a, sizeof x);
    std::memcpy(&y, b, sizeof y);
    const double dx = Kind::to_double(x), dy = Kind::to_double(y);
    // NumPy's order for floats: NaN after everything, NaNs equal among themselves.
    if (std::isnan(dx) || std::isnan(dy)) return std::isnan(dx) ? (std::isnan(dy) ? 0 : 1) : -1;
    return dx < dy ? -1 : dx > dy ? 1 : 0;
}

template <class Kind>
int array_argmax(void* data, npy_intp n, npy_intp* index, void*) {
    const auto* values = static_cast<const typename Kind::storage*>(data);
    double best = -std::numeric_limits<double>::infinity();
    *index = 0;
    for (npy_intp i = 0; i < n; ++i) {
        const double v = Kind::to_double(values[i]);
        if (v > best || std::isnan(v)) {
            best = v;
            *index = i;
            if (std::isnan(v)) break;
        }
    }
    return 0;
}

/// As NumPy's float argmin: the first NaN if there is one, else the first smallest.
template <class Kind>
int array_argmin(void* data, npy_intp n, npy_intp* index, void*) {
    const auto* values = static_cast<const typename Kind::storage*>(data);
    double best = std::numeric_limits<double>::infinity();
    *index = 0;
    for (npy_intp i = 0; i < n; ++i) {
        const double v = Kind::to_double(values[i]);
        if (std::isnan(v)) {
            *index = i;
            break;
        }
        if (v < best) {
            best = v;
            *index = i;
        }
    }
    return 0;
}

// ---- casts --------------------------------------------------------------------------

/// A float cast to a C integer type as NumPy's float32 casts come out on
/// x86-64, where C leaves out-of-range values undefined and NumPy's loops use
/// the truncating conversions, whose "invalid" answer is the lowest integer:
/// signed types up to 32 bits (and the small unsigned ones) through int32,
/// int64 through int64, uint32 / uint64 through the signed conversion of the
/// same width, shifted by 2^31 / 2^63 for values at or above it. NaN and
/// infinities come out as those conversions give them.
template <class Integer>
Integer integer_like_numpy(float value) {
    auto truncate = [](double v, auto lowest) -> decltype(lowest) {
        using wide = decltype(lowest);
        const double limit = -static_cast<double>(lowest);  // 2^31 or 2^63
        return v > -limit - 1 && v < limit ? static_cast<wide>(v) : lowest;
    };
    const double v = value;
    if constexpr (sizeof(Integer) < 4 || (sizeof(Integer) == 4 && std::is_signed_v<Integer>)) {
        return static_cast<Integer>(truncate(v, INT32_MIN));
    } else if constexpr (std::is_signed_v<Integer>) {
        return static_cast<Integer>(truncate(v, INT64_MIN));
    } else if constexpr (sizeof(Integer) == 4) {
        if (v >= 2147483648.0) return static_cast<Integer>(static_cast<std::uint32_t>(truncate(v - 2147483648.0, INT32_MIN)) ^ 0x80000000u);
        return static_cast<Integer>(static_cast<std::uint32_t>(truncate(v, INT32_MIN)));
    } else {
        constexpr double two63 = 9223372036854775808.0;
        if (v >= two63) return static_cast<Integer>(static_cast<std::uint64_t>(truncate(v - two63, INT64_MIN)) ^ (std::uint64_t{1} << 63));
        return static_cast<Integer>(static_cast<std::uint64_t>(truncate(v, INT64_MIN)));
    }
}

/// Tag for numpy's bool (npy_bool is unsigned char, the same C type as uint8).
struct numpy_bool_tag {
    using type = npy_bool;
};
/// Tag for numpy's half (npy_half is uint16, the same C type as npy_uint16).
struct numpy_half_tag {
    using type = npy_half;
};

template <class T>
struct cast_storage {
    using type = T;
};
template <>
struct cast_storage<numpy_bool_tag> {
    using type = npy_bool;
};
template <>
struct cast_storage<numpy_half_tag> {
    using type = npy_half;
};

template <class Kind, class Builtin>
void cast_from_user(void* from, void* to, npy_intp n, void*, void*) {
    using out_t = typename cast_storage<Builtin>::type;
    const auto* in = static_cast<const typename Kind::storage*>(from);
    auto* out = static_cast<out_t*>(to);
    for (npy_intp i = 0; i < n; ++i) {
        const double value = Kind::to_double(in[i]);
        if constexpr (std::is_same_v<Builtin, numpy_half_tag>) {
            out[i] = half::from_float(static_cast<float>(value)).bits;
        } else if constexpr (std::is_same_v<Builtin, numpy_bool_tag>) {
            out[i] = value != 0.0;
        } else if constexpr (std::is_integral_v<Builtin>) {
            out[i] = integer_like_numpy<Builtin>(static_cast<float>(value));  // exact: bfloat16 and intbN values are floats
        } else {
            out[i] = static_cast<Builtin>(value);
        }
    }
}

template <class Kind, class Builtin>
void cast_to_user(void* from, void* to, npy_intp n, void*, void*) {
    const auto* in = static_cast<const typename cast_storage<Builtin>::type*>(from);
    auto* out = static_cast<typename Kind::storage*>(to);
    for (npy_intp i = 0; i < n; ++i) {
        double value;
        if constexpr (std::is_same_v<Builtin, numpy_half_tag>) value = static_cast<double>(half{in[i]}.to_float());
        else if constexpr (std::is_same_v<Builtin, numpy_bool_tag>) value = in[i] != 0;  // any nonzero byte is True
        else value = static_cast<double>(in[i]);
        if constexpr (Kind::is_float) {
            out[i] = bfloat16::from_float(static_cast<float>(value));
        } else {
            constexpr unsigned bits = info(Kind::id).bits;
            if (!(value == std::floor(value)) || !intb_traits<bits>::valid(static_cast<long long>(value))) {
                // Casts run with the GIL (the dtype needs the Python API): numpy reports this error.
                // numpy hands a cast loop a buffered chunk, not the array: the
                // position in the array is unknown here, so none is named.
                if (!PyErr_Occurred()) {
                    PyErr_Format(PyExc_ValueError,
                                 "%s: cannot hold %s, which is not an odd integer in [-%d, %d] (numpy's cast does not tell "
                                 "where it is; npybridge's own conversions name the index)",
                                 Kind::name, value_text(value).c_str(), intb_traits<bits>::top, intb_traits<bits>::top);
                }
                out[i] = 1;
                continue;
            }
            out[i] = static_cast<std::int8_t>(value);
        }
    }
}

template <class Kind>
void user_to_user_identity(void* from, void* to, npy_intp n, void*, void*) {
    std::memcpy(to, from, static_cast<std::size_t>(n) * sizeof(typename Kind::storage));
}

// ---- ufunc loops: comparisons ---------------------------------------------------------

template <class Kind, int Op>
void compare_loop(char** args, npy_intp const* dimensions, npy_intp const* steps, void*) {
    const npy_intp n = dimensions[0];
    for (npy_intp i = 0; i < n; ++i) {
        typename Kind::storage a, b;
        std::memcpy(&a, args[0] + i * steps[0], sizeof a);
        std::memcpy(&b, args[1] + i * steps[1], sizeof b);
        const double x = Kind::to_double(a), y = Kind::to_double(b);
        bool r = false;
        switch (Op) {
            case Py_EQ: r = x == y; break;
            case Py_NE: r = x != y; break;
            case Py_LT: r = x < y; break;
            case Py_LE: r = x <= y; break;
            case Py_GT: r = x > y; break;
            case Py_GE: r = x >= y; break;
        }
        *reinterpret_cast<npy_bool*>(args[2] + i * steps[2]) = r;
    }
}

// ---- registration ------------------------------------------------------------------------

template <class Kind>
bool register_casts(PyArray_Descr* user_descr, int type_num) {
    bool ok = true;
    auto both = [&](int builtin, PyArray_VectorUnaryFunc* from_user, PyArray_VectorUnaryFunc* to_user, bool safe_out) {
        ok = ok && PyArray_RegisterCastFunc(user_descr, builtin, from_user) == 0;
        PyArray_Descr* builtin_descr = PyArray_DescrFromType(builtin);
        ok = ok && PyArray_RegisterCastFunc(builtin_descr, type_num, to_user) == 0;
        if (ok && safe_out) ok = PyArray_RegisterCanCast(user_descr, builtin, NPY_NOSCALAR) == 0;
        Py_DECREF(builtin_descr);
    };
    constexpr bool is_bf16 = Kind::is_float;
    both(NPY_BOOL, cast_from_user<Kind, numpy_bool_tag>, cast_to_user<Kind, numpy_bool_tag>, false);
    both(NPY_INT8, cast_from_user<Kind, npy_int8>, cast_to_user<Kind, npy_int8>, !is_bf16);
    both(NPY_UINT8, cast_from_user<Kind, npy_uint8>, cast_to_user<Kind, npy_uint8>, false);
    both(NPY_INT16, cast_from_user<Kind, npy_int16>, cast_to_user<Kind, npy_int16>, !is_bf16);
    both(NPY_UINT16, cast_from_user<Kind, npy_uint16>, cast_to_user<Kind, npy_uint16>, false);
    both(NPY_INT32, cast_from_user<Kind, npy_int32>, cast_to_user<Kind, npy_int32>, !is_bf16);
    both(NPY_UINT32, cast_from_user<Kind, npy_uint32>, cast_to_user<Kind, npy_uint32>, false);
    both(NPY_INT64, cast_from_user<Kind, npy_int64>, cast_to_user<Kind, npy_int64>, !is_bf16);
    both(NPY_UINT64, cast_from_user<Kind, npy_uint64>, cast_to_user<Kind, npy_uint64>, false);
    // 'q' / 'Q' (np.longlong, array.array("q")): their own type numbers even where they are 64 bits like NPY_INT64.
    if (NPY_LONGLONG != NPY_INT64) {
        both(NPY_LONGLONG, cast_from_user<Kind, npy_longlong>, cast_to_user<Kind, npy_longlong>, !is_bf16);
        both(NPY_ULONGLONG, cast_from_user<Kind, npy_ulonglong>, cast_to_user<Kind, npy_ulonglong>, false);
    }
    both(NPY_HALF, cast_from_user<Kind, numpy_half_tag>, cast_to_user<Kind, numpy_half_tag>, !is_bf16);
    both(NPY_FLOAT32, cast_from_user<Kind, npy_float32>, cast_to_user<Kind, npy_float32>, true);
    both(NPY_FLOAT64, cast_from_user<Kind, npy_float64>, cast_to_user<Kind, npy_float64>, true);
    return ok;
}

template <class Kind>
bool register_comparisons(int type_num) {
    object numpy = object::steal(PyImport_ImportModule("numpy"));
    if (!numpy) return false;
    struct entry {
        const char* ufunc;
        PyUFuncGenericFunction loop;
    };
    const entry loops[] = {
        {"equal", compare_loop<Kind, Py_EQ>}, {"not_equal", compare_loop<Kind, Py_NE>},
        {"less", compare_loop<Kind, Py_LT>},  {"less_equal", compare_loop<Kind, Py_LE>},
        {"greater", compare_loop<Kind, Py_GT>}, {"greater_equal", compare_loop<Kind, Py_GE>},
    };
    const int types[] = {type_num, type_num, NPY_BOOL};
    for (const entry& e : loops) {
        object ufunc = object::steal(PyObject_GetAttrString(numpy.get(), e.ufunc));
        if (!ufunc) return false;
        if (PyUFunc_RegisterLoopForType(reinterpret_cast<PyUFuncObject*>(ufunc.get()), type_num, e.loop, types, nullptr) < 0) {
            return false;
        }
    }
    return true;
}

/// Registers one user dtype: its scalar type (a subclass of np.generic named
/// `<module>.<name>`), ArrFuncs, casts and comparison loops.
template <class Kind>
bool register_one(const std::string& module_name) {
    const char type_char = Kind::is_float ? 'f' : 'i';
    using storage = typename Kind::storage;
    static const std::string qualified = module_name + "." + Kind::name;
    static PyMethodDef methods[] = {
        {"__reduce__", scalar_reduce<Kind>, METH_NOARGS, nullptr},
        {nullptr, nullptr, 0, nullptr},
    };
    static PyType_Slot slots[] = {
        {Py_tp_new, reinterpret_cast<void*>(scalar_tp_new<Kind>)},
        {Py_tp_repr, reinterpret_cast<void*>(scalar_repr<Kind>)},
        {Py_tp_str, reinterpret_cast<void*>(scalar_repr<Kind>)},
        {Py_tp_hash, reinterpret_cast<void*>(scalar_hash<Kind>)},
        {Py_tp_richcompare, reinterpret_cast<void*>(scalar_richcompare<Kind>)},
        {Py_nb_float, reinterpret_cast<void*>(scalar_float<Kind>)},
        {Py_nb_int, reinterpret_cast<void*>(scalar_int<Kind>)},
        {Py_nb_bool, reinterpret_cast<void*>(scalar_bool<Kind>)},
        {Py_tp_methods, methods},
        {0, nullptr},
    };
    static PyType_Spec spec = {qualified.c_str(), static_cast<int>(sizeof(scalar_object<storage>)), 0,
                               Py_TPFLAGS_DEFAULT, slots};
    object bases = object::steal(PyTuple_Pack(1, reinterpret_cast<PyObject*>(&PyGenericArrType_Type)));
    if (!bases) return false;
    PyObject* type = PyType_FromSpecWithBases(&spec, bases.get());
    if (type == nullptr) return false;
    Kind::type_object() = type;
    // The mark by which any npybridge module finds this registration again (find_registered).
    object mark = object::steal(PyUnicode_FromString(Kind::name));
    if (!mark || PyObject_SetAttrString(type, registration_mark, mark.get()) != 0) return false;

    static PyArray_ArrFuncs funcs;
    PyArray_InitArrFuncs(&funcs);
    funcs.getitem = array_getitem<Kind>;
    funcs.setitem = array_setitem<Kind>;
    funcs.copyswap = array_copyswap<Kind>;
    funcs.copyswapn = array_copyswapn<Kind>;
    funcs.nonzero = array_nonzero<Kind>;
    funcs.compare = array_compare<Kind>;
    funcs.argmax = array_argmax<Kind>;
    funcs.argmin = array_argmin<Kind>;

#if NPY_ABI_VERSION >= 0x02000000
    static PyArray_DescrProto proto;
#else
    static PyArray_Descr proto;
#endif
    std::memset(static_cast<void*>(&proto), 0, sizeof proto);
    Py_SET_TYPE(reinterpret_cast<PyObject*>(&proto), &PyArrayDescr_Type);
    Py_SET_REFCNT(reinterpret_cast<PyObject*>(&proto), 1);
    proto.typeobj = reinterpret_cast<PyTypeObject*>(type);
    proto.kind = 'V';
    proto.type = type_char;
    proto.byteorder = sizeof(storage) > 1 ? '=' : '|';
    proto.flags = NPY_NEEDS_PYAPI | NPY_USE_GETITEM | NPY_USE_SETITEM;
    proto.type_num = 0;
    proto.elsize = static_cast<int>(sizeof(storage));
    proto.alignment = static_cast<int>(alignof(storage));
    proto.f = &funcs;
    proto.hash = -1;
    const int type_num = PyArray_RegisterDataType(&proto);
    if (type_num < 0) return false;
    Kind::type_num() = type_num;
    PyArray_Descr* descr = PyArray_DescrFromType(type_num);
    if (descr == nullptr) return false;
    const bool ok = register_casts<Kind>(descr, type_num) && register_comparisons<Kind>(type_num);
    Py_DECREF(descr);
    return ok;
}

}  // namespace detail
}  // namespace npybridge
