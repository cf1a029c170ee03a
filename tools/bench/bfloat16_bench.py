"""npybridge's own bfloat16 ufunc loops against ml_dtypes' bfloat16, in one process (NumPy 2).

Usage (tools/bench/run bfloat16_bench does this): bfloat16_bench.py BAZEL_BIN
The example module registers npybridge's own bfloat16 while ml_dtypes is hidden; ml_dtypes is imported after,
so both types live side by side. For each loop: ns per element over 1,000,000 elements, five interleaved
rounds (ours, theirs, ours, ...), best and worst of each; ratio = ours / ml_dtypes' (target <= 1.5).
"""
import sys
import timeit

import numpy as np

N = 1_000_000
ROUNDS = 5
LOOPS = [
    ("add", "np.add(x, y, out=o)"),
    ("multiply", "np.multiply(x, y, out=o)"),
    ("divide", "np.divide(x, y, out=o)"),
    ("maximum", "np.maximum(x, y, out=o)"),
    ("negative", "np.negative(x, out=o)"),
    ("sqrt", "np.sqrt(x, out=o)"),
    ("exp", "np.exp(x, out=o)"),
    ("sin", "np.sin(x, out=o)"),
    ("less", "np.less(x, y, out=b)"),
    ("sum (add.reduce)", "x.sum()"),
]


def main(bazel_bin):
    sys.path.insert(0, f"{bazel_bin}/examples")
    sys.modules["ml_dtypes"] = None
    import npybridge_example as nbx
    del sys.modules["ml_dtypes"]
    import ml_dtypes

    if nbx.register_user_dtypes()["bfloat16_from_ml_dtypes"]:
        sys.exit("bfloat16_bench: the example module took ml_dtypes' bfloat16; nothing to compare")
    rng = np.random.default_rng(0)
    values = rng.uniform(0.5, 4.0, N).astype(np.float32)
    spaces = {}
    for name, kind in (("npybridge", nbx.bfloat16), ("ml_dtypes", ml_dtypes.bfloat16)):
        x = values.astype(kind)
        y = (values[::-1] + 1).astype(kind)
        spaces[name] = {"np": np, "x": x, "y": y, "o": np.empty(N, kind), "b": np.empty(N, np.bool_)}
    print(f"### bfloat16 ufunc loops (NumPy {np.__version__}, ml_dtypes {ml_dtypes.__version__}; "
          f"ns per element, {N:,} elements, best / worst of {ROUNDS} interleaved rounds)\n")
    print("| loop | npybridge | ml_dtypes | ratio best (worst) |")
    print("|---|---|---|---|")
    for label, statement in LOOPS:
        times = {name: [] for name in spaces}
        for _ in range(ROUNDS):
            for name, space in spaces.items():
                times[name].append(min(timeit.Timer(statement, globals=space).repeat(repeat=3, number=3)) / 3 / N * 1e9)
        ours, theirs = times["npybridge"], times["ml_dtypes"]
        print(f"| {label} | {min(ours):.2f}–{max(ours):.2f} | {min(theirs):.2f}–{max(theirs):.2f} | "
              f"{min(ours) / min(theirs):.2f} ({max(ours) / max(theirs):.2f}) |")


if __name__ == "__main__":
    main(sys.argv[1])
