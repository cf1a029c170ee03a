// libFuzzer target: to_tensor and copy_into over arrays the input describes (dtype and byte order, quantized
// metadata, shape, strides from permutations / steps / signs / broadcasting, offset and misalignment,
// read-only), under every policy and narrowing mode, with or without a requested dtype. Invariant: a named
// npybridge error (and for copy_into an untouched destination), or a tensor whose values equal numpy's own
// cast of the array; never a Python error left pending.
#include "tests/fuzz/fuzz_support.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <string>
#include <vector>

namespace npb = npybridge;

namespace {

const char* const helpers = R"(
import numpy as np
import warnings
warnings.simplefilter("ignore")

SOURCES = ["i1", "u1", "i2", ">i2", "u2", "i4", ">i4", "u4", "i8", ">i8", "u8", "f2", "f4", ">f4", "f8", ">f8",
           "c8", ">c8", "c16", "?", "q8", "q4", "a8", "i1q4", "intb1", "intb2", "intb4", "bfloat16", "longlong"]

def source_dtype(code):
    if code == "q8":
        return np.dtype("i1", metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 0.5}})
    if code == "a8":
        return np.dtype("u1", metadata={"mgb_dtype": {"name": "Quantized8Asymm", "scale": 0.25, "zero_point": 3}})
    if code == "q4":
        return np.dtype("i1", metadata={"mgb_dtype": {"name": "QuantizedS4", "scale": 0.5}})
    if code == "i1q4":
        return np.dtype("i1")
    if code in ("intb1", "intb2", "intb4", "bfloat16"):
        return np.dtype(globals()[code])
    if code == "longlong":
        return np.dtype(np.longlong)
    return np.dtype(code)

def make(raw, code, shape, perm, steps, offset, unaligned, readonly, broadcast):
    dtype = source_dtype(code)
    full = [((n - 1) * abs(s) + 1) if n else 0 for n, s in zip(shape, steps)]
    base_shape = [full[p] for p in perm]
    count = int(np.prod(base_shape, dtype=np.int64)) if base_shape else 1
    if count > 1 << 16:  # keep each run small and fast
        return None
    size = (count + offset) * dtype.itemsize + unaligned
    buf = bytearray((raw * (size // max(len(raw), 1) + 1))[:size]) if raw else bytearray(size)
    flat = np.frombuffer(buf, dtype=np.uint8)[unaligned:unaligned + (count + offset) * dtype.itemsize]
    flat = flat.view(dtype)[offset:]
    if code in ("intb1", "intb2", "intb4"):  # only valid codes: an intbN array holds odd values
        top = (1 << int(code[-1])) - 1
        values = flat.view(np.int8).astype(np.int64) % (top + 1)
        flat.view(np.int8)[...] = (values * 2 - top).clip(-top, top) | 1
    a = flat.reshape(base_shape) if base_shape else flat.reshape(())
    inverse = [perm.index(i) for i in range(len(perm))]
    a = a.transpose(inverse) if perm else a
    index = tuple(slice(None, None, s) if s > 0 else slice(None, None, s) for s in steps)
    a = a[index] if steps else a
    if broadcast and a.ndim < 4:
        a = np.broadcast_to(a, (2,) + a.shape)
    if readonly:
        a = a.view()
        a.flags.writeable = False
    return a

TARGETS = [None, "Float32", "Int8", "Uint8", "Int16", "Uint16", "Int32", "Float16", "BFloat16", "Bool", "Complex64",
           "IntB1", "IntB2", "IntB4", "QuantizedS8", "Quantized8Asymm", "QuantizedS4", "Quantized4Asymm", "QuantizedS32"]

def equal(actual, reference):
    """Same values (NaN equal to NaN), compared through a dtype numpy can hold both in."""
    if reference.ndim == 0 and actual.shape == (1,):  # a tensor type without 0-d tensors
        reference = reference.reshape(1)
    if actual.shape != reference.shape:
        return False
    kind = reference.dtype.kind
    wide = np.complex128 if kind == "c" else np.float64
    a = np.asarray(actual.astype(wide)) if actual.size else np.zeros(actual.shape, wide)
    r = np.asarray(reference.astype(wide)) if reference.size else np.zeros(reference.shape, wide)
    return np.array_equal(a, r, equal_nan=True)

def round_to_odd(x, to):
    """x in the narrower float type `to`, rounded toward zero with the last bit set when inexact ("round to
    odd"): rounding that once more to a type of at least two fewer bits is x rounded ONCE to that type."""
    y = x.astype(to)
    finite = np.isfinite(x)
    y = np.where(finite & (np.abs(y.astype(x.dtype)) > np.abs(x)), np.nextafter(y, to(0)), y).astype(to)
    bits = y.view(np.uint32 if to == np.float32 else np.uint64)
    return np.where(finite & (y.astype(x.dtype) != x), bits | 1, bits).view(to)

def reference(array, target_descr, wrap):
    """numpy's own cast of the array to the tensor's numpy form; into bfloat16, the source rounded once (any
    bool byte other than 0 is 1), as npybridge promises, where ml_dtypes' casts round float64 through float32
    and read a bool's byte (docs/dtypes.md)."""
    with np.errstate(all="ignore"):
        try:
            if target_descr.name == "bfloat16" and array.dtype.kind in "biufc":
                a = array
                if a.dtype.kind == "b":
                    a = a.view(np.uint8) != 0
                elif a.dtype.kind == "c":
                    a = a.real
                if a.dtype.kind in "iu":
                    a = a.astype(np.longdouble)  # every int64 / uint64 exactly
                if a.dtype.kind == "f" and a.dtype.itemsize > 8:
                    a = round_to_odd(a.astype(np.longdouble), np.float64)
                if a.dtype.kind == "f" and a.dtype.itemsize == 8:
                    a = round_to_odd(a.astype(np.float64), np.float32)
                return np.asarray(a).astype(target_descr, casting="unsafe")
            return array.astype(target_descr, casting="unsafe")
        except (ValueError, TypeError, OverflowError):
            return None
)";

struct options_draw {
    npb::to_tensor_options options;
    bool packed = false;
};

npb::dtype target_of(const std::string& name) {
    const npb::dtype_info* found = npb::find_dtype(name);
    FUZZ_CHECK(found != nullptr);
    if (!found->is_quantized) return npb::dtype(found->id);
    if (found->param_fields > 1) return npb::dtype::quantized(found->id, 0.25, 3);
    return npb::dtype::quantized(found->id, 0.5);
}

/// The values of a tensor as numpy sees them (a copy; packed dtypes unpacked).
npb::object values_of(const npb::tensor& t) { return npb::to_array(t, npb::share_policy::copy); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::start(helpers);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    npb::object module = npb::object::borrow(PyImport_AddModule("fuzz"));
    npb::object sources = npb::object::steal(PyObject_GetAttrString(module.get(), "SOURCES"));
    npb::object targets = npb::object::steal(PyObject_GetAttrString(module.get(), "TARGETS"));
    PyObject* code =
        PyList_GetItem(sources.get(), in.ConsumeIntegralInRange<Py_ssize_t>(0, PyList_Size(sources.get()) - 1));
    const int ndim = in.ConsumeIntegralInRange<int>(0, 4);
    npb::object shape = npb::object::steal(PyList_New(0)), perm = npb::object::steal(PyList_New(0)),
                steps = npb::object::steal(PyList_New(0));
    std::vector<long> order(static_cast<std::size_t>(ndim));
    for (int i = 0; i < ndim; ++i) order[static_cast<std::size_t>(i)] = i;
    for (int i = ndim; i > 1; --i)
        std::swap(order[static_cast<std::size_t>(i - 1)],
                  order[in.ConsumeIntegralInRange<std::size_t>(0, static_cast<std::size_t>(i - 1))]);
    for (int i = 0; i < ndim; ++i) {
        const long extent = in.ConsumeIntegralInRange<long>(0, in.ConsumeIntegralInRange<int>(0, 7) == 0 ? 40 : 5);
        const long step = in.ConsumeIntegralInRange<long>(1, 3) * (in.ConsumeBool() ? 1 : -1);
        PyList_Append(shape.get(), npb::object::steal(PyLong_FromLong(extent)).get());
        PyList_Append(perm.get(), npb::object::steal(PyLong_FromLong(order[static_cast<std::size_t>(i)])).get());
        PyList_Append(steps.get(), npb::object::steal(PyLong_FromLong(step)).get());
    }
    const long offset = in.ConsumeIntegralInRange<long>(0, 2);
    const long unaligned = in.ConsumeIntegralInRange<int>(0, 4) == 0 ? 1 : 0;
    const bool readonly = in.ConsumeIntegralInRange<int>(0, 4) == 0;
    const bool broadcast = in.ConsumeIntegralInRange<int>(0, 6) == 0;
    const Py_ssize_t target_index = in.ConsumeIntegralInRange<Py_ssize_t>(0, PyList_Size(targets.get()) - 1);
    npb::to_tensor_options options;
    options.policy = in.PickValueInArray(
        {npb::borrow_policy::try_borrow, npb::borrow_policy::must_borrow, npb::borrow_policy::copy});
    options.narrow = in.PickValueInArray({npb::narrowing::checked, npb::narrowing::wrap, npb::narrowing::reject});
    if (in.ConsumeBool())
        options.layout = in.ConsumeBool() ? npb::lowbit_layout::compact : npb::lowbit_layout::row_aligned;
    options.require_writable = in.ConsumeIntegralInRange<int>(0, 5) == 0;
    const bool through_copy_into = in.ConsumeIntegralInRange<int>(0, 3) == 0;
    const std::string raw = in.ConsumeRemainingBytesAsString();

    npb::object raw_bytes =
        npb::object::steal(PyBytes_FromStringAndSize(raw.data(), static_cast<Py_ssize_t>(raw.size())));
    npb::object args = npb::object::steal(Py_BuildValue("(OOOOOllOO)", raw_bytes.get(), code, shape.get(), perm.get(),
                                                        steps.get(), offset, unaligned, readonly ? Py_True : Py_False,
                                                        broadcast ? Py_True : Py_False));
    npb::object array = fuzz::call("make", args.get());
    FUZZ_CHECK(array);
    if (array.get() == Py_None) return 0;
    PyObject* target_name = PyList_GetItem(targets.get(), target_index);
    if (target_name != Py_None) options.type = target_of(PyUnicode_AsUTF8(target_name));

    if (through_copy_into) {
        // A destination of the requested (or the array's own) dtype and the array's shape, with a known pattern.
        std::optional<npb::dtype> type = options.type;
        if (!type) {
            try {
                type = npb::from_numpy_dtype(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(array.get()))).type;
            } catch (const npb::error&) {
                FUZZ_CHECK(!PyErr_Occurred());
                return 0;
            }
        }
        auto* a = reinterpret_cast<PyArrayObject*>(array.get());
        std::size_t dims[NPYBRIDGE_MAX_NDIM + 1];
        for (int i = 0; i < PyArray_NDIM(a); ++i) dims[i] = static_cast<std::size_t>(PyArray_DIM(a, i));
        npb::tensor destination =
            npb::tensor::empty(*type, dims, static_cast<std::size_t>(PyArray_NDIM(a)), options.layout);
        std::memset(destination.data(), 0x5C, destination.storage_bytes());
        try {
            npb::copy_into(array.get(), destination, options);
        } catch (const npb::error&) {
            FUZZ_CHECK(!PyErr_Occurred());
            const auto* bytes = static_cast<const unsigned char*>(destination.data());
            for (std::size_t i = 0; i < destination.storage_bytes(); ++i) FUZZ_CHECK(bytes[i] == 0x5C);  // untouched
            return 0;
        }
        FUZZ_CHECK(!PyErr_Occurred());
        return 0;  // the values are checked below for to_tensor, which copy_into shares its kernels with
    }

    std::optional<npb::to_tensor_result<npb::tensor>> result;
    try {
        result.emplace(npb::to_tensor<npb::tensor>(array.get(), options));
    } catch (const npb::error&) {
        FUZZ_CHECK(!PyErr_Occurred());
        return 0;
    }
    FUZZ_CHECK(!PyErr_Occurred());
    const npb::tensor& t = result->tensor;
    if (options.policy == npb::borrow_policy::must_borrow) FUZZ_CHECK(result->borrowed);
    if (result->borrowed)
        FUZZ_CHECK(t.data() == PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.get())) ||
                   PyArray_SIZE(reinterpret_cast<PyArrayObject*>(array.get())) == 0);
    npb::object actual;
    try {
        actual = values_of(t);
    } catch (const npb::error&) {  // e.g. a dtype without a numpy form
        FUZZ_CHECK(!PyErr_Occurred());
        return 0;
    }
    npb::object descr = npb::object::steal(PyObject_GetAttrString(actual.get(), "dtype"));
    npb::object reference_args = npb::object::steal(
        PyTuple_Pack(3, array.get(), descr.get(), options.narrow == npb::narrowing::wrap ? Py_True : Py_False));
    npb::object expected = fuzz::call("reference", reference_args.get());
    FUZZ_CHECK(expected);
    if (expected.get() == Py_None)
        return 0;  // numpy itself has no such cast (npybridge went its own way: packed codes)
    npb::object equal_args = npb::object::steal(PyTuple_Pack(2, actual.get(), expected.get()));
    npb::object same = fuzz::call("equal", equal_args.get());
    FUZZ_CHECK(same);
    if (same.get() != Py_True) {
        PyObject_Print(array.get(), stderr, 0);
        std::fprintf(stderr, "\n%s\n", t.type().to_string().c_str());
        PyObject_Print(actual.get(), stderr, 0);
        std::fprintf(stderr, "\n");
        PyObject_Print(expected.get(), stderr, 0);
        std::fprintf(stderr, "\n");
    }
    FUZZ_CHECK(same.get() == Py_True);
    return 0;
}
