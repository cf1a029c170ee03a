"""Packed low-bit tensors: packing on the way in, unpacking on the way out, both layouts (docs/lowbit.md).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from conftest import mgb_dtype, nbx


Tensor = nbx.Tensor


PACKED = {
    "IntB1": list(range(-1, 2, 2)),
    "IntB2": list(range(-3, 4, 2)),
    "IntB4": list(range(-15, 16, 2)),
}


@pytest.mark.hardening
@pytest.mark.parametrize("target", ["IntB4", "IntB1", "QuantizedS4"])
@pytest.mark.parametrize("value, numpy_type", [
    (2**64 - 1, np.uint64), (2**63, np.uint64), (2**32 + 1, np.uint64), (-(2**63), np.int64), (255, np.uint8),
    (2**31 + 1, np.uint32),
])
def test_wide_integers_never_wrap_into_low_bit_codes(target, value, numpy_type):
    values = np.array([1, value], numpy_type)
    kwargs = {"scale": 1.0} if target.startswith("Quantized") else {}
    with pytest.raises(nbx.ValueRangeError, match=f"value {value} at index \\(1,\\)"):
        Tensor.from_numpy(values, dtype=target, **kwargs) if not kwargs else \
            Tensor.from_numpy(values, dtype=mgb_dtype("i1", target, 1.0))


@pytest.mark.hardening
def test_uint64_values_that_fit_still_pack():
    assert Tensor.from_numpy(np.array([1, 3, 2**0], np.uint64), dtype="IntB4").numpy().tolist() == [1, 3, 1]


@pytest.mark.guarantee
@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["IntB1", "IntB2", "IntB4", "QuantizedS4", "Quantized4Asymm"]),
       layout=st.sampled_from([None, "compact", "row_aligned"]),
       shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9), data=st.data())
def test_packed_tensors_round_trip_in_both_layouts(kind, layout, shape, data):
    if kind in PACKED:
        values = data.draw(hnp.arrays(np.int8, shape, elements=st.sampled_from(PACKED[kind])))
        dtype = kind
    elif kind == "QuantizedS4":
        dtype = mgb_dtype("int8", "QuantizedS4", 0.5)
        values = data.draw(hnp.arrays(np.int8, shape, elements=st.integers(-8, 7))).astype(dtype)
    else:
        dtype = mgb_dtype("uint8", "Quantized4Asymm", 0.5, 3)
        values = data.draw(hnp.arrays(np.uint8, shape, elements=st.integers(0, 15))).astype(dtype)
    t = Tensor.from_numpy(values, dtype=dtype, layout=layout)
    bits = {"IntB1": 1, "IntB2": 2}.get(kind, 4)
    aligned = layout == "row_aligned" or (layout is None and kind.startswith("Quantized"))
    rows = values.size // shape[-1]
    expected = rows * ((shape[-1] * bits + 7) // 8) if aligned else (values.size * bits + 7) // 8
    assert len(t.storage()) == expected
    np.testing.assert_array_equal(t.numpy(), values)
    again = Tensor.from_storage(t.storage(), t.dtype_name, t.shape, scale=t.scale, zero_point=t.zero_point,
                                layout="row_aligned" if aligned else "compact")
    np.testing.assert_array_equal(again.numpy(), values)


def test_int4_tensor_packs_on_the_way_in_and_unpacks_on_the_way_out():
    qs4 = mgb_dtype("int8", "QuantizedS4", 0.5)
    a = np.array([[-8, -7, 7], [0, 1, -1], [3, 2, 1]], dtype=qs4)
    t = Tensor.from_numpy(a)
    assert t.dtype_name == "QuantizedS4" and not t.borrowed and "packed" in t.copy_reason
    assert t.storage() == bytes([0x98, 0x07, 0x10, 0x0F, 0x23, 0x01])  # row-aligned: 2 bytes per row of 3
    back = t.numpy()
    assert back.dtype.metadata["mgb_dtype"]["name"] == "QuantizedS4"
    np.testing.assert_array_equal(back, a)
    compact = Tensor.from_numpy(a, layout="compact")
    assert len(compact.storage()) == 5
    np.testing.assert_array_equal(compact.numpy(), a)


def test_from_storage_reads_packed_bytes():
    t = Tensor.from_storage(bytes([0xE4, 0x1B]), "IntB2", (7,))
    np.testing.assert_array_equal(t.numpy(), [-3, -1, 1, 3, 3, 1, -1])
    q = Tensor.from_storage(bytes(18), "QuantizedS4", (3, 3, 3), scale=0.25)
    assert q.shape == (3, 3, 3) and q.scale == 0.25
    with pytest.raises(nbx.ConversionError, match="takes 18 bytes, got 14"):
        Tensor.from_storage(bytes(14), "QuantizedS4", (3, 3, 3), scale=0.25)
    with pytest.raises(nbx.MetadataError, match="zero_point is missing"):
        Tensor.from_storage(bytes(2), "Quantized4Asymm", (3,), scale=1.0)


def test_packed_values_outside_the_set_are_named_by_index():
    with pytest.raises(nbx.ValueRangeError, match=r"IntB2: value 2 at index \(1, 0\)"):
        Tensor.from_numpy(np.array([[1, 3], [2, -1]], dtype=np.int8), dtype="IntB2")
    with pytest.raises(nbx.ValueRangeError, match=r"IntB4: value 300 at index \(2,\)"):
        Tensor.from_numpy([1, 3, 300], dtype="IntB4")
    assert Tensor.from_numpy([1.0, 3.0], dtype="IntB4").numpy().tolist() == [1, 3]  # whole floats are codes
    with pytest.raises(nbx.ValueRangeError, match=r"IntB4: value 1\.5 at index \(1,\) is not valid"):
        Tensor.from_numpy([1.0, 1.5], dtype="IntB4")
    with pytest.raises(nbx.DTypeError, match="IntB4 takes integer values, got numpy float64"):
        Tensor.from_numpy([1.0, 3.0], dtype="IntB4", narrowing="wrap")


def test_packed_tensors_cannot_be_shared():
    t = Tensor.from_numpy(np.array([1, -1], dtype=np.int8), dtype="IntB1")
    with pytest.raises(nbx.ConversionError, match="must_share: IntB1 is packed"):
        t.numpy(policy="must_share")
    np.testing.assert_array_equal(t.numpy(), [1, -1])
    np.testing.assert_array_equal(t.numpy(policy="copy"), [1, -1])
