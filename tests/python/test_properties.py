"""Hypothesis: random round trips over dtypes, shapes, strides, policies and layouts."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from conftest import mgb_dtype, nbx

Tensor = nbx.Tensor

PLAIN = ["bool", "int8", "uint8", "int16", "uint16", "int32", "float16", "float32", "complex64"]


@st.composite
def strided_views(draw):
    dtype = np.dtype(draw(st.sampled_from(PLAIN)))
    base = draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6),
                           elements=hnp.from_dtype(dtype, allow_nan=False)))
    view = base
    if view.ndim:
        slices = tuple(slice(None, None, draw(st.sampled_from([1, 2, -1, -2]))) for _ in range(view.ndim))
        view = view[slices]
        view = view.transpose(draw(st.permutations(range(view.ndim))))
    return view


@settings(max_examples=300, deadline=None)
@given(view=strided_views(), policy=st.sampled_from(["try_borrow", "must_borrow", "copy"]),
       share=st.sampled_from(["try_share", "must_share", "copy"]))
def test_plain_arrays_round_trip_under_every_policy(view, policy, share):
    t = Tensor.from_numpy(view, policy=policy)
    assert t.borrowed == (policy != "copy")
    assert t.shape == view.shape
    back = t.numpy(policy=share)
    assert back.dtype == view.dtype
    np.testing.assert_array_equal(back, view)
    if t.borrowed and share != "copy" and view.size:
        assert back.__array_interface__["data"][0] == view.__array_interface__["data"][0]


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


PACKED = {
    "IntB1": list(range(-1, 2, 2)),
    "IntB2": list(range(-3, 4, 2)),
    "IntB4": list(range(-15, 16, 2)),
}


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["IntB1", "IntB2", "IntB4", "QuantizedS4", "Quantized4Asymm"]),
       layout=st.sampled_from([None, "compact", "aligned"]),
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
    aligned = layout == "aligned" or (layout is None and kind.startswith("Quantized"))
    rows = values.size // shape[-1]
    expected = rows * ((shape[-1] * bits + 7) // 8) if aligned else (values.size * bits + 7) // 8
    assert len(t.storage()) == expected
    np.testing.assert_array_equal(t.numpy(), values)
    again = Tensor.from_storage(t.storage(), t.dtype_name, t.shape, scale=t.scale, zero_point=t.zero_point,
                                layout="aligned" if aligned else "compact")
    np.testing.assert_array_equal(again.numpy(), values)
