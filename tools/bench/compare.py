"""A/B benchmark of the work tree against any commit: the step before a performance claim and after any change
to the conversion paths (CONTRIBUTING.md). One timing on a shared machine moves ±20-40%; a side by side run in
alternating processes, each metric a ratio to a baseline measured in the same process, shows a 10% change.

Usage (tools/bench/compare runs this with the numpy2 venv):
    compare.py REV [BENCH ...] [--rounds N]
BENCH: python_bench (default), copy_bench, lowbit_bench, dtype_bench, dlpack_bench, narrowing_bench.

REV is built in a git worktree of its own (~/.cache/npybridge/compare/<commit>, its own Bazel output base, the
work tree's venvs: the same interpreter, NumPy and flags, -c opt); the work tree in the usual output base. Then
the benches run alternately, REV first in odd rounds and the work tree first in even ones, each in a fresh
process, and each metric is printed as the spread (best-worst over rounds) of its ratio on both sides, with the
change of the best ratios. A metric whose worse-of-both-sides ranges do not overlap is flagged: "slower" or
"faster". The benches' own code (what is timed and how) is always the work tree's, pointed at each side's
build, so both sides run the same measurement.
"""
import json
import os
import pathlib
import subprocess
import sys
import timeit

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CACHE = pathlib.Path(os.environ.get("NPYBRIDGE_CACHE", pathlib.Path.home() / ".cache" / "npybridge")) / "compare"
PYTHON_BENCHES = {"python_bench": "//tools/bench:npybridge_bench.so", "dlpack_bench": "//examples:npybridge_example.so",
                  "narrowing_bench": "//examples:npybridge_example.so"}
CPP_BENCHES = ("copy_bench", "lowbit_bench", "dtype_bench")
BAZEL_FLAGS = ["-c", "opt", "--color=no", "--curses=no"]


def run(command, cwd, **kwargs):
    return subprocess.run(command, cwd=cwd, check=True, text=True, **kwargs)


def bazel(tree, output_base, *args, capture=False):
    """bazel in `tree` (the work tree through tools/bazelw, which keeps its venvs; a REV tree directly, with the
    work tree's venvs linked in: its own tools/bazelw would remake them to REV's pins)."""
    if output_base is None:
        command = [str(ROOT / "tools" / "bazelw"), *args]
    else:
        command = ["bazel", f"--output_base={output_base}", *args]
    done = subprocess.run(command, cwd=tree, check=True, text=True,
                          stdout=subprocess.PIPE if capture else sys.stderr, stderr=sys.stderr)
    return done.stdout.strip() if capture else None


def prepare_rev(rev):
    found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=ROOT, text=True,
                           stdout=subprocess.PIPE)
    if found.returncode != 0:
        raise SystemExit(f"compare: REV '{rev}' is not a commit of this repository (git rev-parse found none)")
    commit = found.stdout.strip()
    tree = CACHE / commit[:12]
    if not (tree / ".git").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        run(["git", "worktree", "prune"], ROOT)
        run(["git", "worktree", "add", "--force", "--detach", str(tree), commit], ROOT, stdout=subprocess.DEVNULL)
    venv = tree / ".venv"
    if not venv.is_symlink():
        if venv.exists():
            raise SystemExit(f"compare: {venv} exists and is not the work tree's venvs; remove it")
        venv.symlink_to(ROOT / ".venv")
    return commit, tree, CACHE / f"{commit[:12]}-output"


def targets_for(benches):
    targets = set()
    for bench in benches:
        targets.add(PYTHON_BENCHES.get(bench, f"//tools/bench:{bench}"))
    return sorted(targets)


def build(tree, output_base, benches):
    bazel(tree, output_base, "build", *BAZEL_FLAGS, *targets_for(benches))
    return pathlib.Path(bazel(tree, output_base, "info", *BAZEL_FLAGS, "bazel-bin", capture=True))


# ---- probes: one process each, printing {metric: ratio} as JSON ----------------------------------------------

def best_ns(statement, namespace, number):
    return min(timeit.Timer(statement, globals=namespace).repeat(repeat=5, number=number)) / number * 1e9


def probe_python_bench(bazel_bin):
    """The per-call metrics of python_bench, each over the do-nothing METH_O floor timed alternately with it in
    the same process (best of each over 6 alternations): a ratio that a slow moment of the machine moves far
    less than either time."""
    import numpy as np
    sys.path.insert(0, str(bazel_bin / "tools" / "bench"))
    import npybridge_bench as nbb
    quantized = np.dtype("int8", metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 0.5}})

    def timed(statement):
        # Fresh arrays in a fresh namespace each time: where the objects sit moves calls by up to 20 ns.
        return best_ns(statement, {"nbb": nbb, "a": np.arange(1000, dtype=np.float32),
                                   "q": np.zeros(1000, dtype=quantized)}, 50_000)

    def floor():
        return min(timed(f"nbb.{name}(a)") for name in ("noop", "noop_true", "noop_false", "noop_not_implemented"))

    def against_floor(statement):
        best_floor = best_call = float("inf")
        for _ in range(6):
            best_floor = min(best_floor, floor())
            best_call = min(best_call, min(timed(statement.format(copy=copy)) for copy in range(nbb.copies)))
        return best_call / best_floor, best_floor

    result = {}
    floors = []
    for name, statement in [("bare check / floor", "nbb.bare_check_{copy}(a)"),
                            ("borrow (float32) / floor", "nbb.borrow_{copy}(a)"),
                            ("scoped borrow / floor", "nbb.borrow_scoped_{copy}(a)"),
                            ("borrow (QuantizedS8) / floor", "nbb.borrow_{copy}(q)"),
                            ("share of an existing tensor / floor", "nbb.share_existing_{copy}()")]:
        result[name], measured_floor = against_floor(statement)
        floors.append(measured_floor)
    result["floor (ns, not a ratio)"] = min(floors)
    return result


def probe_dlpack_bench(bazel_bin):
    import numpy as np
    sys.path.insert(0, str(bazel_bin / "examples"))
    import npybridge_example as nbx
    a = np.arange(1000, dtype=np.float32)
    namespace = {"np": np, "a": a, "t": nbx.Tensor.from_numpy(a), "Tensor": nbx.Tensor}
    yardstick = best_ns("np.from_dlpack(a)", namespace, 100_000)
    return {"export np.from_dlpack(t) / np.from_dlpack(a)": best_ns("np.from_dlpack(t)", namespace, 100_000) / yardstick,
            "import Tensor.from_dlpack(a) / np.from_dlpack(a)":
                best_ns("Tensor.from_dlpack(a)", namespace, 100_000) / yardstick}


def probe_narrowing_bench(bazel_bin):
    import numpy as np
    sys.path.insert(0, str(bazel_bin / "examples"))
    import npybridge_example as nbx
    result = {}
    for name in ("int32", "int64", "uint32"):
        a = np.arange(1 << 22, dtype=name)
        ms = {mode: min(timeit.repeat(lambda: nbx.Tensor.from_numpy(a, dtype="Float32", narrowing=mode),
                                      number=3, repeat=5)) for mode in ("checked", "wrap")}
        result[f"{name} -> Float32 checked / wrap"] = ms["checked"] / ms["wrap"]
    return result


def probe_cpp(bench, bazel_bin):
    """A Google Benchmark binary once; its pairs (ratios.py) as measured / baseline of the same process."""
    import tempfile
    sys.path.insert(0, str(HERE))
    from ratios import PAIRS
    with tempfile.TemporaryDirectory() as folder:
        out = pathlib.Path(folder) / "out.json"
        done = subprocess.run([str(bazel_bin / "tools" / "bench" / bench), f"--benchmark_out={out}",
                               "--benchmark_out_format=json", "--benchmark_min_time=0.2"], text=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
        if done.returncode != 0:
            raise SystemExit(f"compare: {bench} at {bazel_bin} failed:\n{done.stderr[-2000:]}")
        times = {b["name"]: b["real_time"] for b in json.loads(out.read_text())["benchmarks"]}
    return {f"{measured} / {baseline}": times[measured] / times[baseline]
            for measured, baseline, _ in PAIRS.get(bench, []) if measured in times and baseline in times}


def probe(bench, bazel_bin):
    bazel_bin = pathlib.Path(bazel_bin)
    if bench in CPP_BENCHES:
        return probe_cpp(bench, bazel_bin)
    return globals()[f"probe_{bench}"](bazel_bin)


# ---- the comparison ------------------------------------------------------------------------------------------

def spread(values):
    return f"{min(values):.2f}-{max(values):.2f}" if values else "n/a"


def main(argv):
    if len(argv) > 1 and argv[1] == "--probe":
        print(json.dumps(probe(argv[2], argv[3])))
        return 0
    args = [a for a in argv[1:]]
    rounds = 4
    if "--rounds" in args:
        at = args.index("--rounds")
        rounds = int(args[at + 1])
        del args[at:at + 2]
    if not args:
        raise SystemExit(__doc__)
    rev, benches = args[0], args[1:] or ["python_bench"]
    unknown = [b for b in benches if b not in PYTHON_BENCHES and b not in CPP_BENCHES]
    if unknown:
        raise SystemExit(f"compare: unknown bench {', '.join(unknown)} (known: "
                         f"{', '.join(sorted(PYTHON_BENCHES) + list(CPP_BENCHES))})")
    commit, rev_tree, rev_output = prepare_rev(rev)
    work_changes = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=ROOT).returncode != 0
    head = run(["git", "rev-parse", "--short=12", "HEAD"], ROOT, stdout=subprocess.PIPE).stdout.strip()
    work_name = head + ("+changes" if work_changes else "")
    print(f"compare: building {rev} ({commit[:12]}) in {rev_tree}", file=sys.stderr)
    # NPYBRIDGE_COMPARE_WORK_OUTPUT_BASE: the work tree in an output base of its own too (the suite's check of
    # this tool runs beside Bazel suites that hold the usual one).
    work_output = os.environ.get("NPYBRIDGE_COMPARE_WORK_OUTPUT_BASE") or None
    sides = {"rev": build(rev_tree, rev_output, benches), "work": build(ROOT, work_output, benches)}
    for tree, output_base in ((rev_tree, rev_output), (ROOT, work_output)):
        if output_base is not None:  # its server would stay up holding memory
            subprocess.run(["bazel", f"--output_base={output_base}", "shutdown"], cwd=tree, check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    measured = {side: {bench: {} for bench in benches} for side in sides}
    for round_number in range(rounds):
        order = ["rev", "work"] if round_number % 2 == 0 else ["work", "rev"]
        for bench in benches:
            for side in order:
                done = subprocess.run([sys.executable, __file__, "--probe", bench, str(sides[side])], check=True,
                                      text=True, stdout=subprocess.PIPE, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
                for name, value in json.loads(done.stdout.strip().splitlines()[-1]).items():
                    measured[side][bench].setdefault(name, []).append(value)
    print(f"## {rev} ({commit[:12]}) against the work tree ({work_name}), {rounds} alternating rounds\n")
    print("Each metric is a ratio to a baseline timed in the same process (lower is better unless it says "
          "otherwise); best-worst over the rounds.\n")
    print(f"| bench | metric | {rev} | work tree | work / {rev} (best) | verdict |")
    print("|---|---|---|---|---|---|")
    for bench in benches:
        names = list(dict.fromkeys(list(measured["rev"][bench]) + list(measured["work"][bench])))
        for name in names:
            a, b = measured["rev"][bench].get(name, []), measured["work"][bench].get(name, [])
            change = f"{min(b) / min(a):.3f}" if a and b else "n/a"
            verdict = "-"
            if a and b and "not a ratio" not in name:
                if min(b) > max(a):
                    verdict = "slower"
                elif max(b) < min(a):
                    verdict = "faster"
                else:
                    verdict = "same (ranges overlap)"
            print(f"| {bench} | {name} | {spread(a)} | {spread(b)} | {change} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
