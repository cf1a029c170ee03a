"""The promises of the docs as properties over generated inputs (docs/policies.md, docs/dtypes.md):

- checked narrowing changes no value beyond one rounding: a float converts to its value rounded ONCE to
  nearest even, or is refused (ValueRangeError) exactly when that rounding overflows;
- bit-exact with MegBrain, NaN payloads included (MegDNN's float2bfloat16 / bfloat162float);
- FPU-mode independence: every conversion of bfloat16 gives the same bits with flush-to-zero and
  denormals-are-zero on (as `import megengine` leaves the process) and off;
- the caller's dtype is what an error names.

The generators at the top are shared by the properties.
"""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, example, given, settings, strategies as st

from conftest import flush_to_zero, mgb_dtype, nbx

Tensor = nbx.Tensor
bf = np.dtype(nbx.bfloat16)

# ---- generators -----------------------------------------------------------------------------------------------

BF16_MAX = Fraction(2) ** 127 * Fraction(2 ** 8 - 1, 2 ** 7)
BF16_OVERFLOW = Fraction(2) ** 127 * (2 - Fraction(1, 2 ** 8))  # max + half an ulp: from here on, infinity
EDGES = [float(BF16_OVERFLOW), float(BF16_MAX), 3.3961775e38, 2.0 ** -133, 2.0 ** -134, 2.0 ** -126, 1.0 + 2 ** -8,
         1.0 + 2 ** -8 + 2 ** -30, float(2 ** 24 + 2 ** 16 + 1), 0.0, 1e-40, 5e-324, 2.0 ** -149, 3.4028235e38]


def _near(value, dtype, steps):
    """`value` moved `steps` ulps of `dtype` (the source's own ulps: the window either side of a bound)."""
    x = dtype.type(value)
    towards = dtype.type(np.inf if steps > 0 else -np.inf)
    for _ in range(abs(steps)):
        x = np.nextafter(x, towards)
    return x


@st.composite
def finite_floats(draw, dtype):
    """Finite values of a float dtype, weighted to the edges: bounds, ±1..3 ulps of them, the double-rounding
    window, zeros, subnormals of the source and of bfloat16."""
    dtype = np.dtype(dtype)
    if draw(st.booleans()):
        value = draw(st.floats(width=min(64, dtype.itemsize * 8), allow_nan=False, allow_infinity=False))
        return dtype.type(value)
    value = _near(draw(st.sampled_from(EDGES)), dtype, draw(st.integers(-3, 3)))
    value = value if draw(st.booleans()) else -value
    assume(np.isfinite(value))
    return value


def exact(value):
    return Fraction(*np.longdouble(value).as_integer_ratio()) if np.isfinite(value) else None


def bf16_value(bits):
    return exact(np.array([bits << 16], np.uint32).view(np.float32)[0])


def round_once_to_bfloat16(value):
    """The bfloat16 bits of `value` rounded once to nearest, ties to even, or None when that is infinite.
    Exact arithmetic on fractions: nothing here goes through a float32."""
    x = exact(value)
    if abs(x) >= BF16_OVERFLOW:
        return None
    sign = 0x8000 if (x < 0 or (x == 0 and np.signbit(value))) else 0
    approx = int(np.array([np.float32(min(abs(float(x)), float(BF16_MAX)))], np.float32).view(np.uint32)[0]) >> 16
    best = None
    for bits in range(max(approx - 2, 0), min(approx + 3, 0x7F80)):
        distance = abs(bf16_value(bits) - abs(x))
        if best is None or distance < best[0] or (distance == best[0] and bits % 2 == 0):
            best = (distance, bits)
    return sign | best[1]


def megdnn_float2bfloat16(bits32):
    """MegDNN's float2bfloat16 on float32 bits (round to nearest even; inf / NaN: a NaN whose payload lies in
    the low half keeps being a NaN by setting the last bit, signalling NaNs stay signalling)."""
    if bits32 & 0x7F800000 != 0x7F800000:
        return ((bits32 + 0x7FFF + ((bits32 >> 16) & 1)) & 0xFFFFFFFF) >> 16
    return ((bits32 | 0x10000) if bits32 & 0xFFFF else bits32) >> 16


def bits16(tensor):
    return np.frombuffer(tensor.storage(), np.uint16)


# ---- checked narrowing: one rounding or a refusal -------------------------------------------------------------

SOURCES = [np.float64, np.longdouble, np.float32]


@settings(max_examples=400, deadline=None)
@given(data=st.data(), source=st.sampled_from(SOURCES), route=st.sampled_from(["from_numpy", "from_dlpack"]))
@example(data=None, source=np.float64, route="from_numpy")
def test_checked_float_into_bfloat16_rounds_once_or_is_refused(data, source, route):
    value = np.dtype(source).type(3.3961775e38) if data is None else data.draw(finite_floats(source))
    array = np.array([value], source)
    if route == "from_dlpack" and source is np.longdouble:
        return  # DLPack has no long double
    want = round_once_to_bfloat16(value)
    convert = getattr(Tensor, route)
    if want is None:
        with pytest.raises(nbx.ValueRangeError, match=r"value .* at index \(0,\) does not fit BFloat16"):
            convert(array, dtype="BFloat16")
        return
    got = bits16(convert(array, dtype="BFloat16"))
    assert got.tolist() == [want], (repr(value), hex(int(got[0])), hex(want))


@settings(max_examples=200, deadline=None)
@given(value=finite_floats(np.float64), narrowing=st.sampled_from(["checked", "wrap"]))
def test_wrap_and_checked_agree_on_every_value_checked_accepts(value, narrowing):
    want = round_once_to_bfloat16(value)
    assume(want is not None)
    got = bits16(Tensor.from_numpy(np.array([value]), dtype="BFloat16", narrowing=narrowing))
    assert got.tolist() == [want]


# ---- NaN payloads as MegDNN has them ----------------------------------------------------------------------------

NAN_BITS = st.builds(lambda sign, payload: sign | 0x7F800000 | payload, st.sampled_from([0, 0x80000000]),
                     st.integers(1, 0x7FFFFF))


@settings(max_examples=300, deadline=None)
@given(bits=NAN_BITS)
@example(bits=0x7F800001)
@example(bits=0x7FA00000)
def test_float32_nan_into_bfloat16_keeps_megdnn_payload(bits):
    array = np.array([bits], np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):  # a signalling NaN read as a double raises the invalid flag
        got = bits16(Tensor.from_numpy(array, dtype="BFloat16"))
    assert got.tolist() == [megdnn_float2bfloat16(bits)]


def test_bfloat16_nan_into_float32_keeps_its_bits():
    values = np.array([0x7F81, 0xFF81, 0x7FC0, 0x7FA0, 0x7F80, 0x0001, 0x807F], np.uint16).view(bf)
    with np.errstate(invalid="ignore"):
        got = np.frombuffer(Tensor.from_numpy(values, dtype="Float32").storage(), np.uint32)
    assert got.tolist() == [0x7F810000, 0xFF810000, 0x7FC00000, 0x7FA00000, 0x7F800000, 0x00010000, 0x807F0000]


# ---- the FPU's mode changes nothing -----------------------------------------------------------------------------

ALL_BF16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _conversions():
    """Every conversion of bfloat16 values out and in, as bytes (the comparison is bit for bit)."""
    out = {}
    every = ALL_BF16.view(bf)
    with np.errstate(all="ignore"):
        out["bf16 -> Float32"] = Tensor.from_numpy(every, dtype="Float32").storage()
        out["bf16 -> Float16 (wrap)"] = Tensor.from_numpy(every, dtype="Float16", narrowing="wrap").storage()
        out["bf16 -> Int32 (wrap)"] = Tensor.from_numpy(every, dtype="Int32", narrowing="wrap").storage()
        floats = (ALL_BF16.astype(np.uint32) << 16 | 0x8001).view(np.float32)  # every exponent, odd low bits
        out["float32 -> BFloat16"] = Tensor.from_numpy(floats, dtype="BFloat16", narrowing="wrap").storage()
        doubles = floats.astype(np.float64) * np.float64(2.0 ** -20)  # products exact: bfloat16 subnormals too
        out["float64 -> BFloat16"] = Tensor.from_numpy(doubles, dtype="BFloat16", narrowing="wrap").storage()
        out["bf16 round trip"] = Tensor.from_numpy(every).numpy().tobytes()
    return out


def test_bfloat16_conversions_give_the_same_bits_with_flush_to_zero_on():
    plain = _conversions()
    with flush_to_zero():
        flushed = _conversions()
    for name in plain:
        assert flushed[name] == plain[name], name
    # and the subnormals are really there (MegEngine gives 0x00010000 / 0x807F0000)
    assert np.frombuffer(plain["bf16 -> Float32"], np.uint32)[[0x0001, 0x807F]].tolist() == [0x00010000, 0x807F0000]


def test_own_intb_casts_give_the_same_values_with_flush_to_zero_on():
    ib4 = np.dtype(nbx.intb4)
    values = np.arange(-15, 16, 2, dtype=np.int8)
    plain = [values.astype(ib4).astype(t).tobytes() for t in (np.float32, np.float64, np.int8, np.float16)]
    with flush_to_zero():
        flushed = [values.astype(ib4).astype(t).tobytes() for t in (np.float32, np.float64, np.int8, np.float16)]
    assert flushed == plain


@pytest.mark.parametrize("mode", ["default", "flush_to_zero"])
def test_tiny_scales_are_judged_the_same_in_every_fpu_mode(mode):
    import contextlib
    want = float(np.float32(1e-40))  # a float32 subnormal, read before the mode is on
    with (flush_to_zero() if mode == "flush_to_zero" else contextlib.nullcontext()):
        t = Tensor.from_numpy(np.zeros(2, mgb_dtype("int8", "QuantizedS8", 1e-40)))
        assert t.numpy().dtype.metadata["mgb_dtype"]["scale"] == want
        with pytest.raises(nbx.MetadataError, match=r"scale 1e-46 is too small .* smallest positive one is 1\.4\d*e-45"):
            Tensor.from_numpy(np.zeros(2, mgb_dtype("int8", "QuantizedS8", 1e-46)))


# ---- the caller's dtype in messages -----------------------------------------------------------------------------

@pytest.mark.parametrize("target, error, text", [
    ("Float16", nbx.ValueRangeError, "narrowing bfloat16 to Float16: value 70144"),
    ("Int8", nbx.ValueRangeError, "narrowing bfloat16 to Int8: value 70144"),
])
def test_errors_for_a_bfloat16_input_name_bfloat16(target, error, text):
    with pytest.raises(error) as raised:
        Tensor.from_numpy(np.array([70144], np.float32).astype(bf), dtype=target)
    assert text in str(raised.value) and "float32" not in str(raised.value)


# ---- bool into bfloat16: any nonzero byte is True ---------------------------------------------------------------

@pytest.mark.parametrize("narrowing", ["checked", "reject", "wrap"])
def test_bool_bytes_other_than_one_become_one_in_bfloat16(narrowing):
    mask = np.array([0, 1, 2, 255], np.uint8).view(np.bool_)
    t = Tensor.from_numpy(mask, dtype="BFloat16", narrowing=narrowing)
    assert bits16(t).tolist() == [0, 0x3F80, 0x3F80, 0x3F80]


# ---- intbN arithmetic never wraps -------------------------------------------------------------------------------

INTB = {"intb1": 1, "intb2": 3, "intb4": 15}


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(sorted(INTB)), count=st.integers(1, 3000), data=st.data())
def test_intb_reductions_compute_in_float64_as_megengine_does(name, count, data):
    top = INTB[name]
    dtype = np.dtype(getattr(nbx, name))
    values = data.draw(st.lists(st.sampled_from(range(-top, top + 1, 2)), min_size=count, max_size=count))
    a = np.array(values, np.int8).astype(dtype)
    exact = np.array(values, np.float64)
    assert a.sum().dtype == np.float64 and a.sum() == exact.sum()  # MegEngine's intbN: float64 too
    assert a.mean() == exact.mean()
    assert a.max() == exact.max() and a.min() == exact.min()
    assert np.cumsum(a)[-1] == exact.sum()
    short = a[:5]
    assert short.prod() == np.prod(exact[:5])


# ---- MegEngine's own intbN test (imperative/python/test/unit/core/test_dtype_intbx.py), its arange cases ----------

@pytest.mark.parametrize("bits, name", [(1, "intb1"), (2, "intb2"), (4, "intb4")])
def test_intb_arange_as_megengines_own_test_expects(bits, name):
    dtype = np.dtype(getattr(nbx, name))
    top, low = (1 << bits) - 1, 1 - (1 << bits)
    with pytest.raises(ValueError):
        np.arange(low, top, dtype=dtype)  # step 1: the second value is even
    with pytest.raises(ValueError):
        np.arange(low - 2, top + 4, 2, dtype=dtype)  # the first value is out of range
    np.testing.assert_allclose(np.arange(low, 12, 2, dtype=dtype).astype(np.float64),
                               (np.arange((13 - low) // 2, dtype=np.int8) % (top + 1)) * 2 - top)
    np.testing.assert_allclose(np.arange(top, top - 20, -2, dtype=dtype).astype(np.float64),
                               (np.arange(top, top - 10, -1, dtype=np.int8) % (top + 1)) * 2 - top)
    np.testing.assert_allclose(np.arange(low, top + 2, 4, dtype=dtype).astype(np.float64), range(low, top + 2, 4))


# ---- QuantizedS1 holds 0 and 1 only, whatever the path ----------------------------------------------------------

def _qs1():
    return mgb_dtype("int8", "QuantizedS1", 0.5)


def _ml_dtypes_sources():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return [np.array([-8, 7], ml_dtypes.int4), np.array([15, 1], ml_dtypes.uint4), np.array([-2, 1], ml_dtypes.int2)]


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.integers(-128, 127), min_size=1, max_size=12),
       narrowing=st.sampled_from(["checked", "reject", "wrap"]),
       route=st.sampled_from(["try_borrow", "must_borrow", "copy", "copy_from", "from_dlpack"]))
def test_no_path_stores_a_quantized_s1_code_outside_0_1(values, narrowing, route):
    a = np.array(values, np.int8)
    bad = [i for i, v in enumerate(values) if v not in (0, 1)]
    try:
        if route == "copy_from":
            t = Tensor.from_numpy(np.zeros(len(values), np.int8), dtype=_qs1())
            t.copy_from(a, narrowing=narrowing)
        elif route == "from_dlpack":
            t = Tensor.from_dlpack(a, dtype=_qs1(), narrowing=narrowing)
        else:
            t = Tensor.from_numpy(a, dtype=_qs1(), narrowing=narrowing, policy=route)
    except nbx.ValueRangeError as error:
        assert bad and narrowing != "wrap"
        assert f"value {values[bad[0]]} at index ({bad[0]},)" in str(error)
        return
    except nbx.ConversionError as error:  # must_borrow of codes that wrap must copy
        assert bad and narrowing == "wrap" and route == "must_borrow" and "codes:" in str(error)
        return
    assert not bad or narrowing == "wrap"
    stored = np.frombuffer(t.storage(), np.int8)
    assert stored.tolist() == [v & 1 for v in values]  # wrap keeps the low bit (docs/dtypes.md)


def test_ml_dtypes_low_bit_arrays_are_checked_into_quantized_s1():
    for source in _ml_dtypes_sources():
        with pytest.raises(nbx.ValueRangeError, match=r"QuantizedS1: value -?\d+ at index \(0,\)"):
            Tensor.from_numpy(source, dtype=_qs1())
        wrapped = Tensor.from_numpy(source, dtype=_qs1(), narrowing="wrap")
        assert np.frombuffer(wrapped.storage(), np.int8).tolist() == [int(v) & 1 for v in source.astype(np.int8)]


# ---- copy_into follows to_tensor's rules ------------------------------------------------------------------------

INTS = ["int8", "uint8", "int16", "uint16", "int32", "int64", "float16", "float32", "float64", "bool"]
TARGETS = ["Int8", "Uint8", "Int16", "Int32", "Float16", "Float32", "BFloat16"]


@settings(max_examples=300, deadline=None)
@given(source=st.sampled_from(INTS), target=st.sampled_from(TARGETS),
       narrowing=st.sampled_from(["checked", "reject", "wrap"]),
       values=st.lists(st.integers(-400, 400), min_size=1, max_size=6))
def test_copy_into_converts_exactly_as_to_tensor_does(source, target, narrowing, values):
    with np.errstate(all="ignore"):
        a = np.array(values).astype(source)
    try:
        want = Tensor.from_numpy(a, dtype=target, narrowing=narrowing, policy="copy")
    except nbx.ConversionError as error:
        t = Tensor.from_numpy(np.zeros(len(values), np.int8), dtype=target, narrowing="wrap")
        before = t.storage()
        with pytest.raises(type(error)) as raised:
            t.copy_from(a, narrowing=narrowing)
        assert str(raised.value) == str(error)
        assert t.storage() == before  # untouched
        return
    t = Tensor.from_numpy(np.zeros(len(values), np.int8), dtype=target, narrowing="wrap")
    t.copy_from(a, narrowing=narrowing)
    assert t.storage() == want.storage()


# ---- where quantized metadata goes (docs/metadata.md, "Where metadata is lost") ---------------------------------

def test_metadata_follows_numpys_dtype_as_the_docs_say():
    qs8 = mgb_dtype("int8", "QuantizedS8", 0.5)
    a = np.arange(6, dtype=qs8).reshape(2, 3)
    kept = {"slice": a[1:], "take": a[[0, 1]], "copy": a.copy(), "reshape": a.reshape(3, 2), "sort": np.sort(a),
            "max along an axis": a.max(axis=0), "min along an axis": a.min(axis=1),
            "maximum.reduce along an axis": np.maximum.reduce(a, axis=0), "x * 2": a * 2}
    dropped = {"astype": a.astype(np.int16), "concatenate": np.concatenate([a, a]), "sum": a.sum(axis=0),
               "prod": a.prod(axis=0), "mean": a.mean(axis=0), "cumsum": np.cumsum(a), "max to a scalar": a.max(),
               "DLPack": np.from_dlpack(a)}
    for name, result in kept.items():
        assert result.dtype.metadata == qs8.metadata, name
    for name, result in dropped.items():
        assert not result.dtype.metadata, name


def test_the_array_shared_back_from_a_borrowed_view_has_the_memorys_owner_as_base():
    owner = np.arange(10, dtype=np.float32)
    t = Tensor.from_numpy(owner[2:8:2])
    assert t.borrowed and t.numpy().base is owner
    assert Tensor.from_numpy(owner).numpy().base is owner


def test_uintb4_has_no_numpy_form_but_is_made_from_numbers_by_name():
    t = Tensor.from_numpy(np.array([1, 3, -5], np.int8), dtype="UintB4")
    assert t.storage() == Tensor.from_numpy(np.array([1, 3, -5], np.int8), dtype="IntB4").storage()
    with pytest.raises(nbx.DTypeError, match="UintB4 has no numpy form"):
        t.numpy()


def test_a_five_byte_float32_stride_is_named_as_a_stride():
    raw = np.zeros(40, np.uint8)
    a = np.lib.stride_tricks.as_strided(raw[:4].view(np.float32), shape=(4,), strides=(5,))
    assert a.ctypes.data % 4 == 0 and not a.flags.aligned
    t = Tensor.from_numpy(a)
    assert t.copy_reason.startswith("strides:")


def test_a_scales_own_overflow_error_is_what_the_caller_sees():
    class Huge(int):
        def __float__(self):
            raise OverflowError("Huge's own overflow")

    with pytest.raises(OverflowError, match="Huge's own overflow"):
        Tensor.from_numpy(np.zeros(2, mgb_dtype("int8", "QuantizedS8", Huge(1))))
    with pytest.raises(nbx.MetadataError, match=r"scale 10{400} does not fit a float"):
        Tensor.from_numpy(np.zeros(2, mgb_dtype("int8", "QuantizedS8", 10 ** 400)))


# ---- read-only memory is never written ------------------------------------------------------------------------

def _read_only_sources(draw_kind, values):
    raw = np.array(values, np.float32).tobytes()
    if draw_kind == "bytes":
        return raw, np.frombuffer(raw, np.float32)
    if draw_kind == "memoryview":
        return raw, np.asarray(memoryview(raw).cast("f"))
    owner = np.array(values, np.float32)
    view = owner[::-1] if draw_kind == "reversed view" else owner.view()
    view.setflags(write=False)
    return owner, view


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["bytes", "memoryview", "read-only view", "reversed view"]),
       values=st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=8),
       route=st.sampled_from(["try_borrow", "must_borrow", "copy", "from_dlpack"]),
       share=st.sampled_from(["try_share", "must_share", "copy"]))
def test_read_only_memory_is_never_written(kind, values, route, share):
    holder, source = _read_only_sources(kind, values)
    before = bytes(holder) if isinstance(holder, bytes) else holder.tobytes()
    if route == "from_dlpack":
        try:
            t = Tensor.from_dlpack(source)
        except BufferError:  # NumPy 1.x exports no read-only memory over DLPack at all
            assert np.lib.NumpyVersion(np.__version__) < "2.0.0"
            return
    else:
        t = Tensor.from_numpy(source, policy=route)
    assert t.writable == (route == "copy")  # npybridge's tensor marks borrowed read-only memory
    try:
        back = t.numpy(policy=share)
    except nbx.ConversionError:
        back = None
    if back is not None and np.shares_memory(back, source):
        assert not back.flags.writeable
    if not t.writable:
        with pytest.raises(nbx.ConversionError, match="read-only"):
            t.copy_from(np.zeros(len(values), np.float32))
    else:
        t.copy_from(np.zeros(len(values), np.float32))
    after = bytes(holder) if isinstance(holder, bytes) else holder.tobytes()
    assert after == before


# ---- checked narrowing over the table's pairs: one rounding, or a refusal exactly where that overflows --------

FLOAT_FORMATS = {"Float16": (11, -14, 15), "BFloat16": (8, -126, 127), "Float32": (24, -126, 127)}
INT_RANGES = {"Int8": (-128, 127), "Uint8": (0, 255), "Int16": (-32768, 32767), "Uint16": (0, 65535),
              "Int32": (-2 ** 31, 2 ** 31 - 1)}


def round_fraction(x, digits, emin, emax):
    """x rounded once to `digits` significant bits, ties to even, exponents in [emin, emax] (subnormals below):
    a Fraction, or None when the result is infinite."""
    if x == 0:
        return Fraction(0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - digits + 1)
    n, rest = divmod(a / quantum, 1)
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    result = n * quantum
    if result >= Fraction(2) ** (emax + 1):
        return None
    return result if x > 0 else -result


def _stored_values(tensor, target):
    raw = tensor.storage()
    if target == "BFloat16":
        return [Fraction(float(v)) for v in (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)]
    numpy_type = {"Float16": np.float16, "Float32": np.float32}.get(target) or np.dtype(target.lower())
    return [Fraction(*np.longdouble(v).as_integer_ratio()) for v in np.frombuffer(raw, numpy_type)]


@st.composite
def sources_at_the_edges(draw):
    source = draw(st.sampled_from(["float16", "float32", "float64", "longdouble", "int8", "uint8", "int16",
                                   "int32", "int64", "uint32"]))
    dtype = np.dtype(source)
    if dtype.kind == "f":
        return dtype, draw(finite_floats(dtype))
    info = np.iinfo(dtype)
    edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 65535, 65536, 2 ** 24 + 1,
             2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1, 16777216, 33554435]
    value = draw(st.one_of(st.integers(info.min, info.max),
                           st.sampled_from(edges).map(lambda v: v + draw(st.integers(-2, 2)))))
    return dtype, dtype.type(min(max(value, info.min), info.max))


CODE_TARGETS = {  # quantized and packed targets: their codes, by name
    "QuantizedS8": (mgb_dtype("int8", "QuantizedS8", 0.5), lambda v: -128 <= v <= 127),
    "QuantizedS16": (mgb_dtype("int16", "QuantizedS16", 0.5), lambda v: -32768 <= v <= 32767),
    "Quantized8Asymm": (mgb_dtype("uint8", "Quantized8Asymm", 0.5, 3), lambda v: 0 <= v <= 255),
    "IntB4": ("IntB4", lambda v: -15 <= v <= 15 and v % 2 == 1),
    "IntB2": ("IntB2", lambda v: -3 <= v <= 3 and v % 2 == 1),
}


@settings(max_examples=300, deadline=None)
@given(case=sources_at_the_edges(), target=st.sampled_from(sorted(CODE_TARGETS)))
def test_checked_integers_into_codes_change_no_value(case, target):
    """Integers into quantized and packed dtypes: the code as it is, or a refusal exactly when it is not one."""
    dtype, value = case
    assume(dtype.kind in "iu")
    wanted, valid = CODE_TARGETS[target]
    array = np.array([value], dtype)
    try:
        tensor = Tensor.from_numpy(array, dtype=wanted)
    except nbx.ValueRangeError as error:
        assert not valid(int(value)) and "at index (0,)" in str(error)
        return
    assert valid(int(value))
    stored = tensor.numpy()
    assert int(np.asarray(stored).astype(np.int64)[0]) == int(value)


@settings(max_examples=200, deadline=None)
@given(bits=st.integers(0, 0xFFFF).filter(lambda b: b & 0x7F80 != 0x7F80),
       target=st.sampled_from(["Float16", "Float32", "BFloat16"]))
def test_checked_bfloat16_sources_round_once(bits, target):
    """bfloat16 arrays (npybridge's, ml_dtypes' or MegEngine's: the same bits) into the float dtypes."""
    array = np.array([bits], np.uint16).view(bf)
    x = bf16_value(bits) if bits & 0x7FFF else Fraction(0)
    try:
        stored = _stored_values(Tensor.from_numpy(array, dtype=target), target)[0]
    except nbx.ValueRangeError:
        assert round_fraction(x, *FLOAT_FORMATS[target]) is None
        return
    assert stored == round_fraction(x, *FLOAT_FORMATS[target])


@settings(max_examples=600, deadline=None)
@given(case=sources_at_the_edges(), target=st.sampled_from(sorted(FLOAT_FORMATS) + sorted(INT_RANGES)))
def test_checked_narrowing_changes_no_value_beyond_one_rounding(case, target):
    dtype, value = case
    x = Fraction(*np.longdouble(value).as_integer_ratio()) if dtype.kind == "f" else Fraction(int(value))
    array = np.array([value], dtype)
    try:
        stored = _stored_values(Tensor.from_numpy(array, dtype=target), target)[0]
    except nbx.ValueRangeError as error:
        assert "at index (0,)" in str(error) and target in str(error)
        if target in INT_RANGES:
            lo, hi = INT_RANGES[target]
            assert not (lo <= x <= hi and x.denominator == 1)  # refused: out of range, or not a whole number
        else:
            rounded = round_fraction(x, *FLOAT_FORMATS[target])
            # Refused: it would overflow, or it is an integer the float does not hold exactly.
            assert rounded is None or (dtype.kind in "iu" and rounded != x)
        return
    if target in INT_RANGES:
        assert stored == x
    else:
        assert stored == round_fraction(x, *FLOAT_FORMATS[target])
        if dtype.kind in "iu":
            assert stored == x  # checked takes an integer into a float only when it is held exactly
