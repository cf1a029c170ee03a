"""MegEngine 1.13 as the oracle: the same inputs through npybridge and through MegEngine, in one process
(Python 3.10 with NumPy 1.26: tools/test's py310 suite). Quantized dtypes' metadata both ways, arrays made by
one library consumed by the other, bfloat16 and intbN both ways, quantize / dequantize against MegEngine's
own, low-bit quantized tensors through .numpy(), and both import orders in fresh interpreters."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import EXAMPLE_MODULE, nbx

mge = pytest.importorskip("megengine")
D = pytest.importorskip("megengine.core.tensor.dtype")

Tensor = nbx.Tensor

# MegEngine's quantized dtypes (megengine.core.tensor.dtype), their npybridge names and code ranges.
QUANTIZED = [
    ("qint8", D.qint8, (0.25,), "QuantizedS8", -128, 127),
    ("quint8", D.quint8, (0.5, 128), "Quantized8Asymm", 0, 255),
    ("qint32", D.qint32, (0.125,), "QuantizedS32", -2**31, 2**31 - 1),
    ("qint4", D.qint4, (0.5,), "QuantizedS4", -8, 7),
    ("quint4", D.quint4, (0.25, 3), "Quantized4Asymm", 0, 15),
    ("qint1", D.qint1, (1.0,), "QuantizedS1", 0, 1),
]
CONVERT_TO = {"qint8": D.convert_to_qint8, "quint8": D.convert_to_quint8, "qint32": D.convert_to_qint32,
              "qint4": D.convert_to_qint4, "quint4": D.convert_to_quint4, "qint1": D.convert_to_qint1}
CONVERT_FROM = {"qint8": D.convert_from_qint8, "quint8": D.convert_from_quint8, "qint32": D.convert_from_qint32,
                "qint4": D.convert_from_qint4, "quint4": D.convert_from_quint4, "qint1": D.convert_from_qint1}
LOWBIT = {"intb1": (D.intb1, "IntB1", [-1, 1]), "intb2": (D.intb2, "IntB2", [-3, -1, 1, 3]),
          "intb4": (D.intb4, "IntB4", list(range(-15, 16, 2)))}


def codes_for(lo, hi, n=24):
    rng = np.random.default_rng(7)
    return np.concatenate([[lo, hi], rng.integers(max(lo, -1000), min(hi, 1000) + 1, n - 2)])


@pytest.mark.parametrize("name, make, params, mgb_name, lo, hi", QUANTIZED, ids=[q[0] for q in QUANTIZED])
def test_megengine_quantized_dtypes_read_as_npybridge_writes_them(name, make, params, mgb_name, lo, hi):
    q = make(*params)
    t = Tensor.from_numpy(np.zeros(3, q))
    assert t.dtype_name == mgb_name
    assert t.scale == pytest.approx(params[0]) and t.zero_point == (params[1] if len(params) > 1 else None)
    # npybridge's numpy dtype carries exactly MegEngine's metadata, and MegEngine reads it back.
    assert t.dtype.metadata == q.metadata and t.dtype == q
    assert D.is_quantize(t.dtype) and D.get_scale(t.dtype) == pytest.approx(params[0])
    if len(params) > 1:
        assert D.get_zero_point(t.dtype) == params[1]


@pytest.mark.parametrize("name, make, params, mgb_name, lo, hi", QUANTIZED, ids=[q[0] for q in QUANTIZED])
def test_quantized_arrays_cross_both_ways_with_their_codes_and_params(name, make, params, mgb_name, lo, hi):
    q = make(*params)
    codes = codes_for(lo, hi).astype(q.type)
    # MegEngine's tensor -> its .numpy() -> npybridge: the same codes and params (4- and 1-bit ones packed).
    from_mge = mge.Tensor(codes.astype(q)).numpy()
    t = Tensor.from_numpy(from_mge)
    assert t.dtype_name == mgb_name and t.dtype.metadata == q.metadata
    np.testing.assert_array_equal(t.numpy().view(q.type), codes)
    # npybridge's array -> MegEngine's tensor: MegEngine sees the quantized dtype and the same codes.
    back = mge.Tensor(t.numpy())
    assert D.is_quantize(back.dtype) and D.get_scale(back.dtype) == pytest.approx(params[0])
    assert back.dtype.metadata["mgb_dtype"]["name"] == mgb_name
    np.testing.assert_array_equal(back.numpy().view(q.type), codes)


def test_plain_arrays_cross_both_ways():
    for values in (np.arange(12, dtype=np.float32).reshape(3, 4), np.arange(-5, 5, dtype=np.int8),
                   np.arange(6, dtype=np.int32), np.linspace(-1, 1, 5).astype(np.float16)):
        t = Tensor.from_numpy(mge.Tensor(values).numpy())
        np.testing.assert_array_equal(t.numpy(), values)
        np.testing.assert_array_equal(mge.Tensor(Tensor.from_numpy(values).numpy()).numpy(), values)


def test_megengine_bfloat16_arrays_borrow_into_bfloat16_and_come_back_as_megengine_bfloat16():
    values = np.array([1.5, -2.0, 3.25, 65280.0], np.float32)
    a = values.astype(D.bfloat16)
    t = Tensor.from_numpy(a)
    assert t.dtype_name == "BFloat16" and t.borrowed and t.data_address == a.ctypes.data
    out = t.numpy()
    # While MegEngine is imported, results are MegEngine's bfloat16: MegEngine takes them as they are.
    assert out.dtype == np.dtype(D.bfloat16) and out.dtype.type.__module__ == "megengine.core._imperative_rt"
    np.testing.assert_array_equal(out.astype(np.float32), values)
    m = mge.Tensor(Tensor.from_numpy(values, dtype="BFloat16").numpy())
    assert D.is_bfloat16(m.dtype)
    np.testing.assert_array_equal(m.numpy().astype(np.float32), values)
    # A MegEngine bfloat16 tensor's array converts to float32 through npybridge too.
    f = Tensor.from_numpy(mge.Tensor(values).astype(D.bfloat16).numpy(), dtype="Float32")
    np.testing.assert_array_equal(f.numpy(), values)


@pytest.mark.parametrize("name", list(LOWBIT))
def test_megengine_intb_arrays_convert_into_intb_tensors_and_back(name):
    mge_type, npb_name, valid = LOWBIT[name]
    values = np.array(valid * 3, np.int8)
    a = values.astype(mge_type)
    t = Tensor.from_numpy(a)
    assert t.dtype_name == npb_name
    out = t.numpy()
    assert out.dtype == np.dtype(mge_type)
    np.testing.assert_array_equal(out.view(np.int8), values)
    m = mge.Tensor(Tensor.from_numpy(values, dtype=npb_name).numpy())
    assert m.dtype == np.dtype(mge_type)
    np.testing.assert_array_equal(m.numpy().view(np.int8), values)
    bad = np.array([valid[0] + 1], np.int8).view(mge_type)  # an even value: not an intbN value
    with pytest.raises(nbx.ValueRangeError, match=f"{npb_name}: value {valid[0] + 1} at index \\(0,\\)"):
        Tensor.from_numpy(bad)


def quantize_inputs(scale, zero_point, lo, hi):
    """Real values whose quotients by scale are ties (k + 0.5), near ties, integers and values past both clamps."""
    steps = np.arange(max(lo - zero_point, -300) - 3, min(hi - zero_point, 300) + 4, dtype=np.float64)
    quotients = np.concatenate([steps, steps + 0.5, steps + 0.49, steps - 0.49, [1e12, -1e12]])
    return (quotients * scale).astype(np.float32)


@pytest.mark.parametrize("name, make, params, mgb_name, lo, hi", QUANTIZED, ids=[q[0] for q in QUANTIZED])
def test_quantize_agrees_with_megengine_and_rounds_ties_as_megdnn_does(name, make, params, mgb_name, lo, hi):
    q = make(*params)
    scale, zero_point = params[0], (params[1] if len(params) > 1 else 0)
    x = quantize_inputs(scale, zero_point, lo, hi)
    ours = nbx.quantize(x, q).astype(np.int64)
    # Both clamps reached; qint32's upper one is the largest float32 below 2^31 (both libraries clamp in float32).
    top = hi if int(np.float32(hi)) <= hi else int(np.nextafter(np.float32(hi), np.float32(0)))
    assert ours.min() == lo and ours.max() == top
    # MegEngine's C++ (Tensor.astype: MegDNN's quantize) gives the same codes everywhere, ties included
    # (half away from zero). Its Python helper convert_to_* rounds with np.round (ties to even): the same
    # codes except at exact ties.
    cpp = mge.Tensor(x).astype(q).numpy().view(q.type).astype(np.int64)
    python = CONVERT_TO[name](x, q).view(q.type).astype(np.int64)
    quotient = x.astype(np.float64) / np.float32(scale)
    # Past int32's top the three differ: MegDNN converts the clamp bound 2^31 (a float32) to int32, which
    # overflows to -2^31 on x86; MegEngine's Python helper saturates at 2^31 - 1; npybridge clamps to the
    # largest float32 below 2^31 (docs/dtypes.md). Everywhere else npybridge and MegDNN agree exactly.
    over = (quotient > top) if name == "qint32" else np.zeros(x.shape, bool)
    if name == "qint32":
        assert over.any()
        assert (ours[over] == top).all() and (cpp[over] == lo).all() and (python[over] == hi).all()
    np.testing.assert_array_equal(ours[~over], cpp[~over])
    ours, python, quotient = ours[~over], python[~over], quotient[~over]
    ties = np.abs(quotient - np.floor(quotient) - 0.5) < 1e-9
    assert ties.sum() >= 8
    np.testing.assert_array_equal(ours[~ties], python[~ties])
    away = np.clip(np.sign(quotient[ties]) * np.floor(np.abs(quotient[ties]) + 0.5) + zero_point, lo, top)
    even = np.clip(np.round(quotient[ties]) + zero_point, lo, top)
    np.testing.assert_array_equal(ours[ties], away)
    np.testing.assert_array_equal(python[ties], even)


@pytest.mark.parametrize("name, make, params, mgb_name, lo, hi", QUANTIZED, ids=[q[0] for q in QUANTIZED])
def test_dequantize_agrees_with_megengine(name, make, params, mgb_name, lo, hi):
    q = make(*params)
    codes = codes_for(lo, hi, 200).astype(q.type).astype(q)
    np.testing.assert_array_equal(nbx.dequantize(codes), CONVERT_FROM[name](codes))
    np.testing.assert_array_equal(nbx.dequantize(codes), mge.Tensor(codes).astype(np.float32).numpy())


@pytest.mark.parametrize("name", ["qint4", "quint4", "qint1"])
def test_low_bit_quantized_tensors_through_numpy_both_ways(name):
    # QuantizedS4 / Quantized4Asymm are packed two codes a byte (MegBrain's row-aligned layout); QuantizedS1
    # keeps one code a byte in MegBrain, and so in npybridge (a borrow).
    _, make, params, mgb_name, lo, hi = next(q for q in QUANTIZED if q[0] == name)
    q = make(*params)
    codes = np.resize(np.arange(lo, hi + 1), 35).astype(q.type).reshape(5, 7)
    m = mge.Tensor(codes.astype(q))
    t = Tensor.from_numpy(m.numpy())  # packed (row-aligned) into npybridge's tensor
    assert t.dtype_name == mgb_name and t.shape == (5, 7)
    if name == "qint1":
        assert t.borrowed and t.storage() == codes.tobytes()
    else:
        assert len(t.storage()) == 5 * 4  # each row of 7 codes in 4 bytes
    np.testing.assert_array_equal(t.numpy().view(q.type), codes)
    back = mge.Tensor(t.numpy())
    np.testing.assert_array_equal(back.numpy().view(q.type), codes)
    np.testing.assert_array_equal(back.astype(np.float32).numpy(), m.astype(np.float32).numpy())


IMPORT_ORDER_CHECK = """
    import numpy as np
    from megengine.core.tensor import dtype as D
    t = nbx.Tensor.from_numpy(np.array([1.5, 2.0], np.float32), dtype="BFloat16")
    m = megengine.Tensor(t.numpy())
    assert D.is_bfloat16(m.dtype), m.dtype
    back = nbx.Tensor.from_numpy(m.numpy())
    assert back.dtype_name == "BFloat16", back.dtype_name
    i = nbx.Tensor.from_numpy(np.array([1, -3], np.int8).astype(D.intb2))
    assert i.dtype_name == "IntB2" and megengine.Tensor(i.numpy()).dtype == np.dtype(D.intb2)
    q = nbx.Tensor.from_numpy(megengine.Tensor(np.array([3, 4], np.int8).astype(D.qint8(0.5))).numpy())
    assert q.dtype_name == "QuantizedS8" and q.scale == 0.5
    print("both work")
"""


@pytest.mark.parametrize("order", ["megengine first", "npybridge first"])
def test_either_import_order_leaves_both_libraries_working(order):
    imports = ["import megengine", f"import {EXAMPLE_MODULE} as nbx"]
    if order == "npybridge first":
        imports.reverse()
    code = "\n".join(imports) + textwrap.dedent(IMPORT_ORDER_CHECK)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(nbx.__file__))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "both work" in result.stdout


# ---- differential: the same inputs through MegEngine and through npybridge, every difference a documented one ----
# (docs/megbrain.md, "Where npybridge differs from MegEngine 1.13's helper, on purpose", lists each class.)

def _mxcsr():
    import ctypes
    import ctypes.util
    env = ctypes.create_string_buffer(32)
    ctypes.CDLL(ctypes.util.find_library("m")).fegetenv(env)
    return int.from_bytes(env.raw[28:32], "little")


ALL_BF16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def test_import_megengine_left_flush_to_zero_on_and_bfloat16_widens_by_its_bits_anyway():
    assert _mxcsr() & 0x8040 == 0x8040  # what `import megengine` does to the process (FTZ | DAZ)
    every = ALL_BF16.view(D.bfloat16)
    with np.errstate(all="ignore"):
        ours = np.frombuffer(Tensor.from_numpy(every, dtype="Float32").storage(), np.uint32)
        theirs = mge.Tensor(every).astype(np.float32).numpy().view(np.uint32)
    assert np.array_equal(ours, ALL_BF16.astype(np.uint32) << 16)  # the definition: bfloat16 is float32's top half
    assert np.array_equal(ours, theirs)  # MegEngine's typecvt agrees, subnormals and NaN payloads included


def test_float32_into_bfloat16_is_bit_exact_with_megdnn_for_every_exponent_and_nan_payload():
    rng = np.random.default_rng(39)
    bits = np.concatenate([
        (ALL_BF16.astype(np.uint32) << 16) | rng.integers(0, 1 << 16, 1 << 16, dtype=np.uint32),  # every top half
        (ALL_BF16.astype(np.uint32) << 16) | 0x8000,  # every tie
        np.array([0x7F800001, 0x7FA00000, 0xFF800001, 0x7FC00001, 0x00000001, 0x807FFFFF], np.uint32),
    ])
    x = bits.view(np.float32)
    with np.errstate(all="ignore"):
        ours = np.frombuffer(Tensor.from_numpy(x, dtype="BFloat16", narrowing="wrap").storage(), np.uint16)
        theirs = mge.Tensor(x).astype(D.bfloat16).numpy().view(np.uint16)
    differ = np.nonzero(ours != theirs)[0]
    assert differ.size == 0, [(hex(int(bits[i])), hex(int(ours[i])), hex(int(theirs[i]))) for i in differ[:5]]


def _round_once(value):
    from fractions import Fraction
    x = Fraction(value)
    top = int(np.array([np.float32(value)], np.float32).view(np.uint32)[0]) >> 16
    best = None
    for bits in range(max((top & 0x7FFF) - 2, 0), min((top & 0x7FFF) + 3, 0x7F80)):
        v = Fraction(float(np.array([bits << 16], np.uint32).view(np.float32)[0]))
        d = abs(v - abs(x))
        if best is None or d < best[0] or (d == best[0] and bits % 2 == 0):
            best = (d, bits)
    return (0x8000 if value < 0 else 0) | best[1]


def test_float64_into_bfloat16_differs_from_megengine_only_where_megengine_rounds_twice():
    rng = np.random.default_rng(3939)
    # Doubles near bfloat16 midpoints: a bfloat16 value plus half its ulp, nudged by a few float64 ulps and by
    # amounts below float32's resolution (the double-rounding window), in every binade of bfloat16's range.
    tops = rng.integers(0x0080, 0x7F7F, 20000, dtype=np.uint32)
    base = (tops << 16).view(np.float32).astype(np.float64)
    ulp = np.ldexp(1.0, np.frexp(base)[1] - 8)
    x = base + ulp / 2 + rng.choice([-1, 1], tops.size) * ulp * rng.choice([0, 2.0 ** -30, 2.0 ** -20, 2.0 ** -17], tops.size)
    x = np.where(rng.random(tops.size) < 0.5, x, -x)
    ours = np.frombuffer(Tensor.from_numpy(x, dtype="BFloat16", narrowing="wrap").storage(), np.uint16)
    theirs = mge.Tensor(x.astype(np.float32)).astype(D.bfloat16).numpy().view(np.uint16)  # MegEngine: via float32
    differ = np.nonzero(ours != theirs)[0]
    assert differ.size > 0  # the window is really probed
    for i in differ:
        # The one documented class: MegEngine rounds through float32 (twice); npybridge rounds once.
        assert int(ours[i]) == _round_once(float(x[i])), (float(x[i]), hex(int(ours[i])), hex(int(theirs[i])))
        assert np.float64(np.float32(x[i])) != x[i]  # the value was rounded once already on MegEngine's way


@pytest.mark.parametrize("scale", [0.1, 0.3, 1 / 3, 2.0 ** -126 * 1.1, 123.456])
@pytest.mark.parametrize("name, make, args, npb_name, lo, hi", QUANTIZED[:3])
def test_quantized_scales_are_the_float32_a_megengine_tensor_reports(scale, name, make, args, npb_name, lo, hi):
    # MegEngine's Python qint8(0.1) keeps 0.1 in its metadata until it meets a tensor; a tensor's dtype (and
    # MegEngine's C++ helper) says the float32 MegDNN holds, 0.10000000149011612. npybridge's dtypes describe
    # tensors, so they say what MegEngine's tensors say.
    given = make(scale, *args[1:])
    codes = np.array([lo, 0, hi], np.int64).clip(-1000, 1000).astype(given)
    theirs = mge.Tensor(codes, dtype=given).dtype
    ours = Tensor.from_numpy(codes).dtype
    assert ours.metadata == theirs.metadata
    assert D.get_scale(ours) == D.get_scale(theirs) == float(np.float32(scale))
    assert ours == given and ours == theirs  # NumPy compares dtypes without their metadata, as for MegEngine's
    # Either spelling of the scale makes the same tensor: the Python float is rounded once, to MegDNN's float32.
    again = Tensor.from_numpy(codes.astype(np.dtype(codes.dtype.str)), dtype=ours)
    assert (again.scale, again.storage()) == (Tensor.from_numpy(codes).scale, Tensor.from_numpy(codes).storage())


def test_a_subnormal_scale_stays_itself_where_megengines_tensor_flushes_it():
    # The one difference: `import megengine` turned flush-to-zero on, and MegEngine's tensor then reports a
    # subnormal float32 scale as 0.0; npybridge reads and writes scales on their bits (docs/megbrain.md).
    codes = np.array([1, 2], np.int8).astype(D.qint8(1e-40))
    assert D.get_scale(mge.Tensor(codes, dtype=D.qint8(1e-40)).dtype) == 0.0
    nearest_float32 = 9.99994610111476e-41  # float32(1e-40), written out: np.float32(1e-40) is 0 in this process
    assert D.get_scale(Tensor.from_numpy(codes).dtype) == nearest_float32


@pytest.mark.parametrize("name", list(LOWBIT))
def test_intb_arange_gives_megengines_values_for_every_start_and_step(name):
    mge_type, _, valid = LOWBIT[name]
    own = getattr(nbx, name)
    pairs = 0
    for start in valid:
        for second in valid:
            step = second - start
            if step == 0:
                continue
            stop = start + step * 3 * len(valid)
            theirs = np.arange(start, stop, step, dtype=mge_type).astype(np.int8)
            ours = np.arange(start, stop, step, dtype=own).astype(np.int8)
            np.testing.assert_array_equal(ours, theirs, err_msg=f"start {start}, step {step}")
            pairs += 1
    assert pairs == len(valid) * (len(valid) - 1)


@pytest.mark.parametrize("name", list(LOWBIT))
def test_intb_arithmetic_gives_megengines_values_and_dtypes(name):
    mge_type, npb_name, valid = LOWBIT[name]
    codes = np.array(valid * 40, np.int8)
    ours = Tensor.from_numpy(codes, dtype=npb_name).numpy()  # MegEngine's intb type while it is imported
    own = codes.astype(getattr(nbx, name))  # npybridge's own registration
    theirs = codes.astype(mge_type)
    for op in (np.sum, np.mean, np.max, np.min, lambda a: np.cumsum(a)[-1], lambda a: (a + a)[0]):
        assert op(own).dtype == op(theirs).dtype and op(own) == op(theirs)
        assert op(ours) == op(theirs)


# ---- floats into quantized, integer and bool dtypes: MegEngine's codes where every value is a whole number --------

@pytest.mark.parametrize("make, values", [
    (lambda: D.qint8(0.5), np.arange(-4, 6)),
    (lambda: D.quint8(0.25, 7), np.arange(0, 10)),
    (lambda: D.qint32(0.125), np.array([-70000, 0, 3, 2 ** 20])),
    (lambda: np.dtype("int16"), np.array([-300, -0.0, 7])),
    (lambda: np.dtype("bool"), np.array([0, 1, 1, 0])),
])
@pytest.mark.parametrize("source", ["float16", "float32", "float64"])
def test_whole_floats_convert_to_megengines_values_and_the_rest_are_refused(make, values, source):
    dtype = make()
    with np.errstate(all="ignore"):
        array = values.astype(source)
    if not np.array_equal(array.astype(np.float64), values.astype(np.float64)):
        pytest.skip(f"{source} does not hold these values")
    ours = np.frombuffer(Tensor.from_numpy(array, dtype=dtype).storage(), np.dtype(dtype.str))
    theirs = mge.Tensor(array, dtype=dtype).numpy()
    assert ours.tobytes() == np.ascontiguousarray(theirs).tobytes()
    # Where MegEngine truncates and wraps (1.5 -> 1, 300 -> 44 in an int8), npybridge refuses by index.
    with pytest.raises(nbx.ValueRangeError, match=r"at index \(1,\) is not held exactly"):
        Tensor.from_numpy(np.array([array[0], 1.5], source), dtype=dtype)
