// npybridge/detail/user_dtype_scalars.hpp — bfloat16 and intb1/2/4 scalar types and ArrFuncs, as NumPy sees them.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>
#include <npybridge/core/scalar_types.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The user dtypes as this interpreter has them, after register_user_dtypes() (type numbers, and scalar types kept for
/// the process).
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

/// The user dtypes are the rows of numpy_form::user_dtype; NumPy's name is the row's.
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

/// `id`'s place in user_dtype_ids, or user_dtype_count.
constexpr std::size_t user_dtype_slot(dtype_enum id) noexcept {
    std::size_t i = 0;
    while (i < user_dtype_count && user_dtype_ids[i] != id) ++i;
    return i;
}

/// What registration found per row: type number and scalar type (strong reference).
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

/// Class attribute marking the scalar types npybridge registers.
inline constexpr const char* registration_mark = "__npybridge_user_dtype__";

// ---- the scalar values

/// intbN: an int8 holding the odd value, |v| <= 2^N - 1.
template <unsigned Bits>
struct intb_traits {
    static constexpr int top = (1 << Bits) - 1;
    static constexpr bool valid(long long v) noexcept { return v >= -top && v <= top && (v & 1) != 0; }
};

template <class Value>
struct scalar_object {
    PyObject_HEAD Value value;
};

inline std::string value_text(double v) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.6g", v);
    return buffer;
}

/// A Python number as double; false with an error set.
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

/// A Python int of any size rounded once to bfloat16, from its top 64 bits and a sticky bit.
inline bool bfloat16_of_integer(PyObject* integer, bfloat16& out) {
    int overflow = 0;
    const long long small = PyLong_AsLongLongAndOverflow(integer, &overflow);
    if (overflow == 0) {
        if (small == -1 && PyErr_Occurred()) return false;
        out = bfloat16::from_integer(small);
        return true;
    }
    const object magnitude = object::steal(PyNumber_Absolute(integer));
    if (!magnitude) return false;
    const object bit_count = object::steal(PyObject_CallMethod(magnitude.get(), "bit_length", nullptr));
    if (!bit_count) return false;
    const long long bits = PyLong_AsLongLong(bit_count.get());
    if (bits == -1 && PyErr_Occurred()) return false;
    const long long shift = bits - 64;  // bits > 63: the overflow said so
    const object shift_object = object::steal(PyLong_FromLongLong(shift));
    if (!shift_object) return false;
    const object top = object::steal(PyNumber_Rshift(magnitude.get(), shift_object.get()));
    if (!top) return false;
    const object back = object::steal(PyNumber_Lshift(top.get(), shift_object.get()));
    if (!back) return false;
    const int exact = PyObject_RichCompareBool(back.get(), magnitude.get(), Py_EQ);
    if (exact < 0) return false;
    std::uint64_t m = PyLong_AsUnsignedLongLong(top.get());
    if (m == static_cast<std::uint64_t>(-1) && PyErr_Occurred()) return false;
    if (exact == 0) m |= 1u;
    const int exponent = shift > 1000 ? 1000 : static_cast<int>(shift);  // beyond 2^127: infinity either way
    out = bfloat16{static_cast<std::uint16_t>(round_to_binary32(overflow < 0, m, exponent, 8) >> 16)};
    return true;
}

/// A Python number rounded once to bfloat16 from its own value: ints of any size exactly, long double from its bits,
/// other floats through double (exact).
inline bool bfloat16_of(PyObject* obj, bfloat16& out) {
    if (PyFloat_Check(obj)) {
        out = bfloat16::from_double(PyFloat_AS_DOUBLE(obj));
        return true;
    }
    if (PyArray_IsScalar(obj, LongDouble)) {
        npy_longdouble value = 0;
        PyArray_ScalarAsCtype(obj, &value);
        out = bfloat16::from_long_double(value);
        return true;
    }
    if (PyLong_Check(obj) || PyArray_IsScalar(obj, Integer)) {
        const object integer = object::steal(PyNumber_Index(obj));
        return integer && bfloat16_of_integer(integer.get(), out);
    }
    double d = 0;
    if (!number_of(obj, d)) return false;
    out = bfloat16::from_double(d);
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

/// A user dtype's behaviour, what the scalar, ArrFuncs, casts and loops ask of it (their UserDtype).
struct bf16_user_dtype {
    using storage = bfloat16;
    static constexpr dtype_enum id = dtype_enum::BFloat16;
    static constexpr bool is_float = true;
    static constexpr const char* name = info(id).numpy.chars.data();
    static int& type_num() { return user_dtypes_found()[user_dtype_slot(id)].type_num; }
    static PyObject*& type_object() { return user_dtypes_found()[user_dtype_slot(id)].type; }
    static double to_double(storage v) { return v.to_double(); }
    static bool from_object(PyObject* obj, storage& out) { return bfloat16_of(obj, out); }
    static PyObject* to_python_number(storage v) { return PyFloat_FromDouble(to_double(v)); }
    /// As float's "%g" (ml_dtypes' text), NaN without a sign.
    static std::string text(storage v) { return std::isnan(to_double(v)) ? "nan" : value_text(to_double(v)); }
    static void swap(storage& v) { v.bits = static_cast<std::uint16_t>((v.bits >> 8) | (v.bits << 8)); }
};

template <unsigned Bits>
struct intb_user_dtype {
    using storage = std::int8_t;
    static constexpr dtype_enum id = Bits == 1 ? dtype_enum::IntB1 : Bits == 2 ? dtype_enum::IntB2 : dtype_enum::IntB4;
    static_assert(info(id).bits == Bits, "npybridge: intb_user_dtype<Bits> is the IntB dtype of Bits bits");
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

/// a `op` b for Python's comparison codes, quietly (a NaN raises no "invalid" flag).
inline bool compare_quietly(int op, double x, double y) noexcept {
    switch (op) {
        case Py_EQ: return x == y;
        case Py_NE: return x != y;
        case Py_LT: return std::isless(x, y);
        case Py_LE: return std::islessequal(x, y);
        case Py_GT: return std::isgreater(x, y);
        default: return std::isgreaterequal(x, y);
    }
}

// ---- scalar type slots

template <class UserDtype>
PyObject* scalar_new_value(typename UserDtype::storage value) {
    auto* type = reinterpret_cast<PyTypeObject*>(UserDtype::type_object());
    auto* self = reinterpret_cast<scalar_object<typename UserDtype::storage>*>(type->tp_alloc(type, 0));
    if (self == nullptr) return nullptr;
    self->value = value;
    return reinterpret_cast<PyObject*>(self);
}

template <class UserDtype>
typename UserDtype::storage& scalar_value(PyObject* obj) {
    return reinterpret_cast<scalar_object<typename UserDtype::storage>*>(obj)->value;
}

template <class UserDtype>
bool is_scalar(PyObject* obj) {
    return UserDtype::type_object() != nullptr &&
           PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(UserDtype::type_object()));
}

template <class UserDtype>
PyObject* scalar_tp_new(PyTypeObject*, PyObject* args, PyObject* kwargs) {
    PyObject* value = nullptr;
    static const char* keywords[] = {"value", nullptr};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", const_cast<char**>(keywords), &value)) return nullptr;
    typename UserDtype::storage stored{};
    if (value == nullptr) {
        if constexpr (!UserDtype::is_float) stored = 1;  // 0 is not an intb value
    } else if (is_scalar<UserDtype>(value)) {
        stored = scalar_value<UserDtype>(value);
    } else if (!UserDtype::from_object(value, stored)) {
        return nullptr;
    }
    return scalar_new_value<UserDtype>(stored);
}

template <class UserDtype>
PyObject* scalar_repr(PyObject* self) {
    return PyUnicode_FromString(UserDtype::text(scalar_value<UserDtype>(self)).c_str());
}

template <class UserDtype>
PyObject* scalar_float(PyObject* self) {
    return PyFloat_FromDouble(UserDtype::to_double(scalar_value<UserDtype>(self)));
}

template <class UserDtype>
PyObject* scalar_int(PyObject* self) {
    const double value = UserDtype::to_double(scalar_value<UserDtype>(self));
    if (!std::isfinite(value)) {
        PyErr_SetString(PyExc_ValueError, "cannot convert a non-finite value to int");
        return nullptr;
    }
    return PyLong_FromDouble(value);
}

template <class UserDtype>
int scalar_bool(PyObject* self) {
    return UserDtype::to_double(scalar_value<UserDtype>(self)) != 0.0;
}

template <class UserDtype>
Py_hash_t scalar_hash(PyObject* self) {
    object number = object::steal(PyFloat_FromDouble(UserDtype::to_double(scalar_value<UserDtype>(self))));
    return number ? PyObject_Hash(number.get()) : -1;
}

template <class UserDtype>
PyObject* scalar_richcompare(PyObject* a, PyObject* b, int op) {
    // Compared as Python floats: exact for both.
    object left =
        object::steal(is_scalar<UserDtype>(a) ? PyFloat_FromDouble(UserDtype::to_double(scalar_value<UserDtype>(a)))
                                              : (Py_INCREF(a), a));
    object right =
        object::steal(is_scalar<UserDtype>(b) ? PyFloat_FromDouble(UserDtype::to_double(scalar_value<UserDtype>(b)))
                                              : (Py_INCREF(b), b));
    if (!left || !right) return nullptr;
    return PyObject_RichCompare(left.get(), right.get(), op);
}

template <class UserDtype>
PyObject* scalar_reduce(PyObject* self, PyObject*) {
    object number = object::steal(UserDtype::to_python_number(scalar_value<UserDtype>(self)));
    if (!number) return nullptr;
    return Py_BuildValue("(O(O))", reinterpret_cast<PyObject*>(Py_TYPE(self)), number.get());
}

// ---- ArrFuncs

/// An element in .item() and .tolist(): bfloat16 as a Python float (as NumPy's floats), intbN as its scalar.
template <class UserDtype>
PyObject* array_getitem(void* data, void* array) {
    typename UserDtype::storage value;
    std::memcpy(&value, data, sizeof value);
    if (array != nullptr && !PyArray_ISNOTSWAPPED(static_cast<PyArrayObject*>(array))) UserDtype::swap(value);
    if constexpr (UserDtype::is_float) return UserDtype::to_python_number(value);
    return scalar_new_value<UserDtype>(value);
}

template <class UserDtype>
int array_setitem(PyObject* item, void* data, void* array) {
    typename UserDtype::storage value{};
    if (is_scalar<UserDtype>(item)) {
        value = scalar_value<UserDtype>(item);
    } else if (!UserDtype::from_object(item, value)) {
        return -1;
    }
    if (array != nullptr && !PyArray_ISNOTSWAPPED(static_cast<PyArrayObject*>(array))) UserDtype::swap(value);
    std::memcpy(data, &value, sizeof value);
    return 0;
}

template <class UserDtype>
void array_copyswapn(void* dst, npy_intp dst_stride, void* src, npy_intp src_stride, npy_intp n, int swap, void*) {
    using storage = typename UserDtype::storage;
    // No source: swap dst in place (numpy's copyswapn contract).
    auto* out = static_cast<char*>(dst);
    const auto* in = src != nullptr ? static_cast<const char*>(src) : out;
    const npy_intp in_stride = src != nullptr ? src_stride : dst_stride;
    if (src == nullptr && !swap) return;
    for (npy_intp i = 0; i < n; ++i) {
        storage value;
        std::memcpy(&value, in + i * in_stride, sizeof value);
        if (swap) UserDtype::swap(value);
        std::memcpy(out + i * dst_stride, &value, sizeof value);
    }
}

template <class UserDtype>
void array_copyswap(void* dst, void* src, int swap, void* array) {
    array_copyswapn<UserDtype>(dst, 0, src, 0, 1, swap, array);
}

template <class UserDtype>
npy_bool array_nonzero(void* data, void* array) {
    typename UserDtype::storage value;
    std::memcpy(&value, data, sizeof value);
    if (array != nullptr && !PyArray_ISNOTSWAPPED(static_cast<PyArrayObject*>(array))) UserDtype::swap(value);
    return UserDtype::to_double(value) != 0.0;
}

template <class UserDtype>
int array_compare(const void* a, const void* b, void*) {
    typename UserDtype::storage x, y;
    std::memcpy(&x, a, sizeof x);
    std::memcpy(&y, b, sizeof y);
    const double dx = UserDtype::to_double(x), dy = UserDtype::to_double(y);
    // NumPy's float order: NaN last, NaNs equal.
    if (std::isnan(dx) || std::isnan(dy)) return std::isnan(dx) ? (std::isnan(dy) ? 0 : 1) : -1;
    return dx < dy ? -1 : dx > dy ? 1 : 0;
}

template <class UserDtype>
int array_argmax(void* data, npy_intp n, npy_intp* index, void*) {
    const auto* values = static_cast<const typename UserDtype::storage*>(data);
    double best = -std::numeric_limits<double>::infinity();
    *index = 0;
    for (npy_intp i = 0; i < n; ++i) {
        const double v = UserDtype::to_double(values[i]);
        if (v > best || std::isnan(v)) {
            best = v;
            *index = i;
            if (std::isnan(v)) break;
        }
    }
    return 0;
}

/// As NumPy's float argmin: the first NaN, else the first smallest.
template <class UserDtype>
int array_argmin(void* data, npy_intp n, npy_intp* index, void*) {
    const auto* values = static_cast<const typename UserDtype::storage*>(data);
    double best = std::numeric_limits<double>::infinity();
    *index = 0;
    for (npy_intp i = 0; i < n; ++i) {
        const double v = UserDtype::to_double(values[i]);
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

}  // namespace detail
}  // namespace npybridge
