"""throughput_bench's rows timed for two builds of the example module, A/B: `throughput_ab.py OLD_DIR NEW_DIR
[--rounds R] [--calls C] [--only 'name;name']` (each DIR holds an npybridge_example.so, e.g. bazel-bin/examples of
two work trees). Each round runs one fresh process per side, the older first in odd rounds; each process times every
row's npybridge call C times and keeps its best. Prints, per row, each side's best over the rounds, the ratio of the
bests (NEW / OLD: below 1 is faster) and the range of the per-round ratios (the spread a shared machine gives)."""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def one_side(module_dir, calls, only):
    """In a fresh process: {row: best seconds} for the module in module_dir."""
    sys.path[:0] = [module_dir, HERE]
    import importlib
    nbx = importlib.import_module("npybridge_example")
    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    import throughput_bench
    best = {}
    for name, _source, ours, _peer, _peer_name in throughput_bench.rows(nbx, 16 << 20, ml_dtypes):
        if only and not any(part in name for part in only.split(";")):
            continue
        ours()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            ours()
            times.append(time.perf_counter() - start)
        best[name] = min(times)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=7)
    parser.add_argument("--only", default="")
    parser.add_argument("--side", help=argparse.SUPPRESS)  # internal: one side's process
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(one_side(args.side, args.calls, args.only)))
        return 0
    runs = {"old": [], "new": []}
    for r in range(args.rounds):
        for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
            out = subprocess.run([sys.executable, __file__, args.old, args.new, "--calls", str(args.calls), "--only",
                                  args.only, "--side", getattr(args, side)], check=True, capture_output=True,
                                 text=True).stdout
            runs[side].append(json.loads(out.strip().splitlines()[-1]))
    print("| row | old ms | new ms | ratio of the bests | per-round ratios |\n|---|---|---|---|---|")
    for name in runs["old"][0]:
        old = min(run[name] for run in runs["old"])
        new = min(run[name] for run in runs["new"])
        per_round = [n[name] / o[name] for o, n in zip(runs["old"], runs["new"])]
        print(f"| {name} | {old * 1e3:.2f} | {new * 1e3:.2f} | {new / old:.3f} | "
              f"{min(per_round):.2f}-{max(per_round):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
