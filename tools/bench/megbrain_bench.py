"""ndarray -> mgb::HostTensorND borrow and HostTensorND -> ndarray share, per call, against a do-nothing METH_O
function and the same conversions with npybridge's own tensor, in one run (tools/bench/megbrain_bench_module.cpp).

Usage (tools/bench/run does this when MEGENGINE_SOURCE is set): megbrain_bench.py BAZEL_BIN [RUNS]
BAZEL_BIN holds tools/bench/megbrain_bench_module.so (built with --config=py310 -c opt). Prints one markdown table:
ns per call, best and worst of RUNS runs (each the best of 7 repeats), and ratios to the floor.
"""
import sys
import timeit

import numpy as np

CALLS = 200_000


def best_ns(function, argument):
    timer = timeit.Timer(lambda: function(argument))
    return min(timer.repeat(repeat=7, number=CALLS)) / CALLS * 1e9


def main(bazel_bin, runs=3):
    sys.path.insert(0, bazel_bin + "/tools/bench")
    import megbrain_bench_module as mb
    array = np.arange(1000, dtype=np.float32)
    mb.keep(array)
    rows = [("METH_O function doing nothing (the floor)", mb.noop, array),
            ("ndarray -> npybridge::tensor, borrow", mb.borrow_reference, array),
            ("ndarray -> mgb::HostTensorND, borrow", mb.borrow_host, array),
            ("ndarray -> mgb::HostTensorND, MegEngine's helper's way (no npybridge)", mb.bare_host, array),
            ("npybridge::tensor -> ndarray, share", mb.share_reference, None),
            ("mgb::HostTensorND -> ndarray, share", mb.share_host, None)]
    timings = {label: [] for label, _, _ in rows}
    for _ in range(runs):  # interleaved: each run measures every row once
        for label, function, argument in rows:
            timings[label].append(best_ns(function, argument))
    mb.release()
    floor = min(timings[rows[0][0]])
    print(f"1,000-element float32 array; ns per call, best of 7 x {CALLS} calls; best and worst of {runs} runs")
    print()
    print("| call | best ns | worst ns | best / floor |")
    print("|---|---|---|---|")
    for label, _, _ in rows:
        print(f"| {label} | {min(timings[label]):.0f} | {max(timings[label]):.0f} | {min(timings[label]) / floor:.2f} |")
    best = {label: min(values) for label, values in timings.items()}
    labels = [label for label, _, _ in rows]
    print()
    print(f"HostTensorND / npybridge::tensor: borrow {best[labels[2]] / best[labels[1]]:.2f}x, "
          f"share {best[labels[5]] / best[labels[4]]:.2f}x; npybridge's HostTensorND borrow / the helper's way: "
          f"{best[labels[2]] / best[labels[3]]:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3)
