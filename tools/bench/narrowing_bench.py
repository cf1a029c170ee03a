"""Checked narrowing of integers into Float32 (range and exactness) against wrap (numpy's unchecked cast), in
one run: `narrowing_bench.py BAZEL_BIN` (BAZEL_BIN holds examples/npybridge_example.so). ms per 4 Mi-element
conversion, best of 7 x 5; the ratio checked / wrap is what to compare across machines."""
import sys
import timeit

import numpy as np


def main(bazel_bin):
    sys.path.insert(0, bazel_bin + "/examples")
    import npybridge_example as m
    print("| source -> Float32, 4 Mi elements | checked ms | wrap ms | checked / wrap |")
    print("|---|---|---|---|")
    for name in ("int32", "int64", "uint32"):
        a = np.arange(1 << 22, dtype=name)
        ms = {mode: min(timeit.repeat(lambda: m.Tensor.from_numpy(a, dtype="Float32", narrowing=mode), number=5, repeat=7)) / 5 * 1e3
              for mode in ("checked", "wrap")}
        print(f"| {name} | {ms['checked']:.2f} | {ms['wrap']:.2f} | {ms['checked'] / ms['wrap']:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
