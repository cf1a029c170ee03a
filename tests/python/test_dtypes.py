"""Dtypes: the table, dtype arguments, NumPy's dtypes with and without a tensor dtype, metadata caching (docs/dtypes.md).
"""
import numpy as np
import pytest
from hypothesis import strategies as st

from conftest import mgb_dtype, nbx


Tensor = nbx.Tensor


@pytest.mark.hardening
def test_names_with_a_nul_inside_are_not_cut_short():
    with pytest.raises(nbx.DTypeError, match=r"Float32\\x00junk"):
        Tensor.from_storage(b"\0" * 4, "Float32\x00junk", (1,))
    with pytest.raises(nbx.DTypeError, match=r"Float32\\x00junk"):
        Tensor.from_numpy(np.zeros(1, np.float32), dtype="Float32\x00junk")
    with pytest.raises(nbx.MetadataError, match=r"QuantizedS8\\x00junk"):
        Tensor.from_numpy(np.zeros(1, mgb_dtype("i1", "QuantizedS8\x00junk", 1.0)))
    with pytest.raises(nbx.MetadataError, match=r"unexpected key 'scale\\x00'"):
        Tensor.from_numpy(np.zeros(1, np.dtype("i1", metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 1.0,
                                                                          "scale\x00": 2.0}})))


@pytest.mark.hardening
def test_changing_a_handed_out_dtypes_metadata_does_not_reach_later_tensors():
    made = Tensor.from_storage(b"\1", "QuantizedS8", (1,), scale=0.25).numpy().dtype
    made.metadata["mgb_dtype"]["scale"] = 99
    later = Tensor.from_storage(b"\1", "QuantizedS8", (1,), scale=0.25).numpy().dtype
    assert later.metadata["mgb_dtype"] == {"name": "QuantizedS8", "scale": 0.25}
    assert Tensor.from_storage(b"\1", "QuantizedS8", (1,), scale=0.25).scale == 0.25


@pytest.mark.hardening
def test_a_dtype_whose_metadata_changed_is_read_again():
    fields = {"name": "QuantizedS8", "scale": 1.0}
    array = np.zeros(2, np.dtype("i1", metadata={"mgb_dtype": fields}))
    assert Tensor.from_numpy(array).scale == 1.0
    fields["scale"] = 2.0
    assert Tensor.from_numpy(array).scale == 2.0
    fields["name"] = "QuantizedS16"
    with pytest.raises(nbx.MetadataError, match="QuantizedS16 is stored as numpy int16, not as numpy int8"):
        Tensor.from_numpy(array)
    fields["name"] = "QuantizedS8"
    fields["zero_point"] = 3
    with pytest.raises(nbx.MetadataError, match="unexpected key 'zero_point'"):
        Tensor.from_numpy(array)
    del fields["zero_point"]
    assert Tensor.from_numpy(array).scale == 2.0


@pytest.mark.guarantee
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


@pytest.mark.guarantee
def test_uintb4_has_no_numpy_form_but_is_made_from_numbers_by_name():
    t = Tensor.from_numpy(np.array([1, 3, -5], np.int8), dtype="UintB4")
    assert t.storage() == Tensor.from_numpy(np.array([1, 3, -5], np.int8), dtype="IntB4").storage()
    with pytest.raises(nbx.DTypeError, match="UintB4 has no numpy form"):
        t.numpy()


@pytest.mark.parametrize("dtype", ["uint32", "uint64", "complex128", "U2", "S3", "O", [("a", "i4"), ("b", "f4")]])
def test_numpy_dtypes_without_a_tensor_dtype_are_named(dtype):
    a = np.zeros((2, 4), dtype=dtype)[:, ::2]  # strided: odd itemsizes (S3) reach the layout pass too
    with pytest.raises(nbx.DTypeError) as error:
        Tensor.from_numpy(a)
    assert str(a.dtype) in str(error.value) or "structured" in str(error.value)


def test_dtype_argument_accepts_names_numpy_types_and_strings():
    a = np.arange(3, dtype=np.uint8)
    for dtype in ("Uint8", np.uint8, "uint8", np.dtype("u1")):
        t = Tensor.from_numpy(a, dtype=dtype)
        assert t.dtype_name == "Uint8" and t.borrowed
    with pytest.raises(nbx.DTypeError, match="QuantizedS8 needs its params"):
        Tensor.from_numpy(a, dtype="QuantizedS8")
    with pytest.raises(nbx.DTypeError, match="not a numpy dtype"):
        Tensor.from_numpy(a, dtype="no such dtype")


def test_dtype_table_lists_every_dtype():
    table = nbx.dtype_table()
    assert len(table) == 22
    by_name = {row["name"]: row for row in table}
    assert by_name["QuantizedS4"] == {"name": "QuantizedS4", "enum": 100004, "bits": 4, "category": "quantized",
                                      "packed": True, "numpy": "int8"}
    assert by_name["Byte"]["numpy"] is None and by_name["UintB4"]["numpy"] is None
    assert by_name["Float16"]["numpy"] == "float16"
