"""DLPack round trip: np.from_dlpack(tensor) + Tensor.from_dlpack(array) against NumPy's own np.from_dlpack(array).

Usage (tools/bench/run dlpack_bench does this): dlpack_bench.py BAZEL_BIN
Both sides share memory (no copy); 1,000-element float32, best of 7 runs, ns per call.
"""
import sys
import timeit

import numpy as np


def best_ns(statement, namespace, number=200_000):
    return min(timeit.Timer(statement, globals=namespace).repeat(repeat=7, number=number)) / number * 1e9


def main(bazel_bin):
    sys.path.insert(0, f"{bazel_bin}/examples")
    import npybridge_example as nbx

    a = np.arange(1000, dtype=np.float32)
    t = nbx.Tensor.from_numpy(a)
    namespace = {"np": np, "a": a, "t": t, "Tensor": nbx.Tensor}
    rows = [
        ("np.from_dlpack(a) (NumPy's own, the yardstick)", "np.from_dlpack(a)"),
        ("np.from_dlpack(t) (npybridge exports)", "np.from_dlpack(t)"),
        ("Tensor.from_dlpack(a) (npybridge imports)", "Tensor.from_dlpack(a)"),
        ("Tensor.from_dlpack(np.from_dlpack(t)) (round trip)", "Tensor.from_dlpack(np.from_dlpack(t))"),
        ("np.from_dlpack(np.from_dlpack(a)) (NumPy's own round trip)", "np.from_dlpack(np.from_dlpack(a))"),
        ("Tensor.from_numpy(a) (for scale)", "Tensor.from_numpy(a)"),
    ]
    times = {label: best_ns(statement, namespace) for label, statement in rows}
    print(f"### DLPack (NumPy {np.__version__}; ns per call, best of 7)\n")
    print("| call | ns |")
    print("|---|---|")
    for label, value in times.items():
        print(f"| {label} | {value:.0f} |")
    print("\n| ratio | value |")
    print("|---|---|")
    yardstick = times[rows[0][0]]
    print(f"| round trip / np.from_dlpack(a) (target <= 1.5) | {times[rows[3][0]] / yardstick:.2f} |")
    print(f"| round trip / NumPy's own round trip | {times[rows[3][0]] / times[rows[4][0]]:.2f} |")
    print(f"| npybridge export (np.from_dlpack(t)) / np.from_dlpack(a) | {times[rows[1][0]] / yardstick:.2f} |")
    print(f"| npybridge import (Tensor.from_dlpack(a)) / np.from_dlpack(a) | {times[rows[2][0]] / yardstick:.2f} |")
    # Each half against NumPy's one-way np.from_dlpack of an ndarray, three runs interleaved: best and worst.
    halves = {"export": [], "import": []}
    for _ in range(3):
        run_yardstick = best_ns(rows[0][1], namespace)
        halves["export"].append(best_ns(rows[1][1], namespace) / run_yardstick)
        halves["import"].append(best_ns(rows[2][1], namespace) / run_yardstick)
    print("\n| each half / np.from_dlpack(a), 3 runs | best | worst | target |")
    print("|---|---|---|---|")
    print(f"| export: np.from_dlpack(t) | {min(halves['export']):.2f} | {max(halves['export']):.2f} | <= 1.3 |")
    print(f"| import: Tensor.from_dlpack(a) | {min(halves['import']):.2f} | {max(halves['import']):.2f} | <= 1.3 |")
    print()


if __name__ == "__main__":
    main(sys.argv[1])
