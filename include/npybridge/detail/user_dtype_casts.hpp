// npybridge/detail/user_dtype_casts.hpp — casts between the user dtypes and NumPy's types, comparison loops.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/bfloat16_kernels.hpp>
#include <npybridge/detail/bfloat16_math.hpp>
#include <npybridge/detail/user_dtype_scalars.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

// ---- casts

/// A float cast to a C integer as NumPy's float32 casts come out on x86-64, out-of-range values included.
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
        if (v >= 2147483648.0)
            return static_cast<Integer>(static_cast<std::uint32_t>(truncate(v - 2147483648.0, INT32_MIN)) ^
                                        0x80000000u);
        return static_cast<Integer>(static_cast<std::uint32_t>(truncate(v, INT32_MIN)));
    } else {
        constexpr double two63 = 9223372036854775808.0;
        if (v >= two63)
            return static_cast<Integer>(static_cast<std::uint64_t>(truncate(v - two63, INT64_MIN)) ^
                                        (std::uint64_t{1} << 63));
        return static_cast<Integer>(static_cast<std::uint64_t>(truncate(v, INT64_MIN)));
    }
}

/// numpy's bool (npy_bool is the C type of uint8).
struct numpy_bool_tag {
    using type = npy_bool;
};
/// numpy's half (npy_half is the C type of uint16).
struct numpy_half_tag {
    using type = npy_half;
};
/// numpy's complex types, as their two Real parts.
template <class Real>
struct numpy_complex_tag {
    using type = Real[2];
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
template <class Real>
struct cast_storage<numpy_complex_tag<Real>> {
    using type = Real[2];
};
template <class T>
struct is_complex_tag : std::false_type {};
template <class Real>
struct is_complex_tag<numpy_complex_tag<Real>> : std::true_type {};

template <class UserDtype, class Builtin>
void cast_from_user(void* from, void* to, npy_intp n, void*, void*) {
    using out_t = typename cast_storage<Builtin>::type;
    const auto* in = static_cast<const typename UserDtype::storage*>(from);
    auto* out = static_cast<out_t*>(to);
    if constexpr (UserDtype::is_float && std::is_same_v<Builtin, float>) {  // the vector kernel, same bits
        bfloat16_to_floats(reinterpret_cast<const std::uint16_t*>(in), static_cast<std::size_t>(n), out);
        return;
    }
    for (npy_intp i = 0; i < n; ++i) {
        if constexpr (UserDtype::is_float) {  // bfloat16: by bits, not FPU arithmetic
            const bfloat16 value = in[i];
            if constexpr (std::is_same_v<Builtin, numpy_half_tag>) {
                out[i] = half::from_float(value.to_float()).bits;
            } else if constexpr (std::is_same_v<Builtin, numpy_bool_tag>) {
                out[i] = (value.bits & 0x7FFFu) != 0;  // subnormals are True under DAZ too
            } else if constexpr (is_complex_tag<Builtin>::value) {
                using real = std::remove_extent_t<out_t>;
                out[i][0] = widen_bfloat16<real>(value);
                out[i][1] = 0;
            } else if constexpr (std::is_integral_v<Builtin>) {
                out[i] = integer_like_numpy<Builtin>(value.to_float());
            } else {
                out[i] = widen_bfloat16<Builtin>(value);
            }
        } else {  // intbN: small odd integers, exact everywhere
            const auto value = static_cast<std::int8_t>(UserDtype::to_double(in[i]));
            if constexpr (std::is_same_v<Builtin, numpy_half_tag>) {
                out[i] = half::from_float(static_cast<float>(value)).bits;
            } else if constexpr (std::is_same_v<Builtin, numpy_bool_tag>) {
                out[i] = value != 0;
            } else if constexpr (is_complex_tag<Builtin>::value) {
                using real = std::remove_extent_t<out_t>;
                out[i][0] = static_cast<real>(value);
                out[i][1] = 0;
            } else {
                out[i] = static_cast<Builtin>(value);
            }
        }
    }
}

template <class UserDtype, class Builtin>
void cast_to_user(void* from, void* to, npy_intp n, void*, void*) {
    const auto* in = static_cast<const typename cast_storage<Builtin>::type*>(from);
    auto* out = static_cast<typename UserDtype::storage*>(to);
    if constexpr (UserDtype::is_float && (std::is_same_v<Builtin, float> || std::is_same_v<Builtin, double>)) {
        auto* bits = reinterpret_cast<std::uint16_t*>(out);
        if constexpr (std::is_same_v<Builtin, float>) {
            floats_to_bfloat16(in, static_cast<std::size_t>(n), bits);
        } else {
            doubles_to_bfloat16(in, static_cast<std::size_t>(n), bits);
        }
        return;
    }
    for (npy_intp i = 0; i < n; ++i) {
        // Complex numbers give their real part (without NumPy's warning, as ml_dtypes); bfloat16 rounds once from the
        // source's own value, on bits, whatever the FPU mode.
        if constexpr (UserDtype::is_float) {
            if constexpr (std::is_same_v<Builtin, numpy_half_tag>)
                out[i] = bfloat16::from_float(half{in[i]}.to_float());  // exact widening, one rounding
            else if constexpr (std::is_same_v<Builtin, numpy_bool_tag>)
                out[i] = bfloat16{static_cast<std::uint16_t>(in[i] != 0 ? 0x3F80u : 0u)};
            else if constexpr (is_complex_tag<Builtin>::value)
                out[i] = round_to_bfloat16(in[i][0]);
            else
                out[i] = round_to_bfloat16(in[i]);
        } else {
            double value;
            if constexpr (std::is_same_v<Builtin, numpy_half_tag>)
                value = static_cast<double>(half{in[i]}.to_float());
            else if constexpr (std::is_same_v<Builtin, numpy_bool_tag>)
                value = in[i] != 0;  // any nonzero byte is True
            else if constexpr (is_complex_tag<Builtin>::value)
                value = static_cast<double>(in[i][0]);
            else
                value = static_cast<double>(in[i]);
            constexpr unsigned bits = info(UserDtype::id).bits;
            if (!(value == std::floor(value)) || !intb_traits<bits>::valid(static_cast<long long>(value))) {
                // Casts run with the GIL, and numpy reports this error; a cast loop sees a buffered chunk, so no
                // position is named.
                if (!PyErr_Occurred()) {
                    PyErr_Format(
                        PyExc_ValueError,
                        "%s: cannot hold %s, which is not an odd integer in [-%d, %d] (numpy's cast does not tell "
                        "where it is; npybridge's own conversions name the index)",
                        UserDtype::name, value_text(value).c_str(), intb_traits<bits>::top, intb_traits<bits>::top);
                }
                out[i] = 1;
                continue;
            }
            out[i] = static_cast<std::int8_t>(value);
        }
    }
}

template <class UserDtype>
void user_to_user_identity(void* from, void* to, npy_intp n, void*, void*) {
    std::memcpy(to, from, static_cast<std::size_t>(n) * sizeof(typename UserDtype::storage));
}

// ---- comparison loops

template <class UserDtype, int Op>
void compare_loop(char** args, npy_intp const* dimensions, npy_intp const* steps, void*) {
    const npy_intp n = dimensions[0];
    for (npy_intp i = 0; i < n; ++i) {
        typename UserDtype::storage a, b;
        std::memcpy(&a, args[0] + i * steps[0], sizeof a);
        std::memcpy(&b, args[1] + i * steps[1], sizeof b);
        const bool r = compare_quietly(Op, UserDtype::to_double(a), UserDtype::to_double(b));
        *reinterpret_cast<npy_bool*>(args[2] + i * steps[2]) = r;
    }
}

// ---- registration

/// Casts both ways with every NumPy number type, safe where ml_dtypes' bfloat16 and MegEngine's intbN mark them: intbN
/// only into float64 and wider, so NumPy sums intbN in float64.
template <class UserDtype>
bool register_casts(PyArray_Descr* user_descr, int type_num) {
    bool ok = true;
    constexpr bool is_bf16 = UserDtype::is_float;
    // safe_out: user -> builtin is safe; safe_in: the reverse.
    auto both = [&](int builtin, PyArray_VectorUnaryFunc* from_user, PyArray_VectorUnaryFunc* to_user, bool safe_out,
                    bool safe_in = false) {
        PyArray_Descr* builtin_descr = PyArray_DescrFromType(builtin);
        ok = ok && builtin_descr != nullptr && PyArray_RegisterCastFunc(user_descr, builtin, from_user) == 0;
        ok = ok && PyArray_RegisterCastFunc(builtin_descr, type_num, to_user) == 0;
        if (ok && safe_out) ok = PyArray_RegisterCanCast(user_descr, builtin, NPY_NOSCALAR) == 0;
        if (ok && safe_in) ok = PyArray_RegisterCanCast(builtin_descr, type_num, NPY_NOSCALAR) == 0;
        Py_XDECREF(builtin_descr);
    };
    both(NPY_BOOL, cast_from_user<UserDtype, numpy_bool_tag>, cast_to_user<UserDtype, numpy_bool_tag>, false, is_bf16);
    // By C type: every integer type number (two may share a width).
    both(NPY_BYTE, cast_from_user<UserDtype, npy_byte>, cast_to_user<UserDtype, npy_byte>, false, is_bf16);
    both(NPY_UBYTE, cast_from_user<UserDtype, npy_ubyte>, cast_to_user<UserDtype, npy_ubyte>, false, is_bf16);
    both(NPY_SHORT, cast_from_user<UserDtype, npy_short>, cast_to_user<UserDtype, npy_short>, false);
    both(NPY_USHORT, cast_from_user<UserDtype, npy_ushort>, cast_to_user<UserDtype, npy_ushort>, false);
    both(NPY_INT, cast_from_user<UserDtype, npy_int>, cast_to_user<UserDtype, npy_int>, false);
    both(NPY_UINT, cast_from_user<UserDtype, npy_uint>, cast_to_user<UserDtype, npy_uint>, false);
    both(NPY_LONG, cast_from_user<UserDtype, npy_long>, cast_to_user<UserDtype, npy_long>, false);
    both(NPY_ULONG, cast_from_user<UserDtype, npy_ulong>, cast_to_user<UserDtype, npy_ulong>, false);
    both(NPY_LONGLONG, cast_from_user<UserDtype, npy_longlong>, cast_to_user<UserDtype, npy_longlong>, false);
    both(NPY_ULONGLONG, cast_from_user<UserDtype, npy_ulonglong>, cast_to_user<UserDtype, npy_ulonglong>, false);
    both(NPY_HALF, cast_from_user<UserDtype, numpy_half_tag>, cast_to_user<UserDtype, numpy_half_tag>, false);
    both(NPY_FLOAT, cast_from_user<UserDtype, npy_float>, cast_to_user<UserDtype, npy_float>, is_bf16);
    both(NPY_DOUBLE, cast_from_user<UserDtype, npy_double>, cast_to_user<UserDtype, npy_double>, true);
    both(NPY_LONGDOUBLE, cast_from_user<UserDtype, npy_longdouble>, cast_to_user<UserDtype, npy_longdouble>, true);
    both(NPY_CFLOAT, cast_from_user<UserDtype, numpy_complex_tag<float>>,
         cast_to_user<UserDtype, numpy_complex_tag<float>>, is_bf16);
    both(NPY_CDOUBLE, cast_from_user<UserDtype, numpy_complex_tag<double>>,
         cast_to_user<UserDtype, numpy_complex_tag<double>>, true);
    both(NPY_CLONGDOUBLE, cast_from_user<UserDtype, numpy_complex_tag<long double>>,
         cast_to_user<UserDtype, numpy_complex_tag<long double>>, true);
    return ok;
}

/// np.arange's fill for intbN, as MegEngine's: two odd values set, then steps wrap at ±top (np.arange(1, 20, 6,
/// dtype=intb4) is 1, 7, 13, -15).
template <unsigned Bits>
int intb_fill(void* data, npy_intp length, void*) {
    constexpr int top = intb_traits<Bits>::top;
    auto* values = static_cast<std::int8_t*>(data);
    if (length < 2) return 0;
    const int step = values[1] - values[0];
    int value = values[1];
    for (npy_intp i = 2; i < length; ++i) {
        value += step;
        if (value > top) {
            value = -top;
        } else if (value < -top) {
            value = top;
        }
        values[i] = static_cast<std::int8_t>(value);
    }
    return 0;
}

template <class UserDtype>
bool register_comparisons(int type_num) {
    object numpy = object::steal(PyImport_ImportModule("numpy"));
    if (!numpy) return false;
    struct entry {
        const char* ufunc;
        PyUFuncGenericFunction loop;
    };
    const entry loops[] = {
        {"equal", compare_loop<UserDtype, Py_EQ>},   {"not_equal", compare_loop<UserDtype, Py_NE>},
        {"less", compare_loop<UserDtype, Py_LT>},    {"less_equal", compare_loop<UserDtype, Py_LE>},
        {"greater", compare_loop<UserDtype, Py_GT>}, {"greater_equal", compare_loop<UserDtype, Py_GE>},
    };
    const int types[] = {type_num, type_num, NPY_BOOL};
    for (const entry& e : loops) {
        object ufunc = object::steal(PyObject_GetAttrString(numpy.get(), e.ufunc));
        if (!ufunc) return false;
        if (PyUFunc_RegisterLoopForType(reinterpret_cast<PyUFuncObject*>(ufunc.get()), type_num, e.loop, types,
                                        nullptr) < 0) {
            return false;
        }
    }
    return true;
}

/// The scalar type of a user dtype (`<module>.<name>`, an np.generic subclass), marked so any npybridge module finds it
/// again. New reference, or nullptr with an error.
template <class UserDtype>
PyObject* make_scalar_type(const std::string& module_name) {
    using storage = typename UserDtype::storage;
    static const std::string qualified = module_name + "." + UserDtype::name;
    static PyMethodDef methods[] = {
        {"__reduce__", scalar_reduce<UserDtype>, METH_NOARGS, nullptr},
        {nullptr, nullptr, 0, nullptr},
    };
    static PyMethodDef bf16_methods[] = {
        {"__reduce__", scalar_reduce<UserDtype>, METH_NOARGS, nullptr},
        {"__format__", bf16_scalar_format, METH_O, nullptr},
        {nullptr, nullptr, 0, nullptr},
    };
    static PyType_Slot intb_slots[] = {
        {Py_tp_new, reinterpret_cast<void*>(scalar_tp_new<UserDtype>)},
        {Py_tp_repr, reinterpret_cast<void*>(scalar_repr<UserDtype>)},
        {Py_tp_str, reinterpret_cast<void*>(scalar_repr<UserDtype>)},
        {Py_tp_hash, reinterpret_cast<void*>(scalar_hash<UserDtype>)},
        {Py_tp_richcompare, reinterpret_cast<void*>(scalar_richcompare<UserDtype>)},
        {Py_nb_float, reinterpret_cast<void*>(scalar_float<UserDtype>)},
        {Py_nb_int, reinterpret_cast<void*>(scalar_int<UserDtype>)},
        {Py_nb_bool, reinterpret_cast<void*>(scalar_bool<UserDtype>)},
        {Py_tp_methods, methods},
        {0, nullptr},
    };
    // Operators bfloat16 does not define (//, %, **, abs) are numpy.generic's, which run the ufunc loops.
    static PyType_Slot bf16_slots[] = {
        {Py_tp_new, reinterpret_cast<void*>(bf16_scalar_new)},
        {Py_tp_repr, reinterpret_cast<void*>(scalar_repr<UserDtype>)},
        {Py_tp_str, reinterpret_cast<void*>(scalar_repr<UserDtype>)},
        {Py_tp_hash, reinterpret_cast<void*>(bf16_scalar_hash)},
        {Py_tp_richcompare, reinterpret_cast<void*>(bf16_scalar_richcompare)},
        {Py_nb_add, reinterpret_cast<void*>(bf16_scalar_binary<bf16_math::add, &PyNumberMethods::nb_add>)},
        {Py_nb_subtract,
         reinterpret_cast<void*>(bf16_scalar_binary<bf16_math::subtract, &PyNumberMethods::nb_subtract>)},
        {Py_nb_multiply,
         reinterpret_cast<void*>(bf16_scalar_binary<bf16_math::multiply, &PyNumberMethods::nb_multiply>)},
        {Py_nb_true_divide,
         reinterpret_cast<void*>(bf16_scalar_binary<bf16_math::divide, &PyNumberMethods::nb_true_divide>)},
        {Py_nb_negative, reinterpret_cast<void*>(bf16_scalar_negative)},
        {Py_nb_float, reinterpret_cast<void*>(scalar_float<UserDtype>)},
        {Py_nb_int, reinterpret_cast<void*>(scalar_int<UserDtype>)},
        {Py_nb_bool, reinterpret_cast<void*>(scalar_bool<UserDtype>)},
        {Py_tp_methods, bf16_methods},
        {0, nullptr},
    };
    PyType_Slot* const slots = UserDtype::is_float ? bf16_slots : intb_slots;
    static PyType_Spec spec = {qualified.c_str(), static_cast<int>(sizeof(scalar_object<storage>)), 0,
                               Py_TPFLAGS_DEFAULT, slots};
    object bases = object::steal(PyTuple_Pack(1, reinterpret_cast<PyObject*>(&PyGenericArrType_Type)));
    if (!bases) return nullptr;
    object type = object::steal(PyType_FromSpecWithBases(&spec, bases.get()));
    if (!type) return nullptr;
    object mark = object::steal(PyUnicode_FromString(UserDtype::name));
    if (!mark || PyObject_SetAttrString(type.get(), registration_mark, mark.get()) != 0) return nullptr;
    return type.release();
}

/// A user dtype's ArrFuncs (static: numpy keeps the pointer).
template <class UserDtype>
PyArray_ArrFuncs* array_funcs() {
    static PyArray_ArrFuncs funcs;
    PyArray_InitArrFuncs(&funcs);
    funcs.getitem = array_getitem<UserDtype>;
    funcs.setitem = array_setitem<UserDtype>;
    funcs.copyswap = array_copyswap<UserDtype>;
    funcs.copyswapn = array_copyswapn<UserDtype>;
    funcs.nonzero = array_nonzero<UserDtype>;
    funcs.compare = array_compare<UserDtype>;
    funcs.argmax = array_argmax<UserDtype>;
    funcs.argmin = array_argmin<UserDtype>;
    if constexpr (UserDtype::is_float) {
        funcs.fill = bf16_fill;
        funcs.dotfunc = bf16_dot;
    } else {
        funcs.fill = intb_fill<info(UserDtype::id).bits>;
    }
    return &funcs;
}

/// numpy's type number for a user dtype, registered; negative with an error.
template <class UserDtype>
int register_data_type(PyObject* type) {
    using storage = typename UserDtype::storage;
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
    proto.type = UserDtype::is_float ? 'E' : 'i';  // ml_dtypes' character ('f' is float32's)
    proto.byteorder = sizeof(storage) > 1 ? '=' : '|';
    // bfloat16's loops need no Python and NumPy makes its scalar from the bytes; intbN's casts raise Python errors.
    proto.flags = UserDtype::is_float ? NPY_USE_SETITEM : NPY_NEEDS_PYAPI | NPY_USE_GETITEM | NPY_USE_SETITEM;
    proto.type_num = 0;
    proto.elsize = static_cast<int>(sizeof(storage));
    proto.alignment = static_cast<int>(alignof(storage));
    proto.f = array_funcs<UserDtype>();
    proto.hash = -1;
    return PyArray_RegisterDataType(&proto);
}

/// bfloat16.dtype and np.dtype("bfloat16"), as ml_dtypes has them.
template <class UserDtype>
bool name_the_dtype(PyObject* type, PyArray_Descr* descr) {
    if (PyObject_SetAttrString(type, "dtype", reinterpret_cast<PyObject*>(descr)) != 0) return false;
    if constexpr (!UserDtype::is_float) return true;
    object numpy = object::steal(PyImport_ImportModule("numpy"));
    object names = numpy ? object::steal(PyObject_GetAttrString(numpy.get(), "sctypeDict")) : object{};
    if (!names) return false;
    if (!PyDict_Check(names.get()) || PyDict_GetItemString(names.get(), UserDtype::name) != nullptr) return true;
    return PyDict_SetItemString(names.get(), UserDtype::name, type) == 0;
}

/// Registers one user dtype: scalar type, ArrFuncs, casts, loops.
template <class UserDtype>
bool register_one(const std::string& module_name) {
    PyObject* type = make_scalar_type<UserDtype>(module_name);  // kept for the process, as numpy does
    if (type == nullptr) return false;
    UserDtype::type_object() = type;
    const int type_num = register_data_type<UserDtype>(type);
    if (type_num < 0) return false;
    UserDtype::type_num() = type_num;
    PyArray_Descr* descr = PyArray_DescrFromType(type_num);
    if (descr == nullptr) return false;
    bool ok = name_the_dtype<UserDtype>(type, descr) && register_casts<UserDtype>(descr, type_num) &&
              register_comparisons<UserDtype>(type_num);
    if constexpr (UserDtype::is_float) ok = ok && register_bfloat16_ufuncs<typename UserDtype::storage>();
    Py_DECREF(descr);
    return ok;
}

}  // namespace detail
}  // namespace npybridge
