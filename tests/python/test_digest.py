"""The same bits on every machine: a fixed corpus of conversions, digested and compared with kernel_digest.json.

Every conversion of the corpus (source dtype x target x value check x layout, over values that fit and values at
the edges) gives its tensor's bytes or its error; each target's outcomes are hashed, and the hashes must equal the
ones kept in kernel_digest.json. The same file is checked by every suite: x86-64 at this CPU's SIMD level (the
levels agree: test_dispatch), GCC and Clang, NumPy 1 and 2, AddressSanitizer, and AArch64 under emulation
(tools/aarch64). The arrays are small but for one layout, a (128, 1100) transposed view: past 1 MiB from 8-byte
sources (the GIL released), and the transposing kernels' shapes. Races are test_races'. Where NumPy
defines the answer on every machine (values that fit, into NumPy's own types), the bytes are also NumPy's on the
machine at hand.

`python3 test_digest.py --write` (with the example module importable) writes the file after a deliberate change
of what a conversion gives; the change then shows in git's diff of the file.
"""
import functools
import hashlib
import json
import pathlib
import sys
import warnings

import numpy as np
import pytest

from conftest import mgb_dtype, nbx

DIGEST_FILE = pathlib.Path(__file__).with_name("kernel_digest.json")
SOURCES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool", "complex128"]
TARGETS = {name: name for name in ["Float32", "Float16", "BFloat16", "Int32", "Int16", "Int8", "Uint8", "IntB4",
                                   "IntB2", "Complex64"]}
TARGETS["QuantizedS8"] = mgb_dtype("int8", "QuantizedS8", 0.25)
TARGETS["Quantized8Asymm"] = mgb_dtype("uint8", "Quantized8Asymm", 0.5, 128)
TARGETS["QuantizedS4"] = mgb_dtype("int8", "QuantizedS4", 0.5)
NUMPY_TYPES = {"Float32": np.float32, "Float16": np.float16, "Int32": np.int32, "Int16": np.int16, "Int8": np.int8,
               "Uint8": np.uint8, "Complex64": np.complex64}
UNSIGNED = {"Uint8", "Quantized8Asymm"}
# (the base array's shape, the view): long rows reach the kernels' vector loops; the 2-D views their strided
# paths, and the wide one the transposing kernels (64+ rows of 1024+ values).
LAYOUTS = {
    "contiguous": ((48, 80), lambda a: a),
    "reversed": ((48, 80), lambda a: a[::-1, ::-1]),
    "transposed": ((48, 80), lambda a: a.T),
    "every third column": ((48, 80), lambda a: a[:, ::3]),
    "wide, transposed": ((1100, 128), lambda a: a.T),
}


@functools.lru_cache(maxsize=None)  # made once, read by every target's conversions
def corpus(source, fit, shape):
    """An array of `source`: values every target holds (small whole numbers and halves) or the edges."""
    rng = np.random.default_rng([SOURCES.index(source), fit])
    if fit:
        values = rng.integers(-6, 7, shape) / np.where(rng.random(shape) < 0.3, 2.0, 1.0)
        values = np.abs(values) if source in ("uint8", "bool") else values
        return values.astype(source) if source != "bool" else values != 0
    if source == "bool":
        return rng.random(shape) < 0.5
    info = np.finfo(source) if np.dtype(source).kind in "fc" else np.iinfo(source)
    edges = np.array([0, -0.0, 1, -1, 127.5, 128, -129, 255.5, 65504, 65520, 3e38, 1e-8, 6e-8, 2.0 ** -133,
                      2 ** 24 + 1, 2 ** 31, -(2 ** 31) - 1, float(info.max), float(info.min)])
    with np.errstate(all="ignore"):
        picked = rng.choice(edges, shape) * np.where(rng.random(shape) < 0.5, 1, rng.random(shape) * 4)
        if np.dtype(source).kind in "iu":
            return np.clip(picked, info.min, info.max).astype(source)
        return picked.astype(source)


COMPLEX_WARNING = getattr(np, "exceptions", np).ComplexWarning


def outcome(array, target, narrowing):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", COMPLEX_WARNING)  # wrap from complex drops the imaginary part
            return nbx.Tensor.from_numpy(array, dtype=TARGETS[target], narrowing=narrowing).storage()
    except Exception as error:  # noqa: BLE001: its type and message are what is digested
        return f"{type(error).__name__}: {error}".encode()


def conversions(target):
    """Every conversion of the corpus into `target`: (what it is, source array, narrowing, outcome)."""
    for source in SOURCES:
        for fit in (True, False):
            bases = {shape: corpus(source, fit, shape) for shape, _ in LAYOUTS.values()}
            for layout, (shape, view) in LAYOUTS.items():
                base = bases[shape]
                # wrap is NumPy's unsafe cast, which leaves out-of-range floats to the machine (and on AArch64 to
                # the layout): values the target holds only
                for narrowing in ("checked", "wrap") if fit else ("checked",):
                    array = view(np.abs(base) if narrowing == "wrap" and target in UNSIGNED else base)
                    yield f"{source} {layout} {'fit' if fit else 'edges'} {narrowing}", array, narrowing, \
                        outcome(array, target, narrowing)


def digest(target, each=lambda what, array, narrowing, result: None):
    """The SHA-256 of every conversion into `target`, calling `each` on each."""
    h = hashlib.sha256()
    for what, array, narrowing, result in conversions(target):
        each(what, array, narrowing, result)
        h.update(what.encode() + b"\0" + result + b"\0")
    return h.hexdigest()


@pytest.mark.guarantee
@pytest.mark.parametrize("target", list(TARGETS))
def test_every_machine_converts_the_corpus_to_the_same_bytes(target):
    def numpy_agrees(what, array, narrowing, result):
        if target in NUMPY_TYPES and narrowing == "wrap":  # (wrap: the fit values only, see conversions)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", COMPLEX_WARNING)
                expected = array.astype(NUMPY_TYPES[target]).tobytes()
            assert result == expected, f"{what} into {target}: not NumPy's bytes"

    assert digest(target, numpy_agrees) == json.loads(DIGEST_FILE.read_text())[target], \
        f"{target}: the bytes differ from kernel_digest.json's (another machine's or an earlier build's)"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    DIGEST_FILE.write_text(json.dumps({target: digest(target) for target in TARGETS}, indent=1) + "\n")
