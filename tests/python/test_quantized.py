"""Quantized dtypes: params in metadata, quantize / dequantize, QuantizedS1's codes (docs/metadata.md, docs/dtypes.md).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from conftest import EXAMPLE_MODULE, mgb_dtype, nbx, run_python


Tensor = nbx.Tensor


S1 = mgb_dtype("int8", "QuantizedS1", 1.0)


def _qs1():
    return mgb_dtype("int8", "QuantizedS1", 0.5)


def _ml_dtypes_sources():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return [np.array([-8, 7], ml_dtypes.int4), np.array([15, 1], ml_dtypes.uint4), np.array([-2, 1], ml_dtypes.int2)]


QUANTIZE_CASES = [  # base, name, scale, zero_point, code range (the clamp), the low-bit ones unpacked one per byte
    ("uint8", "Quantized8Asymm", 0.25, 128, 0, 255),
    ("int8", "QuantizedS8", 0.5, None, -128, 127),
    ("int16", "QuantizedS16", 0.125, None, -32768, 32767),
    ("int32", "QuantizedS32", 2**-10, None, -2**31, 2147483520),  # the largest float32 below 2^31
    ("uint8", "Quantized4Asymm", 0.5, 3, 0, 15),
    ("int8", "QuantizedS4", 0.25, None, -8, 7),
    ("int8", "QuantizedS1", 1.0, None, 0, 1),
]


@pytest.mark.hardening
def test_a_scale_whose_float_deletes_it_raises_its_own_error():
    class Evil(int):
        def __float__(self):
            del fields["scale"]
            raise ArithmeticError("from __float__")

    fields = {"name": "QuantizedS8", "scale": Evil(1)}
    dtype = np.dtype("i1", metadata={"mgb_dtype": fields})
    with pytest.raises(ArithmeticError, match="from __float__"):
        Tensor.from_numpy(np.zeros(2, dtype))
    # Under PYTHONMALLOC=debug a use of the freed scale crashes: run it there too.
    result = run_python(f"""
        import numpy as np, {EXAMPLE_MODULE} as nbx
        class Evil(int):
            def __float__(self):
                del fields["scale"]; raise ValueError("mine")
        fields = {{"name": "QuantizedS8", "scale": Evil(1)}}
        try:
            nbx.Tensor.from_numpy(np.zeros(2, np.dtype("i1", metadata={{"mgb_dtype": fields}})))
        except ValueError as e:
            print("raised", e)
    """)
    assert result.returncode == 0, result.stderr
    assert "raised mine" in result.stdout


@pytest.mark.hardening
@pytest.mark.parametrize("raised", [ZeroDivisionError, OverflowError])
def test_a_scale_whose_float_raises_keeps_its_exception(raised):
    # OverflowError too: the scale's own, not npybridge's "does not fit a float"
    class Refuses(int):
        def __float__(self):
            raise raised("the scale's own error")

    with pytest.raises(raised, match="the scale's own error"):
        Tensor.from_numpy(np.zeros(2, mgb_dtype("i1", "QuantizedS8", Refuses(1))))


@pytest.mark.hardening
def test_a_zero_point_whose_index_raises_keeps_its_exception():
    fields = {"name": "Quantized8Asymm", "scale": 0.5}

    class Refuses(np.int64):
        def __index__(self):
            del fields["zero_point"]
            raise LookupError("no index")

    fields["zero_point"] = Refuses(3)
    with pytest.raises(LookupError, match="no index"):
        Tensor.from_numpy(np.zeros(2, np.dtype("u1", metadata={"mgb_dtype": fields})))


@pytest.mark.hardening
def test_a_zero_point_out_of_range_is_still_named():
    with pytest.raises(nbx.MetadataError, match="zero_point 256 is outside|zero_point"):
        Tensor.from_numpy(np.zeros(2, mgb_dtype("u1", "Quantized8Asymm", 0.5, 256)))
    with pytest.raises(nbx.MetadataError, match="zero_point .* is outside"):
        Tensor.from_numpy(np.zeros(2, mgb_dtype("u1", "Quantized8Asymm", 0.5, 2**70)))


@pytest.mark.hardening
@pytest.mark.parametrize("source, target", [
    (("i1", "QuantizedS8", 0.5, None), ("i1", "QuantizedS4", 0.25, None)),
    (("i1", "QuantizedS8", 0.5, None), ("i1", "QuantizedS4", 0.5, None)),
    (("u1", "Quantized8Asymm", 0.5, 128), ("u1", "Quantized4Asymm", 0.5, 3)),
    (("i1", "QuantizedS8", 0.5, None), ("i1", "QuantizedS8", 0.25, None)),
])
def test_requantizing_is_refused_packed_or_not(source, target):
    base, name, scale, zp = source
    codes = np.array([1, 2, 3], base).view(mgb_dtype(base, name, scale, zp))
    with pytest.raises(nbx.DTypeError, match="requantizing is not supported") as caught:
        Tensor.from_numpy(codes, dtype=mgb_dtype(*target))
    assert name in str(caught.value) and target[1] in str(caught.value)


@pytest.mark.hardening
@pytest.mark.parametrize("target", ["IntB4", "IntB2", "Int8", "Int32", "Float32"])
def test_quantized_codes_do_not_silently_lose_their_scale(target):
    codes = np.array([1, 3, -3], np.int8).view(mgb_dtype("i1", "QuantizedS8", 0.5))
    with pytest.raises(nbx.DTypeError, match="would drop the quantization parameters") as caught:
        Tensor.from_numpy(codes, dtype=target)
    assert "QuantizedS8(scale=0.5)" in str(caught.value) and target in str(caught.value)
    # The raw codes are one view away, as the message says.
    assert Tensor.from_numpy(codes.view(np.int8), dtype=target).numpy().tolist() == [1, 3, -3]


@pytest.mark.hardening
def test_a_scale_that_underflows_float32_says_so():
    for make in (lambda: Tensor.from_storage(b"\1", "QuantizedS8", (1,), scale=1e-50),
                 lambda: Tensor.from_numpy(np.zeros(1, mgb_dtype("i1", "QuantizedS8", 1e-50)))):
        with pytest.raises(nbx.MetadataError, match="scale 1e-50 is too small for a float32 .*rounds to 0"):
            make()
    with pytest.raises(nbx.MetadataError, match="scale 0 must be > 0"):
        Tensor.from_storage(b"\1", "QuantizedS8", (1,), scale=0.0)


@pytest.mark.hardening
@pytest.mark.parametrize("scale, zero_point, culprit", [
    (True, None, "scale must be a real number, got True"),
    ("0.5", None, "scale must be a real number, got '0.5'"),
    (0.5, True, "zero_point must be an integer, got True"),
    (0.5, 3.0, "zero_point must be an integer, got 3.0"),
    (0.5, 256, "zero_point 256 is outside"),
    (float("nan"), None, "scale nan is not finite"),
])
def test_from_storage_validates_params_as_metadata_does(scale, zero_point, culprit):
    from decimal import Decimal
    name = "Quantized8Asymm" if zero_point is not None else "QuantizedS8"
    with pytest.raises(nbx.MetadataError) as from_storage:
        Tensor.from_storage(b"\1", name, (1,), scale=scale, zero_point=zero_point)
    fields = {"name": name, "scale": scale} if zero_point is None else {"name": name, "scale": scale, "zero_point": zero_point}
    with pytest.raises(nbx.MetadataError) as from_metadata:
        Tensor.from_numpy(np.zeros(1, np.dtype("u1" if zero_point is not None else "i1", metadata={"mgb_dtype": fields})))
    assert culprit in str(from_storage.value) and culprit in str(from_metadata.value)
    with pytest.raises(nbx.MetadataError, match="scale must be a real number, got Decimal"):
        Tensor.from_storage(b"\1", "QuantizedS8", (1,), scale=Decimal("0.5"))


@pytest.mark.hardening
@pytest.mark.parametrize("policy", ["try_borrow", "must_borrow", "copy"])
def test_quantized_s1_codes_outside_0_1_are_refused(policy):
    with pytest.raises(nbx.ValueRangeError, match=r"QuantizedS1: value 2 at index \(1,\)"):
        Tensor.from_numpy(np.array([1, 2, 0], dtype=S1), policy=policy)
    with pytest.raises(nbx.ValueRangeError, match=r"QuantizedS1: value -5 at index \(0, 1\)"):
        Tensor.from_numpy(np.array([[0, -5]], np.int8), dtype=S1, policy=policy)


@pytest.mark.hardening
def test_quantized_s1_codes_in_range_are_borrowed():
    a = np.array([1, 0, 1], dtype=S1)
    t = Tensor.from_numpy(a, policy="must_borrow")
    assert t.borrowed and t.dtype_name == "QuantizedS1"
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.hardening
def test_narrowing_into_quantized_s1_checks_its_codes():
    with pytest.raises(nbx.ValueRangeError, match="value 3 at index"):
        Tensor.from_numpy(np.array([0, 1, 3]), dtype=S1)
    assert Tensor.from_numpy(np.array([0, 1, 1]), dtype=S1).dtype_name == "QuantizedS1"


@pytest.mark.hardening
def test_wrap_keeps_the_low_bit_of_a_quantized_s1_code():
    t = Tensor.from_numpy(np.array([1, 2], np.int8), dtype=S1, narrowing="wrap")
    np.testing.assert_array_equal(t.numpy(), [1, 0])


@pytest.mark.hardening
@pytest.mark.parametrize("values", [np.array([0.5, -1.25, 3.0]), np.array([1, -2, 3]), [0.5, -1.25, 3.0],
                                    np.array([0.5, -1.25, 3.0], np.float32), np.array([True, False, True])])
def test_quantize_takes_any_real_array_like(values):
    q = nbx.quantize(values, mgb_dtype("int8", "QuantizedS8", 0.25))
    real = np.asarray(values, float)
    # MegDNN's rule: x / scale rounded half away from zero (-1.25 / 0.25 = -5 exactly; 0.5 / 0.25 = 2).
    np.testing.assert_array_equal(q, np.trunc(real / 0.25 + np.copysign(0.5, real)))
    assert q.dtype.metadata["mgb_dtype"]["name"] == "QuantizedS8"


@pytest.mark.hardening
@pytest.mark.parametrize("values,shown", [(np.array([1 + 2j]), "complex128"), (["a"], "list"), (None, "NoneType")])
def test_quantize_refuses_values_that_are_not_real_numbers(values, shown):
    with pytest.raises((nbx.DTypeError, ValueError, TypeError), match=shown if shown != "list" else "real numbers|could not convert|array-like of numbers, got list"):
        nbx.quantize(values, mgb_dtype("int8", "QuantizedS8", 0.25))


@pytest.mark.hardening
def test_dequantize_refuses_codes_outside_the_dtype_naming_them():
    codes = np.array([1, 100, -3], dtype=mgb_dtype("int8", "QuantizedS4", 0.5))
    with pytest.raises(nbx.ValueRangeError, match=r"QuantizedS4: value 100 at index \(1,\)"):
        nbx.dequantize(codes)
    # A tensor whose bytes are not all codes (from raw storage): the library's dequantize names code and index.
    raw = nbx.Tensor.from_storage(bytes([0, 1, 1, 5]), "QuantizedS1", (2, 2), 1.0)
    with pytest.raises(nbx.ValueRangeError, match=r"dequantize: code 5 at index \(1, 1\) is not a QuantizedS1"):
        nbx.dequantize(raw)
    with pytest.raises(nbx.DTypeError, match="dequantize: Float32 is not a quantized dtype"):
        nbx.dequantize(nbx.Tensor.from_numpy(np.zeros(2, np.float32)))
    np.testing.assert_array_equal(nbx.dequantize(np.array([1, 7, -8], dtype=mgb_dtype("int8", "QuantizedS4", 0.5))),
                                  [0.5, 3.5, -4.0])


@pytest.mark.guarantee
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


@pytest.mark.guarantee
def test_ml_dtypes_low_bit_arrays_are_checked_into_quantized_s1():
    for source in _ml_dtypes_sources():
        with pytest.raises(nbx.ValueRangeError, match=r"QuantizedS1: value -?\d+ at index \(0,\)"):
            Tensor.from_numpy(source, dtype=_qs1())
        wrapped = Tensor.from_numpy(source, dtype=_qs1(), narrowing="wrap")
        assert np.frombuffer(wrapped.storage(), np.int8).tolist() == [int(v) & 1 for v in source.astype(np.int8)]


@pytest.mark.guarantee
def test_a_scale_too_large_for_a_float_is_named():
    # (a scale whose own __float__ overflows keeps its own error: test_a_scale_whose_float_raises_keeps_its_exception)
    with pytest.raises(nbx.MetadataError, match=r"scale 10{400} does not fit a float"):
        Tensor.from_numpy(np.zeros(2, mgb_dtype("int8", "QuantizedS8", 10 ** 400)))


@pytest.mark.guarantee
@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(["Quantized8Asymm", "QuantizedS8", "QuantizedS16", "QuantizedS32"]),
       scale=st.floats(min_value=1e-30, max_value=1e30, allow_nan=False, allow_infinity=False),
       zero_point=st.integers(0, 255), data=st.data())
def test_quantized_params_survive_the_round_trip(name, scale, zero_point, data):
    base = {"Quantized8Asymm": "uint8", "QuantizedS8": "int8", "QuantizedS16": "int16", "QuantizedS32": "int32"}[name]
    zp = zero_point if name == "Quantized8Asymm" else None
    dtype = mgb_dtype(base, name, scale, zp)
    a = data.draw(hnp.arrays(np.dtype(base), hnp.array_shapes(max_dims=3, max_side=5))).astype(dtype)
    t = Tensor.from_numpy(a)
    assert t.borrowed and t.scale == np.float32(scale) and t.zero_point == zp
    back = t.numpy()
    fields = back.dtype.metadata["mgb_dtype"]
    assert fields["name"] == name and fields["scale"] == float(np.float32(scale)) and fields.get("zero_point") == zp
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("base, name, scale, zero_point", [
    ("uint8", "Quantized8Asymm", 0.25, 128),
    ("int8", "QuantizedS8", 0.5, None),
    ("int16", "QuantizedS16", 2.0, None),
    ("int32", "QuantizedS32", 1e-3, None),
    ("int8", "QuantizedS1", 1.0, None),
])
def test_quantized_arrays_are_borrowed_and_keep_their_params(base, name, scale, zero_point):
    dtype = mgb_dtype(base, name, scale, zero_point)
    a = np.array([0, 1, 1, 0], dtype=dtype)
    t = Tensor.from_numpy(a)
    assert t.borrowed and t.dtype_name == name
    assert t.scale == np.float32(scale) and t.zero_point == zero_point
    back = t.numpy()
    assert back.dtype.metadata == {"mgb_dtype": {"name": name, "scale": float(np.float32(scale)),
                                                 **({"zero_point": zero_point} if zero_point is not None else {})}}
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("make", [
    lambda: np.arange(6, dtype=mgb_dtype("int8", "QuantizedS8", 0.5)),
    lambda: np.arange(6, dtype=mgb_dtype("int8", "QuantizedS8", 0.5))[::2],
    lambda: np.arange(6, dtype=mgb_dtype("int8", "QuantizedS8", 0.5)).astype(">i1").view(
        mgb_dtype("int8", "QuantizedS8", 0.5)),
    lambda: np.array([1, -1, 0], dtype=mgb_dtype("int8", "QuantizedS4", 0.5)),
    lambda: np.array([1, 0, 1], dtype=mgb_dtype("int8", "QuantizedS1", 1.0)),
    lambda: np.arange(4, dtype=mgb_dtype("uint8", "Quantized8Asymm", 0.25, 3)),
])
def test_the_second_conversion_of_a_dtype_decides_like_the_first(make):
    # The first conversion parses the metadata and caches the dtype; later ones take
    # a fast path through that cache, which must reach the same decision.
    a = make()
    first, second = Tensor.from_numpy(a), Tensor.from_numpy(a)
    assert (first.borrowed, first.copy_reason, first.dtype_name, first.scale, first.zero_point) == \
        (second.borrowed, second.copy_reason, second.dtype_name, second.scale, second.zero_point)
    assert first.storage() == second.storage()
    np.testing.assert_array_equal(second.numpy(), a)


@pytest.mark.parametrize("base, name, scale, zero_point, lo, hi", QUANTIZE_CASES, ids=[c[1] for c in QUANTIZE_CASES])
def test_quantize_rounds_half_away_from_zero_and_clamps_and_dequantize_inverts_it(base, name, scale, zero_point,
                                                                                   lo, hi):
    # MegDNN's rule (dtype.h): q = clamp(round_half_away(x / scale) + zero_point), all in float32; NaN -> lo.
    dtype = mgb_dtype(base, name, scale, zero_point)
    zp = zero_point or 0
    steps = np.arange(max(lo - zp, -400) - 3, min(hi - zp, 400) + 4, dtype=np.float64)
    quotients = np.concatenate([steps, steps + 0.5, steps - 0.5, steps + 0.49, [1e12, -1e12]])
    x = (quotients * scale).astype(np.float32)
    # NaN, inf and -inf among the vector loops' lanes and in the scalar tail.
    specials = np.array([np.nan, np.inf, -np.inf], np.float32)
    codes = nbx.quantize(np.concatenate([x[:5], specials, x[5:], specials]), dtype)
    assert codes.dtype == dtype and codes.dtype.metadata == dtype.metadata
    assert list(codes[5:8]) == list(codes[-3:]) == [lo, hi, lo]
    ordinary = np.ones(len(codes), bool)
    ordinary[5:8] = ordinary[-3:] = False
    codes = codes[ordinary]
    q = (x / np.float32(scale)).astype(np.float64)  # the float32 quotient, exactly
    expected = np.clip(np.sign(q) * np.floor(np.abs(q) + 0.5) + zp, lo, hi)
    np.testing.assert_array_equal(codes.astype(np.int64), expected.astype(np.int64))
    assert codes.astype(np.int64).min() == lo and codes.astype(np.int64).max() == hi
    inside = codes[(expected > lo) & (expected < hi)]
    np.testing.assert_array_equal(nbx.dequantize(inside),
                                  (inside.astype(np.float64) - zp).astype(np.float32) * np.float32(scale))


def test_a_plain_array_becomes_quantized_codes_when_asked():
    a = np.array([1, 2, 3], dtype=np.int8)
    t = Tensor.from_numpy(a, dtype=mgb_dtype("int8", "QuantizedS8", 0.5))
    assert t.borrowed and t.dtype_name == "QuantizedS8" and t.scale == 0.5


def test_requantizing_is_refused():
    a = np.array([1, 2], dtype=mgb_dtype("int8", "QuantizedS8", 0.5))
    with pytest.raises(nbx.DTypeError, match="requantizing is not supported"):
        Tensor.from_numpy(a, dtype=mgb_dtype("int8", "QuantizedS8", 0.25))


def test_bad_metadata_is_a_metadata_error_naming_the_key():
    a = np.zeros(2, dtype=mgb_dtype("uint8", "Quantized8Asymm", 1.0, 300))
    with pytest.raises(nbx.MetadataError, match="Quantized8Asymm: zero_point 300 is outside"):
        Tensor.from_numpy(a)


@pytest.mark.parametrize("shape", [(20000,), (20001,), (37, 1001), (3, 16392), (1000, 24), (5, 3, 7)])
@pytest.mark.parametrize("base, name, scale, zero_point, lo, hi",
                         [c for c in QUANTIZE_CASES if c[1] in ("QuantizedS4", "Quantized4Asymm", "QuantizedS1")],
                         ids=lambda c: str(c))
def test_packed_quantize_is_right_across_chunks_and_padded_rows(shape, base, name, scale, zero_point, lo, hi):
    """Packed dtypes are quantized a chunk at a time straight into packed storage: every code lands in its place,
    whether rows share bytes or each starts a byte of its own (odd row lengths), across chunk boundaries."""
    dtype = mgb_dtype(base, name, scale, zero_point)
    zp = zero_point or 0
    x = (np.random.default_rng(3).uniform(lo - zp - 2, hi - zp + 2, shape) * scale).astype(np.float32)
    q = (x / np.float32(scale)).astype(np.float64)
    expected = np.clip(np.sign(q) * np.floor(np.abs(q) + 0.5) + zp, lo, hi).astype(np.int64)
    codes = nbx.quantize(x, dtype)
    assert codes.shape == shape
    np.testing.assert_array_equal(codes.astype(np.int64), expected)
