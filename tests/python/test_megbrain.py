"""npybridge over real MegBrain tensors: npybridge_megbrain_example is MegEngine's helper API (np2tensor,
ndarray_from_tensor, dtype_mgb2np, dtype_np2mgb) compiled against MegEngine 1.13's own headers and linked
against the megengine wheel's libmegengine_shared.so, so every HostTensor here is a real mgb::HostTensorND with
a real megdnn::DType and comp node, in the same process as `import megengine` (py310 suite only, with
MEGENGINE_SOURCE set: tools/test)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from conftest import nbx as mb

mge = pytest.importorskip("megengine")
D = pytest.importorskip("megengine.core.tensor.dtype")

# MegDNN's DTypeEnum (dnn/include/megdnn/dtype.h): name -> value, numpy storage, sample values.
PLAIN = {
    "Float32": (0, np.float32), "Uint8": (1, np.uint8), "Int8": (2, np.int8), "Int16": (3, np.int16),
    "Int32": (4, np.int32), "Float16": (9, np.float16), "Bool": (12, np.bool_), "Uint16": (13, np.uint16),
    "Complex64": (14, np.complex64),
}
QUANTIZED = {  # name -> (enum, storage, scale, zero_point, lo, hi)
    "Quantized8Asymm": (100000, np.uint8, 0.5, 128, 0, 255),
    "QuantizedS32": (100001, np.int32, 0.125, None, -2**31, 2**31 - 1),
    "QuantizedS8": (100002, np.int8, 0.25, None, -128, 127),
    "Quantized4Asymm": (100003, np.uint8, 0.25, 3, 0, 15),
    "QuantizedS4": (100004, np.int8, 0.5, None, -8, 7),
    "QuantizedS16": (100005, np.int16, 0.0625, None, -2**15, 2**15 - 1),
    "QuantizedS1": (100006, np.int8, 1.0, None, 0, 1),
}
LOWBIT = {"IntB1": (5, [-1, 1]), "IntB2": (6, [-3, -1, 1, 3]), "IntB4": (7, list(range(-15, 16, 2)))}
PACKED_QUANTIZED = ["QuantizedS4", "Quantized4Asymm"]


def owning(values, dtype=None):
    """An array that owns its memory (numpy collapses view chains when it picks a base)."""
    return np.array(values, dtype=dtype, copy=True)


def same_memory(tensor, array):
    return tensor.data_ptr == array.ctypes.data


def quantized_dtype(name):
    _, _, scale, zero_point, _, _ = QUANTIZED[name]
    return mb.dtype_mgb2np(name, scale, zero_point)


# ---- dtypes: every row both ways, against MegDNN's own DType ------------------------------------------------

@pytest.mark.parametrize("name", sorted(PLAIN))
def test_plain_dtypes_both_ways(name):
    enum, storage = PLAIN[name]
    dt = mb.dtype_mgb2np(name)
    assert isinstance(dt, np.dtype) and dt == np.dtype(storage)
    assert mb.dtype_np2mgb(dt) == (name, None, None)
    t = mb.np2tensor(np.zeros((2, 3), storage))
    assert (t.dtype_name, t.dtype_enum, t.scale, t.zero_point) == (name, enum, None, None)


@pytest.mark.parametrize("name", sorted(QUANTIZED))
def test_quantized_dtypes_both_ways_with_params(name):
    enum, storage, scale, zero_point, lo, hi = QUANTIZED[name]
    dt = quantized_dtype(name)
    assert dt == np.dtype(storage)
    assert dt.metadata["mgb_dtype"]["name"] == name
    assert mb.dtype_np2mgb(dt) == (name, scale, zero_point)
    codes = owning([[lo, hi, lo], [hi, lo, hi]], storage)
    t = mb.np2tensor(codes, dtype=dt)
    assert (t.dtype_name, t.dtype_enum, t.scale, t.zero_point) == (name, enum, scale, zero_point)
    back = t.numpy()
    assert back.dtype.metadata["mgb_dtype"] == dt.metadata["mgb_dtype"]
    np.testing.assert_array_equal(back, codes)


@pytest.mark.parametrize("name", sorted(LOWBIT))
def test_lowbit_dtypes_both_ways(name):
    enum, values = LOWBIT[name]
    dt = mb.dtype_mgb2np(name)
    assert dt.itemsize == 1
    assert mb.dtype_np2mgb(dt) == (name, None, None)
    t = mb.np2tensor(np.array(values, np.int8), dtype=dt)
    assert (t.dtype_name, t.dtype_enum) == (name, enum)
    np.testing.assert_array_equal(t.numpy().astype(np.int8), values)


def test_bfloat16_is_megengines_type_while_megengine_is_imported():
    dt = mb.dtype_mgb2np("BFloat16")
    assert dt.type.__name__ == "pybfloat16"
    assert mb.dtype_np2mgb(dt) == ("BFloat16", None, None)
    values = np.array([1.5, -2.0, 3.25], dtype=dt)
    t = mb.np2tensor(values)
    assert (t.dtype_name, t.dtype_enum) == ("BFloat16", 11)
    assert same_memory(t, values)
    np.testing.assert_array_equal(t.numpy().astype(np.float32), [1.5, -2.0, 3.25])


def test_a_non_integer_zero_point_is_a_value_error_naming_it_as_megengines():
    with pytest.raises(ValueError, match="zero_point 0.233 is not an integer"):
        mb.dtype_mgb2np("Quantized8Asymm", 0.05, 0.233)
    assert mb.dtype_mgb2np("Quantized8Asymm", 0.05, 3.0).metadata["mgb_dtype"]["zero_point"] == 3
    with pytest.raises(ValueError):
        D.quint8(0.05, 0.233)  # MegEngine's own answer


def test_dtype_errors_name_the_culprit():
    with pytest.raises(mb.DTypeError, match="'Float64' is not a MegDNN dtype name"):
        mb.dtype_mgb2np("Float64")
    with pytest.raises(mb.DTypeError, match="QuantizedS8 needs its scale"):
        mb.dtype_mgb2np("QuantizedS8")
    with pytest.raises(mb.DTypeError, match="Byte has no numpy form"):
        mb.dtype_mgb2np("Byte")
    with pytest.raises(mb.DTypeError, match="int64"):
        mb.dtype_np2mgb(np.int64)


# ---- borrow / copy decisions --------------------------------------------------------------------------------

def test_contiguous_arrays_are_borrowed_and_shared_back_with_the_array_as_base():
    a = owning(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = mb.np2tensor(a, meth="must_borrow")
    assert same_memory(t, a)
    assert (t.shape, t.strides, t.format, t.nbytes) == ((2, 3), (3, 1), "default{}", 24)
    back = t.numpy(share="must_share")
    assert back.base is a
    # As MegEngine's ndarray_from_tensor: an array sharing the tensor's memory is read-only (flags 0 there).
    assert not back.flags.writeable and np.shares_memory(back, a)
    t2 = mb.np2tensor(a, meth="must_borrow")
    a[0, 0] = 42
    assert t2.numpy()[0, 0] == 42


def test_strided_and_negative_strides_are_borrowed_with_megbrains_storage_offset():
    a = owning(np.arange(24, dtype=np.int32).reshape(4, 6))
    columns = a[:, ::2]
    t = mb.np2tensor(columns, meth="must_borrow")
    assert same_memory(t, columns) and t.strides == (6, 2)
    reversed_ = a[::-1, ::-1]
    r = mb.np2tensor(reversed_, meth="must_borrow")
    assert same_memory(r, reversed_)
    assert r.strides == (-6, -1)
    np.testing.assert_array_equal(r.numpy(), reversed_)
    assert r.numpy().base is a
    assert r.raw_bytes() == a.tobytes()  # MegBrain's span: the whole block, lowest byte first


def test_copies_and_refusals_say_why():
    a = owning(np.arange(6, dtype=np.float32))
    copied = mb.np2tensor(a, meth="copy")
    assert not same_memory(copied, a)
    np.testing.assert_array_equal(copied.numpy(), a)
    wide = owning([1.0, 2.5], np.float64)
    narrowed = mb.np2tensor(wide)
    assert narrowed.dtype_name == "Float32"
    with pytest.raises(mb.ConversionError, match="must_borrow.*must be narrowed to Float32"):
        mb.np2tensor(wide, meth="must_borrow")
    swapped = owning([1, 2], ">i4")
    with pytest.raises(mb.ConversionError, match="must_borrow.*byte order"):
        mb.np2tensor(swapped, meth="must_borrow")
    with pytest.raises(ValueError, match="meth must be.*got 'steal'"):
        mb.np2tensor(a, meth="steal")
    with pytest.raises(mb.ValueRangeError, match="300"):
        mb.np2tensor(owning([1, 300]), dtype=np.dtype(np.int8))


def test_placement_reaches_megbrain_for_borrows_and_copies():
    a = owning(np.arange(4, dtype=np.float32))
    assert mb.np2tensor(a).comp_node == 'CompNode("cpu0:0" from "cpu0:0")'
    borrowed = mb.np2tensor(a, comp_node="cpu1")
    assert same_memory(borrowed, a)
    assert borrowed.comp_node == 'CompNode("cpu1:0" from "cpu1:0")'
    copied = mb.np2tensor(a, meth="copy", comp_node="cpux")
    assert copied.comp_node == 'CompNode("cpu0:0" from "cpux:0")'
    q = mb.np2tensor(owning([1, -2], np.int8), dtype=quantized_dtype("QuantizedS4"), comp_node="cpu2")
    assert q.comp_node == 'CompNode("cpu2:0" from "cpu2:0")'
    with pytest.raises(RuntimeError, match="gpu9"):
        mb.np2tensor(a, comp_node="gpu9")


# ---- low-bit: MegBrain's own layouts and bytes ----------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5,), (2, 3), (3, 5), (2, 2, 3), (4, 8)])
@pytest.mark.parametrize("name", PACKED_QUANTIZED + sorted(LOWBIT))
def test_packed_bytes_and_layouts_equal_megbrains_own(name, shape):
    if name in QUANTIZED:
        _, storage, _, _, lo, hi = QUANTIZED[name]
        dt = quantized_dtype(name)
        values = np.random.default_rng(1).integers(lo, hi + 1, shape).astype(storage)
    else:
        dt = mb.dtype_mgb2np(name)
        values = np.random.default_rng(1).choice(LOWBIT[name][1], shape).astype(np.int8)
    ours = mb.np2tensor(values, dtype=dt)
    theirs = mb.megbrain_pack(values, dt)
    assert (ours.format, ours.strides, ours.shape) == (theirs.format, theirs.strides, theirs.shape)
    assert ours.raw_bytes() == theirs.raw_bytes()
    np.testing.assert_array_equal(theirs.numpy().view(values.dtype), values)  # MegBrain's bytes, npybridge unpacks
    with pytest.raises(mb.ConversionError, match="must_share.*packed"):
        ours.numpy(share="must_share")


@settings(max_examples=120, deadline=None)
@given(name=st.sampled_from(PACKED_QUANTIZED + sorted(LOWBIT)), rows=st.integers(1, 4), columns=st.integers(1, 9),
       axis=st.integers(0, 1), start=st.integers(0, 8), length=st.integers(1, 9), step=st.sampled_from([1, 2]),
       seed=st.integers(0, 2 ** 16))
def test_copy_into_megbrains_own_sub_tensors_changes_no_bit_outside_them(name, rows, columns, axis, start, length,
                                                                         step, seed):
    shape = (rows, columns)
    rng = np.random.default_rng(seed)
    if name in QUANTIZED:
        _, storage, _, _, lo, hi = QUANTIZED[name]
        dt = quantized_dtype(name)
        draw = lambda size: rng.integers(lo, hi + 1, size).astype(storage)  # noqa: E731
    else:
        dt = mb.dtype_mgb2np(name)
        draw = lambda size: rng.choice(LOWBIT[name][1], size).astype(np.int8)  # noqa: E731
    values = draw(shape)
    stop = min(start + length * step, shape[axis])
    assume(start < stop)
    parent = mb.np2tensor(values, dtype=dt)
    try:
        view = parent.sub(axis, start, stop, step)
    except RuntimeError:
        assume(False)  # MegBrain refuses sub-tensors that start inside a byte
    index = (slice(start, stop, step), slice(None)) if axis == 0 else (slice(None), slice(start, stop, step))
    fresh = draw(values[index].shape)
    view.copy_from(fresh)
    expected = values.copy()
    expected[index] = fresh
    # Bit for bit what MegBrain's own packing of the expected values gives: neighbours and padding untouched.
    assert parent.raw_bytes() == mb.megbrain_pack(expected, dt).raw_bytes()


def test_row_aligned_tensors_report_megbrains_padded_strides():
    t = mb.np2tensor(owning([[1, -2, 3], [-4, 5, -6]], np.int8), dtype=quantized_dtype("QuantizedS4"))
    assert (t.format, t.strides) == ("LOWBITS{4,8}", (4, 1))
    assert t.raw_bytes() == bytes([0xE1, 0x03, 0x5C, 0x0A])


def test_packed_sub_tensors_convert_by_copy_correctly():
    ib4 = mb.dtype_mgb2np("IntB4")
    values = owning([[-15, -13, -11], [-9, -7, -5]], np.int8)
    whole = mb.np2tensor(values, dtype=ib4)
    columns = whole.sub(1, 0, 2)  # MegBrain's own sub-tensor: row 1 starts inside a byte
    assert (columns.shape, columns.strides, columns.data_ptr) == ((2, 2), (3, 1), whole.data_ptr)
    np.testing.assert_array_equal(columns.numpy().astype(np.int8), values[:, :2])  # MegEngine's route: -15 -1 1 3
    four = owning([[-15, -13, -11, -9], [-7, -5, -3, -1], [1, 3, 5, 7]], np.int8)
    rows = mb.np2tensor(four, dtype=ib4).sub(0, 1, 3)  # rows 1..2 start on byte 2
    np.testing.assert_array_equal(rows.numpy().astype(np.int8), four[1:])
    np.testing.assert_array_equal(mb.np2tensor(four, dtype=ib4).sub(1, 2, 4).numpy().astype(np.int8), four[:, 2:4])
    q4 = mb.np2tensor(owning([[1, -2, 3], [-4, 5, -6]], np.int8), dtype=quantized_dtype("QuantizedS4"))
    q4_columns = q4.sub(1, 0, 2)
    assert q4_columns.strides == (4, 1)
    np.testing.assert_array_equal(q4_columns.numpy(), [[1, -2], [-4, 5]])
    every_other = mb.np2tensor(owning([[1, 2, 3, 4, 5, 6, 7, 0]], np.uint8), dtype=quantized_dtype("Quantized4Asymm"))
    np.testing.assert_array_equal(every_other.sub(1, 0, 8, 2).numpy(), [[1, 3, 5, 7]])
    # MegBrain's own refusals reach Python as they are.
    with pytest.raises(RuntimeError, match="low_bit"):
        q4.sub(1, 1, 3)
    with pytest.raises(RuntimeError, match="low_bit"):
        whole.sub(0, 1, 2)  # IntB4 row 1 of a (2, 3) tensor starts at bit 12


# ---- read-only memory ----------------------------------------------------------------------------------------

def test_read_only_memory_is_copied_unless_the_caller_only_reads():
    # HostTensorND cannot mark memory read-only and MegBrain code writes through ptr<T>(): a default borrow of
    # read-only memory (an immutable bytes object) copies, with the reason; must_borrow refuses naming it.
    data = bytes(np.arange(6, dtype=np.float32).tobytes())
    a = np.frombuffer(data, np.float32)
    t = mb.np2tensor(a)
    assert not same_memory(t, a)
    with pytest.raises(mb.ConversionError, match="must_borrow.*read-only"):
        mb.np2tensor(a, meth="must_borrow")
    view = owning(np.arange(6, dtype=np.float32))
    view.setflags(write=False)
    assert not same_memory(mb.np2tensor(view), view)
    # A caller that only reads borrows it; what comes back stays read-only.
    t = mb.np2tensor(a, meth="borrow_for_reading")
    assert same_memory(t, a)
    back = t.numpy()
    assert not back.flags.writeable
    with pytest.raises(ValueError):
        back[0] = 1
    assert mb.ndarray_from_tensor(t, share="must_unshare").flags.writeable  # a copy is the caller's


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float16, "QuantizedS8", "QuantizedS4", "IntB4"])
@pytest.mark.parametrize("share", ["try", "must_unshare"])
@pytest.mark.parametrize("meth", ["borrow", "copy"])
def test_empty_tensors_come_back_as_writable_arrays(dtype, share, meth):
    # As MegEngine's helper: an array of no elements has no memory to share, so it is a writable array of its
    # own (every dtype, shared or copied).
    wanted = mb.intb4 if dtype == "IntB4" else quantized_dtype(dtype) if isinstance(dtype, str) else dtype
    t = mb.np2tensor(owning(np.zeros((0, 3)), wanted), meth=meth)
    back = t.numpy(share=share)
    assert back.shape == (0, 3) and back.flags.writeable


def test_read_only_dlpack_memory_is_copied_unless_the_caller_only_reads():
    # The same rule through DLPack (and the buffer protocol) as for arrays: one planner decides for every door.
    data = bytes(np.arange(6, dtype=np.float32).tobytes())
    reader = mb.np2tensor(np.frombuffer(data, np.float32), meth="borrow_for_reading")  # read-only by its owner
    t, borrowed, reason = mb.from_dlpack(mb.to_dlpack(reader))
    assert not borrowed and t.data_ptr != reader.data_ptr
    assert reason.startswith("read-only: the array is read-only and this tensor type cannot mark memory read-only")
    assert t.numpy().tolist() == list(range(6))
    with pytest.raises(mb.ConversionError, match="must_borrow.*read-only"):
        mb.from_dlpack(mb.to_dlpack(reader), meth="must_borrow")
    t, borrowed, reason = mb.from_dlpack(mb.to_dlpack(reader), meth="borrow_for_reading")
    assert borrowed and reason is None and t.data_ptr == reader.data_ptr
    assert not t.numpy().flags.writeable
    # A writable producer is borrowed straight.
    writer = mb.np2tensor(owning(np.arange(6, dtype=np.float32)))
    t, borrowed, reason = mb.from_dlpack(mb.to_dlpack(writer))
    assert borrowed and t.data_ptr == writer.data_ptr
    # The buffer protocol: a bytes object is read-only memory too.
    t = mb.np2tensor(memoryview(data))
    assert t.data_ptr != np.frombuffer(data, np.uint8).ctypes.data


# ---- MegEngine's own arrays ----------------------------------------------------------------------------------

@pytest.mark.parametrize("make,name", [(lambda: D.qint8(0.5), "QuantizedS8"), (lambda: D.quint8(0.25, 7), "Quantized8Asymm"),
                                       (lambda: D.qint32(0.125), "QuantizedS32")])
def test_megengine_quantized_arrays_through_host_tensors_and_back(make, name):
    x = np.array([[1.0, -2.0, 3.5], [0.0, 4.0, -1.5]], np.float32)
    q = mge.tensor(x).astype(make()).numpy()
    assert not q.flags.writeable  # MegEngine's arrays are read-only: a default borrow copies them
    assert not same_memory(mb.np2tensor(q), q)
    t = mb.np2tensor(q, meth="borrow_for_reading")
    assert t.dtype_name == name and same_memory(t, q)
    back = t.numpy()
    assert back.dtype.metadata == q.dtype.metadata
    again = mge.tensor(back)
    assert again.dtype == mge.tensor(q).dtype
    np.testing.assert_array_equal(again.numpy(), q)


def test_megengine_low_bit_tensors_through_host_tensors():
    x = np.array([[0.5, -1.0, 1.5], [-4.0, 3.5, 0.0]], np.float32)
    q = mge.tensor(x).astype(D.qint4(0.5)).numpy()
    t = mb.np2tensor(q)
    assert (t.dtype_name, t.format, t.strides) == ("QuantizedS4", "LOWBITS{4,8}", (4, 1))
    np.testing.assert_array_equal(mge.tensor(t.numpy()).numpy(), q)


# ---- errors, refcounts, import order ------------------------------------------------------------------------

def test_megbrains_exceptions_reach_python_with_megbrains_message():
    with pytest.raises(RuntimeError, match="cannot construct parameterized DType via DType::from_enum"):
        mb.megbrain_error()


def test_refcounts_stay_flat_over_many_conversions(refcounts):
    a = owning(np.arange(12, dtype=np.float32).reshape(3, 4))
    ro = owning(np.arange(4, dtype=np.int16))
    ro.setflags(write=False)
    q = owning([[1, -2, 3]], np.int8)
    q4 = quantized_dtype("QuantizedS4")
    refcounts([a, ro, q, q4], lambda: (mb.np2tensor(a).numpy(), mb.np2tensor(ro).numpy(), mb.np2tensor(a[:, ::-1]).numpy(),
                                       mb.np2tensor(q, dtype=q4).numpy(), mb.np2tensor(a, meth="copy")))


@pytest.mark.parametrize("megengine_first", [True, False])
def test_both_import_orders_in_a_fresh_interpreter(megengine_first):
    code = textwrap.dedent(f"""
        import numpy as np
        {"import megengine" if megengine_first else "import npybridge_megbrain_example as mb"}
        {"import npybridge_megbrain_example as mb" if megengine_first else "import megengine"}
        from megengine.core.tensor.dtype import qint8
        x = megengine.tensor(np.array([1.0, -2.0], np.float32)).astype(qint8(0.5)).numpy()
        t = mb.np2tensor(x)
        assert t.dtype_name == "QuantizedS8" and t.scale == 0.5, (t.dtype_name, t.scale)
        assert mb.dtype_mgb2np("BFloat16").type.__name__ == "pybfloat16"
        assert megengine.tensor(t.numpy()).dtype == megengine.tensor(x).dtype
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


# ---- MegEngine's own conversion: np2tensor(..., narrowing='megengine') against MegEngine's Tensor ------------

# Every dtype MegEngine 1.13's Python makes, by a factory of its own (the quantized ones with any scale).
MEGENGINE_DTYPES = {
    "float32": lambda s, z: np.float32, "float16": lambda s, z: np.float16, "bfloat16": lambda s, z: D.bfloat16,
    "int8": lambda s, z: np.int8, "int16": lambda s, z: np.int16, "int32": lambda s, z: np.int32,
    "uint8": lambda s, z: np.uint8, "uint16": lambda s, z: np.uint16, "bool": lambda s, z: np.bool_,
    "qint8": lambda s, z: D.qint8(s), "quint8": lambda s, z: D.quint8(s, z), "qint32": lambda s, z: D.qint32(s),
    "qint4": lambda s, z: D.qint4(s), "quint4": lambda s, z: D.quint4(s, z % 16), "qint1": lambda s, z: D.qint1(s),
    "intb1": lambda s, z: D.intb1, "intb2": lambda s, z: D.intb2, "intb4": lambda s, z: D.intb4,
}
# Each target's storage range: a float whose truncation leaves it is undefined behaviour in C++'s cast, which
# MegEngine's NumPy cast is.
STORAGE = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "uint8": np.uint8, "uint16": np.uint16,
           "qint8": np.int8, "quint8": np.uint8, "qint32": np.int32, "qint4": np.int8, "quint4": np.uint8,
           "qint1": np.int8, "intb1": np.int8, "intb2": np.int8, "intb4": np.int8}
NUMBER_TYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128]
# What MegEngine's own types have no cast from (its bfloat16 and intbN register casts from ints, float32 and float64).
NO_MEGENGINE_CAST = {np.dtype(t) for t in (np.bool_, np.float16, np.longdouble, np.complex64, np.complex128)}


def megengine_mode_exclusion(given, values, target, zero_point=0):
    """Why (what was given, its values as an array, target) is left out of the equality with MegEngine, or None.
    docs/megbrain.md lists these; every other difference fails the property."""
    kind = values.dtype.kind
    if values.ndim == 0 and target in ("qint4", "quint4", "intb1", "intb2", "intb4"):
        return "a scalar or 0-d array into a packed dtype: MegEngine's Tensor cannot assign it; npybridge converts"
    python_ints = [given] if isinstance(given, int) else [v for v in given if isinstance(v, int)] \
        if isinstance(given, list) else []
    if any(not -2 ** 31 <= v < 2 ** 31 for v in python_ints):
        return ("a Python int past int32, alone or in a list: MegEngine's Tensor reads it as a C int (wrapped to 32 "
                "bits; a SystemError past int64), not by the helper's NumPy cast")
    if target == "quint4" and zero_point % 16 == 15:
        return "quint4 with zero point 15: MegEngine's Tensor fails whatever the source (pybind11 cannot cast it)"
    if target == "qint1":
        return "QuantizedS1 codes: MegEngine stores any byte, npybridge keeps the low bit (a tensor holds 0 and 1 only)"
    if target in ("bfloat16", "intb1", "intb2", "intb4") and values.dtype in NO_MEGENGINE_CAST:
        return "MegEngine's own type has no cast from this source (MegEngine raises; npybridge converts)"
    if target.startswith(("qint", "quint")) and values.dtype == np.dtype(STORAGE[target]).newbyteorder("="):
        return "plain codes into their quantized dtype: MegEngine's helper fails its assertion; npybridge takes the codes"
    if values.size == 0 and target in ("qint4", "quint4", "intb1", "intb2", "intb4"):
        return "an empty array into a packed dtype: MegEngine's low-bit copy asserts; npybridge makes the empty tensor"
    if kind in "fc":
        real = values.real.astype(np.longdouble) if kind == "c" else values.astype(np.longdouble)
        finite = np.isfinite(real)
        if target in STORAGE:
            info = np.iinfo(STORAGE[target])
            if not finite.all() or (np.trunc(real) < info.min).any() or (np.trunc(real) > info.max).any():
                return "a NaN, infinite or out-of-range float into an integer: undefined behaviour in C++'s cast"
        tiny = np.finfo(np.float32).tiny
        if ((real != 0) & finite & (np.abs(real) < tiny)).any():
            return "a subnormal float32 value: MegEngine's import turns flush-to-zero on; npybridge converts in IEEE mode"
    if kind in "iub" and target in ("float32", "bfloat16", "float16") and values.size:
        as_float = values.astype(np.float64)
        if ((as_float != 0) & (np.abs(as_float) < np.finfo(np.float32).tiny)).any():
            return "a subnormal float32 value"
    return None


def through_megengine(source, dtype):
    try:
        return mge.Tensor(source, dtype=dtype).numpy()
    except Exception as error:  # MegEngine raises RuntimeError, ValueError or TypeError, whatever the cause
        return error


def through_npybridge(source, dtype):
    try:
        return mb.ndarray_from_tensor(mb.np2tensor(source, meth="copy", dtype=dtype, narrowing="megengine"))
    except Exception as error:
        return error


@st.composite
def megengine_sources(draw):
    """(what to convert, its values as an array): arrays of every NumPy number type, byte-swapped, strided and
    reversed views, 0-d and empty arrays, NumPy scalars, lists of Python numbers."""
    numpy_type = np.dtype(draw(st.sampled_from(NUMBER_TYPES)))
    shape = draw(st.sampled_from([(), (0,), (0, 3), (1,), (5,), (2, 3), (3, 4)]))
    count = int(np.prod(shape))
    pick = st.one_of(st.integers(-300, 300), st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False),
                     st.sampled_from([0.5, -0.5, 2.5, 127.9, -128.9, 255.5, 3e9, -0.0, float("nan"), float("inf"),
                                      1e-40, 70000.0, 2 ** 31, -2 ** 31 - 1, 1 + 2 ** -8 + 2 ** -30, 248, -1]))
    with np.errstate(all="ignore"):
        values = np.array(draw(st.lists(pick, min_size=count, max_size=count)), dtype=np.float64).astype(numpy_type)
    values = values.reshape(shape)
    form = draw(st.sampled_from(["array", "byte-swapped", "strided", "reversed", "scalar", "list"]))
    if form == "byte-swapped" and numpy_type.itemsize > 1:
        return values.astype(numpy_type.newbyteorder()), values
    if form == "strided" and values.ndim:
        wide = np.repeat(values, 2, axis=-1)
        return wide[..., ::2], values
    if form == "reversed" and values.ndim:
        return values[..., ::-1], values[..., ::-1]
    if form == "scalar" and values.ndim == 0:
        return values[()], values
    if form == "list" and numpy_type.kind in "iubf" and numpy_type != np.longdouble:
        return values.tolist(), np.array(values.tolist())
    return values, values


@pytest.mark.guarantee
@settings(max_examples=400, deadline=None)
@given(source=megengine_sources(), target=st.sampled_from(sorted(MEGENGINE_DTYPES)),
       scale=st.sampled_from([1.0, 0.5, 0.1, 3.0]), zero_point=st.integers(0, 255))
def test_megengine_mode_converts_as_megengine_does(source, target, scale, zero_point):
    given_value, values = source
    assume(megengine_mode_exclusion(given_value, values, target, zero_point) is None)
    dtype = MEGENGINE_DTYPES[target](scale, zero_point)
    theirs, ours = through_megengine(given_value, dtype), through_npybridge(given_value, dtype)
    if isinstance(theirs, Exception) or isinstance(ours, Exception):
        assert isinstance(theirs, Exception) and isinstance(ours, Exception), (theirs, ours)
        return
    # A 0-d source: MegEngine's helper makes a (1,) tensor, as npybridge's; MegEngine's Tensor then remembers it was
    # a scalar (its own flag, outside the helper).
    shape = theirs.shape if theirs.ndim else (1,)
    assert (ours.shape, ours.dtype, ours.tobytes()) == (shape, theirs.dtype, theirs.tobytes())
    assert ours.dtype.metadata == theirs.dtype.metadata
    # An empty result shares no memory: npybridge's is writable; MegEngine's is writable or not by how it was made.
    assert ours.flags.writeable == theirs.flags.writeable or ours.size == 0


def test_megengine_mode_takes_what_megengines_own_tests_store():
    # test_network_node's int8 tests and test_elemwise's test_empty_tensor (MegEngine 1.13).
    randoms = np.random.default_rng(7).random((2, 3))
    ours = through_npybridge(randoms, D.qint8(1.0))
    assert ours.tobytes() == through_megengine(randoms, D.qint8(1.0)).tobytes() == bytes(6)  # [0, 1) truncated
    assert through_npybridge(123.0, np.bool_).tolist() == [True]
    assert through_megengine(123.0, np.bool_).tolist() is True
    # npybridge's own rule, the default: refused, naming the value and its index.
    with pytest.raises(mb.ValueRangeError, match=r"value 0\.\d+ at index \(0, 0\)"):
        mb.np2tensor(randoms, dtype=D.qint8(1.0))
    with pytest.raises(mb.ValueRangeError, match=r"value 123\.0 at index \(0,\)"):
        mb.np2tensor(123.0, dtype=np.bool_)
    with pytest.raises(mb.ValueRangeError, match=r"value 123\.0"):
        mb.np2tensor(123.0, dtype=np.bool_, narrowing="checked")
    with pytest.raises(ValueError, match="narrowing must be one of 'checked', 'reject', 'wrap', 'megengine', got 'truncate'$"):
        mb.np2tensor(123.0, dtype=np.bool_, narrowing="truncate")


# Just off a bfloat16 midpoint, which float32 rounds onto: near 1, and just under the overflow threshold.
@pytest.mark.parametrize("value", [1 + 2 ** -8 + 2 ** -30, (2 - 2 ** -8 - 2 ** -30) * 2.0 ** 127])
def test_megengine_mode_makes_bfloat16_from_float32_as_megengine(value):
    # MegEngine's bfloat16 takes a float: float64 rounds to float32, then to bfloat16 (twice, not once).
    source = np.array([value, -value])
    ours = through_npybridge(source, D.bfloat16)
    assert ours.tobytes() == through_megengine(source, D.bfloat16).tobytes()
    once = mb.ndarray_from_tensor(mb.np2tensor(source, meth="copy", dtype=D.bfloat16, narrowing="wrap"))
    assert once.tobytes() != ours.tobytes()


def test_megengine_mode_casts_packed_codes_to_their_storage_first():
    # MegEngine casts into the packed dtype's storage (int8 for QuantizedS4) by NumPy, then checks the codes: uint8
    # 255 and 248 become -1 and -8. npybridge's own rules check the array's value itself.
    codes = np.array([255, 248, 3], np.uint8)
    ours = through_npybridge(codes, D.qint4(1.0))
    assert ours.tobytes() == through_megengine(codes, D.qint4(1.0)).tobytes() == np.int8([-1, -8, 3]).tobytes()
    with pytest.raises(mb.ValueRangeError, match=r"value 255 at index \(0,\)"):
        mb.np2tensor(codes, dtype=D.qint4(1.0), narrowing="wrap")
    # A code the storage's cast leaves out of range is refused, saying the value named is the cast one.
    with pytest.raises(mb.ValueRangeError, match=r"value 100 at index \(0,\).*casts the array to int8 first"):
        mb.np2tensor(np.array([100, 1], np.uint8), dtype=D.qint4(1.0), narrowing="megengine")


def test_megengine_mode_names_what_numpys_cast_refuses():
    # A str on the way into MegEngine's float32 step for BFloat16: NumPy's error, naming the caller's value.
    with pytest.raises(ValueError, match="'nine'"):
        mb.np2tensor(["nine"], dtype=D.bfloat16, narrowing="megengine")
