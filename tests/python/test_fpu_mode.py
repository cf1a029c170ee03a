"""Every conversion npybridge does gives the same bits, and the same errors, whatever the thread's FPU mode.

`import megengine` turns on flush-to-zero and denormals-are-zero for the whole process (conftest.flush_to_zero
does the same here). npybridge clears both around its own loops and the NumPy casts it calls, so subnormal
values, scales and products survive. Each property builds its inputs with the mode off (NumPy's own casts
would flush them), converts them with the mode off and on, and compares.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import flush_to_zero, mgb_dtype, nbx


Tensor = nbx.Tensor


# Values around and below the smallest normal float32 / float16 / bfloat16, and ordinary ones.
TINY = st.one_of(
    st.floats(min_value=-2e-38, max_value=2e-38, allow_subnormal=True),
    st.floats(min_value=-1e-4, max_value=1e-4),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([1e-40, -2.5e-39, 1.1754942e-38, 5e-324, -1e-45, 6e-8, -5.9e-8, 0.0, -0.0]),
)


TARGETS = ["Float32", "Float16", "BFloat16", "Complex64", "Float64"]


def outcome(action):
    """What a conversion gives: its bytes, or its error's type and message."""
    try:
        return ("ok", action())
    except Exception as error:  # noqa: BLE001: the type and message are what is compared
        return (type(error).__name__, str(error))


def both_modes(action):
    plain = outcome(action)
    with flush_to_zero():
        flushed = outcome(action)
    assert flushed == plain
    return plain


def convert(array, target, narrowing):
    if target == "Float64":  # a float64 array stays what it is; other sources are refused by name
        return lambda: Tensor.from_numpy(array, narrowing=narrowing).storage()
    return lambda: Tensor.from_numpy(array, dtype=target, narrowing=narrowing).storage()


@settings(max_examples=150, deadline=None)
@given(st.lists(TINY, min_size=1, max_size=12), st.sampled_from(["float64", "float32", "complex128", "complex64"]),
       st.sampled_from(TARGETS), st.sampled_from(["checked", "wrap"]))
def test_conversions_give_the_same_bits_and_errors_with_flush_to_zero_on(values, source, target, narrowing):
    with np.errstate(all="ignore"):
        array = np.array(values, np.float64).astype(source)
        if source.startswith("complex"):
            array = array + 1j * array[::-1].real
    both_modes(convert(array, target, narrowing))


@settings(max_examples=80, deadline=None)
@given(st.lists(TINY, min_size=1, max_size=12), st.sampled_from(["Float32", "Float16", "BFloat16"]))
def test_copy_into_an_existing_tensor_gives_the_same_bits_with_flush_to_zero_on(values, target):
    array = np.array(values, np.float64)

    def fill():
        t = Tensor.from_numpy(np.zeros(array.shape, np.float32), dtype=target, narrowing="wrap")
        t.copy_from(array, narrowing="wrap")
        return t.storage()

    both_modes(fill)


def test_the_issues_values_keep_their_subnormals_with_flush_to_zero_on():
    array = np.array([1e-40, -2.5e-39, 1.1754942e-38])
    plain = both_modes(lambda: Tensor.from_numpy(array).storage())
    assert np.frombuffer(plain[1], np.float32).tolist() == array.astype(np.float32).tolist()
    assert np.frombuffer(plain[1], np.float32)[0] != 0
    complex_values = array.astype(np.complex128) * (1 - 1j)
    plain = both_modes(lambda: Tensor.from_numpy(complex_values, dtype="Complex64").storage())
    assert np.frombuffer(plain[1], np.complex64).tolist() == complex_values.astype(np.complex64).tolist()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(width=32, allow_subnormal=True, allow_nan=True, allow_infinity=True), min_size=1,
                max_size=12),
       st.sampled_from([1e-40, 3e-39, 0.5, 2.0 ** -126, 1e-45]))
def test_quantize_and_dequantize_give_the_same_codes_and_values_with_flush_to_zero_on(values, scale):
    floats = np.array(values, np.float32)
    dtype = mgb_dtype(np.int8, "QuantizedS8", scale)
    codes = both_modes(lambda: nbx.quantize(floats, dtype).tobytes())
    assert codes[0] == "ok"
    coded = np.frombuffer(codes[1], np.int8).astype(dtype)
    both_modes(lambda: nbx.dequantize(coded).tobytes())


def test_a_subnormal_scale_quantizes_as_ieee_says_with_flush_to_zero_on():
    dtype = mgb_dtype(np.int8, "QuantizedS8", 1e-40)
    floats, coded = np.array([2e-40, -3e-39], np.float32), np.array([3, -100], np.int8).astype(dtype)
    with flush_to_zero():
        codes = nbx.quantize(floats, dtype)
        back = nbx.dequantize(coded)
    assert codes.view(np.int8).tolist() == [2, -30]
    assert back.tolist() == (np.array([3, -100], np.float32) * np.float32(1e-40)).tolist()
    assert back[0] != 0


bf = np.dtype(nbx.bfloat16)


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


@pytest.mark.guarantee
def test_bfloat16_conversions_give_the_same_bits_with_flush_to_zero_on():
    plain = _conversions()
    with flush_to_zero():
        flushed = _conversions()
    for name in plain:
        assert flushed[name] == plain[name], name
    # and the subnormals are really there (MegEngine gives 0x00010000 / 0x807F0000)
    assert np.frombuffer(plain["bf16 -> Float32"], np.uint32)[[0x0001, 0x807F]].tolist() == [0x00010000, 0x807F0000]


@pytest.mark.guarantee
def test_own_intb_casts_give_the_same_values_with_flush_to_zero_on():
    ib4 = np.dtype(nbx.intb4)
    values = np.arange(-15, 16, 2, dtype=np.int8)
    plain = [values.astype(ib4).astype(t).tobytes() for t in (np.float32, np.float64, np.int8, np.float16)]
    with flush_to_zero():
        flushed = [values.astype(ib4).astype(t).tobytes() for t in (np.float32, np.float64, np.int8, np.float16)]
    assert flushed == plain


@pytest.mark.guarantee
@pytest.mark.parametrize("mode", ["default", "flush_to_zero"])
def test_tiny_scales_are_judged_the_same_in_every_fpu_mode(mode):
    import contextlib
    want = float(np.float32(1e-40))  # a float32 subnormal, read before the mode is on
    with (flush_to_zero() if mode == "flush_to_zero" else contextlib.nullcontext()):
        t = Tensor.from_numpy(np.zeros(2, mgb_dtype("int8", "QuantizedS8", 1e-40)))
        assert t.numpy().dtype.metadata["mgb_dtype"]["scale"] == want
        with pytest.raises(nbx.MetadataError, match=r"scale 1e-46 is too small .* smallest positive one is 1\.4\d*e-45"):
            Tensor.from_numpy(np.zeros(2, mgb_dtype("int8", "QuantizedS8", 1e-46)))
