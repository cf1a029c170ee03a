"""The quickstart runs and shows what it promises (README: examples that run)."""
import contextlib
import io
import os
import pathlib
import runpy


def test_quickstart_tells_its_story():
    root = pathlib.Path(os.environ.get("TEST_SRCDIR", ".")) / "npybridge"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(root / "examples" / "quickstart.py"), run_name="__main__")
    text = out.getvalue()
    assert "same memory = True" in text
    assert "write through the array, read through the tensor: 42.0" in text
    assert "reason: dtype: int64 must be narrowed to Int32" in text
    assert "policy='must_borrow' refuses instead" in text and "byte order" in text
    assert "'scale': 0.05000000074505806" in text
    assert "6 values in 4 bytes: f8 07 21 03" in text
    assert "unpacked again: [[-8, -1, 7], [1, 2, 3]]" in text
    assert "value 1099511627776 at index (1, 1)" in text
    assert "IntB4: value 6 at index (3,)" in text
    assert "zero_point 300 is outside [0, 255]" in text
