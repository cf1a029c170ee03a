"""Float16 and BFloat16 conversions: one rounding from the source's value, NumPy's and MegDNN's bits, NaN payloads,
the kernels against NumPy's casts (docs/dtypes.md).
"""
import re

import numpy as np
import pytest
from hypothesis import assume, example, given, settings, strategies as st

from conftest import BF16_MAX, BF16_OVERFLOW, bf16_value, exact, finite_floats, nbx


Tensor = nbx.Tensor


bf = np.dtype(nbx.bfloat16)


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


SOURCES = [np.float64, np.longdouble, np.float32]


NAN_BITS = st.builds(lambda sign, payload: sign | 0x7F800000 | payload, st.sampled_from([0, 0x80000000]),
                     st.integers(1, 0x7FFFFF))


FLOAT32_BITS = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=300)


def stored(array, dtype, narrowing="wrap"):
    return np.frombuffer(Tensor.from_numpy(array, dtype=dtype, narrowing=narrowing).storage(), np.uint16)


def bf16_of_float32(values):
    """float32 -> bfloat16 bits: to nearest even; a NaN keeps its top bits, its last one set when only lower
    payload bits were (MegDNN's rule)."""
    u = values.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    special = (u & 0x7F800000) == 0x7F800000
    kept = ((u >> 16) | ((u & 0xFFFF) != 0)).astype(np.uint16)
    return np.where(special, kept, rounded)


@pytest.mark.hardening
@pytest.mark.parametrize("target,expected", [("Float16", np.float16), ("Complex64", np.complex64), ("Float32", np.float32)])
def test_bfloat16_goes_into_float_dtypes_as_floats_do(target, expected):
    a = np.array([1.5, -2.0, 65280.0], dtype=nbx.bfloat16)
    t = Tensor.from_numpy(a, dtype=target)
    np.testing.assert_array_equal(t.numpy(), np.array([1.5, -2.0, 65280.0], expected))


@pytest.mark.hardening
def test_bfloat16_beyond_float16_is_named():
    a = np.array([1.0, 131072.0], dtype=nbx.bfloat16)
    with pytest.raises(nbx.ValueRangeError, match=r"value 131072\.0 at index \(1,\) does not fit Float16"):
        Tensor.from_numpy(a, dtype="Float16")


@pytest.mark.hardening
def test_bfloat16_into_integers_follows_the_float_rule():
    with pytest.raises(nbx.ValueRangeError, match=r"narrowing bfloat16 to Int32: value 1\.5 at index \(0,\) is not held"):
        Tensor.from_numpy(np.array([1.5], dtype=nbx.bfloat16), dtype="Int32")
    assert Tensor.from_numpy(np.array([-2.0, 256.0], dtype=nbx.bfloat16), dtype="Int32").numpy().tolist() == [-2, 256]


@pytest.mark.guarantee
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


@pytest.mark.guarantee
@settings(max_examples=200, deadline=None)
@given(value=finite_floats(np.float64), narrowing=st.sampled_from(["checked", "wrap"]))
def test_wrap_and_checked_agree_on_every_value_checked_accepts(value, narrowing):
    want = round_once_to_bfloat16(value)
    assume(want is not None)
    got = bits16(Tensor.from_numpy(np.array([value]), dtype="BFloat16", narrowing=narrowing))
    assert got.tolist() == [want]


@pytest.mark.guarantee
@settings(max_examples=300, deadline=None)
@given(bits=NAN_BITS)
@example(bits=0x7F800001)
@example(bits=0x7FA00000)
def test_float32_nan_into_bfloat16_keeps_megdnn_payload(bits):
    array = np.array([bits], np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):  # a signalling NaN read as a double raises the invalid flag
        got = bits16(Tensor.from_numpy(array, dtype="BFloat16"))
    assert got.tolist() == [megdnn_float2bfloat16(bits)]


@pytest.mark.guarantee
def test_bfloat16_nan_into_float32_keeps_its_bits():
    values = np.array([0x7F81, 0xFF81, 0x7FC0, 0x7FA0, 0x7F80, 0x0001, 0x807F], np.uint16).view(bf)
    with np.errstate(invalid="ignore"):
        got = np.frombuffer(Tensor.from_numpy(values, dtype="Float32").storage(), np.uint32)
    assert got.tolist() == [0x7F810000, 0xFF810000, 0x7FC00000, 0x7FA00000, 0x7F800000, 0x00010000, 0x807F0000]


@pytest.mark.guarantee
@pytest.mark.parametrize("target, error, text", [
    ("Float16", nbx.ValueRangeError, "narrowing bfloat16 to Float16: value 70144.0 at"),
    ("Int8", nbx.ValueRangeError, "narrowing bfloat16 to Int8: value 70144.0 at"),
])
def test_errors_for_a_bfloat16_input_name_bfloat16(target, error, text):
    with pytest.raises(error) as raised:
        Tensor.from_numpy(np.array([70144], np.float32).astype(bf), dtype=target)
    assert text in str(raised.value) and "float32" not in str(raised.value)


@pytest.mark.guarantee
@pytest.mark.parametrize("narrowing", ["checked", "reject", "wrap"])
def test_bool_bytes_other_than_one_become_one_in_bfloat16(narrowing):
    mask = np.array([0, 1, 2, 255], np.uint8).view(np.bool_)
    t = Tensor.from_numpy(mask, dtype="BFloat16", narrowing=narrowing)
    assert bits16(t).tolist() == [0, 0x3F80, 0x3F80, 0x3F80]


@settings(max_examples=60, deadline=None)
@given(FLOAT32_BITS)
def test_float32_into_float16_and_bfloat16_gives_numpys_and_the_correctly_rounded_bits(bits):
    values = np.array(bits, np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        half = values.astype(np.float16).view(np.uint16)
    assert np.array_equal(stored(values, "Float16"), half)
    assert np.array_equal(stored(values[::-1], "Float16"), half[::-1])  # strided: the general path
    assert np.array_equal(stored(values, "BFloat16"), bf16_of_float32(values))
    assert np.array_equal(stored(values[::-1], "BFloat16"), bf16_of_float32(values)[::-1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=200))
def test_float64_into_bfloat16_gives_the_bits_of_the_elementwise_rounding(bits):
    values = np.array(bits, np.uint64).view(np.float64)
    assert np.array_equal(stored(values, "BFloat16"), stored(values[::-1], "BFloat16")[::-1])
    one_by_one = np.concatenate([stored(values[i:i + 1], "BFloat16") for i in range(values.size)])
    assert np.array_equal(stored(values, "BFloat16"), one_by_one)  # the block kernel and the tail agree


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2**64 - 1),
                          st.builds(lambda head, e, noise: int(np.float64((2048 + head * 2 + 1) * 2.0 ** e)
                                                               .view(np.uint64)) + noise,
                                    st.integers(0, 1023), st.integers(-40, 5), st.integers(-1, 1))),
                min_size=1, max_size=200))
def test_float64_into_float16_gives_numpys_bits_rounded_once(bits):
    values = np.array(bits, np.uint64).view(np.float64)  # near half ties at every exponent, and any bits
    with np.errstate(all="ignore"):
        half = values.astype(np.float16).view(np.uint16)
    assert np.array_equal(stored(values, "Float16"), half)
    assert np.array_equal(stored(values[::-1], "Float16"), half[::-1])


def test_every_float16_widens_to_numpys_float32():
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    ours = np.frombuffer(Tensor.from_numpy(every, dtype="Float32").storage(), np.uint32)
    assert np.array_equal(ours, every.astype(np.float32).view(np.uint32))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=9000),
       st.sampled_from([("Float16", 65520.0), ("BFloat16", (2 - 2**-8) * 2.0**127)]), st.sampled_from(["float32", "float64"]))
def test_checked_refuses_the_first_finite_value_that_would_overflow(values, target, source):
    name, overflow = target
    array = np.array(values, source)
    finite = np.isfinite(array)
    bad = np.nonzero(finite & (np.abs(array.astype(np.float64)) >= overflow))[0]
    if bad.size == 0:
        Tensor.from_numpy(array, dtype=name)
        return
    with pytest.raises(nbx.ValueRangeError, match=rf"at index \({bad[0]},\)"):
        Tensor.from_numpy(array, dtype=name)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), st.data(), st.sampled_from(["float32", "float64"]))
def test_checked_float16_refuses_values_from_65520_and_keeps_those_below(n, data, source):
    """Between float16's largest finite value and 2^16, in among ordinary values: below 65520 they round to 65504,
    from 65520 to infinity, whichever eight of a vector loop they fall in."""
    edge = st.floats(65504.0, 65536.0, width=32) | st.sampled_from([65519.99609375, 65520.0, 65535.99609375])
    array = np.full(n, 1.5, source)
    for at in data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=True)):
        array[at] = data.draw(edge) * data.draw(st.sampled_from([1.0, -1.0]))
    bad = np.nonzero(np.abs(array) >= 65520.0)[0]
    if bad.size == 0:
        assert np.array_equal(Tensor.from_numpy(array, dtype="Float16").numpy(), array.astype(np.float16))
        return
    with pytest.raises(nbx.ValueRangeError, match=rf"at index \({bad[0]},\)"):
        Tensor.from_numpy(array, dtype="Float16")


@pytest.mark.parametrize("library", ["own", "ml_dtypes"])
@pytest.mark.parametrize("view", ["contiguous", "reversed", "0-d", "byte-swapped", "2-d"])
def test_every_bfloat16_widens_to_float32_by_its_bits(library, view):
    """Every bfloat16 bit pattern, NaN payloads and subnormals included, into Float32 as its bits << 16, whichever
    library's array and however it is laid out (straight into the tensor or through a temporary)."""
    if library == "ml_dtypes":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        bf16 = np.dtype(ml_dtypes.bfloat16)
    else:
        bf16 = np.dtype(nbx.bfloat16)
    bits = np.arange(1 << 16, dtype=np.uint16)
    source = bits.view(bf16)
    expected = bits.astype(np.uint32) << 16
    if view == "reversed":
        source, expected = source[::-1], expected[::-1]
    elif view == "0-d":
        source, expected = source[0x7FC1].reshape(()), expected[0x7FC1].reshape(())
    elif view == "byte-swapped":
        swapped = bits.byteswap().view(bf16.newbyteorder())
        if swapped.dtype.byteorder == "=" or swapped.dtype.isnative:
            pytest.skip(f"{library}'s bfloat16 has no byte-swapped form")
        source = swapped
    elif view == "2-d":
        source, expected = source.reshape(256, 256), expected.reshape(256, 256)
    ours = np.frombuffer(Tensor.from_numpy(source, dtype="Float32").storage(), np.uint32).reshape(expected.shape)
    assert np.array_equal(ours, expected)
    existing = Tensor.from_numpy(np.zeros(expected.shape, np.float32), policy="copy")
    existing.copy_from(source)  # copy_into: into existing memory
    assert np.array_equal(np.frombuffer(existing.storage(), np.uint32).reshape(expected.shape), expected)


F32_OVERFLOW = 2.0**128 - 2.0**103  # FLT_MAX + half an ulp: rounds to infinity
DOUBLES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e39, 1e39),
                    st.sampled_from([F32_OVERFLOW, np.nextafter(F32_OVERFLOW, 0), 1e-46, -0.0]))


@settings(max_examples=80, deadline=None)
@given(data=st.data(), layout=st.sampled_from(["contiguous", "transposed", "reversed", "byte-swapped", "0-d"]),
       narrowing=st.sampled_from(["checked", "wrap"]))
def test_complex128_into_complex64_narrows_each_part_as_numpy_casts_it(data, layout, narrowing):
    """complex128 -> Complex64 narrows both parts in one pass over any layout: 'wrap' gives numpy's bits, 'checked'
    the same or the first value (C order) with a part that would overflow, named by index and value."""
    parts = data.draw(st.lists(DOUBLES, min_size=2, max_size=2 * 12 * 7).filter(lambda v: len(v) % 2 == 0))
    if layout == "0-d":
        array = np.zeros((), np.complex128)
        array.real, array.imag = parts[0], parts[1]
    else:
        flat = np.empty(len(parts) // 2, np.complex128)
        flat.real, flat.imag = parts[0::2], parts[1::2]
        array = {"contiguous": flat, "reversed": flat[::-1],
                 "transposed": np.resize(flat, (7, 12)).T, "byte-swapped": flat.astype(">c16")}[layout]
    with np.errstate(over="ignore", invalid="ignore"):
        expected = array.astype(np.complex64, order="C")
    pairs = np.ascontiguousarray(array).astype("<c16").view(np.float64).reshape(-1, 2)
    bad = np.nonzero((np.isfinite(pairs) & (np.abs(pairs) >= F32_OVERFLOW)).any(axis=1))[0]
    if narrowing == "checked" and bad.size:
        index = np.unravel_index(bad[0], array.shape) if array.ndim else ()
        with pytest.raises(nbx.ValueRangeError, match=re.escape(f"at index {tuple(int(i) for i in index)}")
                           if array.ndim else "does not fit Complex64"):
            Tensor.from_numpy(array, dtype="Complex64")
        return
    got = Tensor.from_numpy(array, dtype="Complex64", narrowing=narrowing).numpy()
    assert got.shape == expected.shape
    assert (np.ascontiguousarray(got).view(np.uint32) == np.ascontiguousarray(expected).view(np.uint32)).all()


INT_SOURCES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def _integers(draw, source):
    info = np.iinfo(source)
    near = st.builds(lambda e, d: (1 << e) + d, st.integers(0, info.bits - 1 - (info.min < 0)), st.integers(-3, 3))
    value = st.one_of(st.integers(int(info.min), int(info.max)), st.integers(-300, 300), near,
                      near.map(lambda v: -v))
    values = draw(st.lists(value.filter(lambda v: info.min <= v <= info.max), min_size=1, max_size=1300))
    return np.array(values, source)


@settings(max_examples=120, deadline=None)
@given(data=st.data(), source=st.sampled_from(INT_SOURCES), narrowing=st.sampled_from(["checked", "wrap"]))
def test_integers_into_bfloat16_round_once_or_name_the_first_inexact_value(data, source, narrowing):
    """Integers into BFloat16 in one pass: 'wrap' rounds each once to nearest even (from the integer, also beyond
    2^53); 'checked' stores the same bits when every value is exact, else names the first that is not."""
    array = _integers(data.draw, source)
    expected = [round_once_to_bfloat16(int(v)) for v in array]
    inexact = [i for i, (v, bits) in enumerate(zip(array, expected)) if bits is None or bf16_value(bits) != int(v)]
    if narrowing == "checked" and inexact:
        with pytest.raises(nbx.ValueRangeError, match=re.escape(f"at index ({inexact[0]},)")):
            Tensor.from_numpy(array, dtype="BFloat16")
        return
    assert stored(array, "BFloat16", narrowing).tolist() == expected


@settings(max_examples=120, deadline=None)
@given(data=st.data(), source=st.sampled_from(INT_SOURCES))
def test_integers_into_float16_are_exact_or_the_first_inexact_is_named(data, source):
    """Checked integers into Float16 in one pass: exact values give NumPy's bits; the first value float16 does not
    hold (more than 11 significant bits, or past 65504) is named by index."""
    array = _integers(data.draw, source)
    with np.errstate(over="ignore"):
        halves = array.astype(np.float16)
    inexact = [i for i, (v, h) in enumerate(zip(array, halves)) if not np.isfinite(h) or int(h) != int(v)]
    if inexact:
        with pytest.raises(nbx.ValueRangeError, match=re.escape(f"at index ({inexact[0]},)")):
            Tensor.from_numpy(array, dtype="Float16")
        return
    assert (stored(array, "Float16", "checked") == halves.view(np.uint16)).all()
    if np.dtype(source).itemsize <= 2:  # wrap: NumPy's bits, every value rounded once
        with np.errstate(over="ignore"):
            assert (stored(array, "Float16", "wrap") == array.astype(np.float16).view(np.uint16)).all()
