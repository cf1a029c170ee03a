"""How three quantize rules round float32 values near a code's midpoint: npybridge's `quantize` (MegDNN's
`dtype::QuantizedS8::quantize`: x / scale in float32, half away from zero), MegEngine's `Tensor.astype(qint8(s))`
(MegDNN's CPU TypeCvt kernel) and MegEngine's Python `convert_to_qint8` (np.round(x / s) in float64, half to even).

Run with the py310 venv (MegEngine 1.13) and the example module built for it:
    PYTHONPATH=bazel-out/k8-fastbuildpy310/bin/examples .venv/py310/bin/python3 tools/bench/quantize_ties.py
Prints a markdown table: per scale, how many of N values each pair of rules quantizes differently.
"""
import sys

import numpy as np

import megengine
from megengine.core.tensor import dtype as D
import npybridge_example as npybridge

N = 200_000
SCALES = [0.1, 0.3, 1 / 3, 0.05, 0.5, 0.007]


def near_ties(scale, rng):
    """float32 values within 3 ulps of (k + 0.5) * scale, k in [-120, 120)."""
    k = rng.integers(-120, 120, N)
    middle = ((k + 0.5) * scale).astype(np.float32)
    return (middle.view(np.int32) + rng.integers(-3, 4, N).astype(np.int32)).view(np.float32)


def away_from_zero(values):
    return np.sign(values) * np.floor(np.abs(values) + 0.5)


def main():
    rng = np.random.default_rng(1)
    print(f"Values quantized differently, of {N:,} near ties per scale:\n")
    print("| scale | npybridge / x / s, half away (float32) | npybridge / Tensor.astype | npybridge / convert_to_qint8 "
          "| Tensor.astype / convert_to_qint8 |")
    print("|---|---|---|---|---|")
    for scale in SCALES:
        dtype = D.qint8(scale)
        values = near_ties(scale, rng)
        ours = np.asarray(npybridge.quantize(values, dtype)).view(np.int8)
        rule = np.clip(away_from_zero((values / np.float32(scale)).astype(np.float64)), -128, 127).astype(np.int8)
        kernel = megengine.Tensor(values).astype(dtype).numpy().view(np.int8)
        python = D.convert_to_qint8(values, dtype).view(np.int8)
        differ = [np.count_nonzero(a != b) for a, b in ((ours, rule), (ours, kernel), (ours, python), (kernel, python))]
        print(f"| {scale:.6g} | " + " | ".join(f"{d:,}" for d in differ) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
