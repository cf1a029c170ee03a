"""Draws docs/performance.md's charts from one bench run's results (tools/bench/run --results DIR).

Usage: plot.py RESULTS_DIR [OUT_DIR [CHART...]]   (OUT_DIR defaults to docs/; tools/bench/plot runs this)

CHART names the charts to draw (perf-conversions.svg, ...), from a run of only their benches; by default all four.

Writes four SVG files, each captioned with the machine, the commit and the date of the run (RESULTS_DIR/run.json):
  perf-calls.svg   per-call cost of one conversion against the do-nothing floor (python_bench.json)
  perf-build.svg   parse time of the headers, -O2 compile time and stripped size of the README module
                   against the same module written with pybind11's array_t (compile_time.json)
  perf-copies.svg  throughput of transposed copies, checked narrowing and packing, against memcpy-like copies
                   and NumPy's own (copy_bench.json, lowbit_bench.json, python_bench.json)
  perf-conversions.svg  large conversions that change the element type, each beside the call a user would make
                   instead (NumPy's or ml_dtypes') and a plain copy of the same bytes (throughput_bench.json)
Every library has one colour in every chart; text and axes are a mid grey, the background transparent, so a
chart reads on a light and on a dark page. A chart whose input is missing is an error naming the file.
"""
import json
import pathlib
import sys

import matplotlib

matplotlib.use("svg")
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, small, in the page's own font
matplotlib.rcParams["svg.hashsalt"] = "npybridge"  # the same run gives the same file
import matplotlib.pyplot as plt  # noqa: E402

# One colour per library, the same in every chart (mid tones: legible on white and on near-black).
COLOURS = {"npybridge": "#2a9d8f", "pybind11": "#e07a5f", "nanobind": "#8d7cc3", "numpy": "#8a8f98",
           "floor": "#b8b8b8", "memcpy": "#b8b8b8"}
ORDER = ["npybridge", "pybind11", "nanobind", "numpy", "memcpy", "floor"]
INK = "#808080"
CHARTS = ("perf-calls.svg", "perf-build.svg", "perf-copies.svg", "perf-conversions.svg")


def load(folder, name):
    path = folder / f"{name}.json"
    if not path.exists():
        raise SystemExit(f"plot: {path} is missing (tools/bench/run --results {folder} ... writes it)")
    return json.loads(path.read_text())


def caption(run):
    return f"{run['machine']} · commit {run['commit']} · {run['date']}"


def style(ax):
    ax.set_facecolor("none")
    ax.tick_params(colors=INK)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color(INK)


def bar_chart(path, title, panels, run, note=""):
    """panels: (unit, rows, log) side by side; rows: (label, library, value) drawn top to bottom."""
    height = max(len(rows) for _, rows, _ in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(8.8 if len(panels) == 1 else 11.5, 0.42 * height + 1.9),
                             squeeze=False)
    fig.patch.set_alpha(0)
    libraries = []
    for ax, (unit, rows, log) in zip(axes[0], panels):
        style(ax)
        values = [row[2] for row in rows]
        y = list(range(len(rows)))[::-1]
        ax.barh(y, values, color=[COLOURS[row[1]] for row in rows], height=0.68)
        for position, value in zip(y, values):
            ax.text(value, position, f" {value:.3g}", va="center", ha="left", color=INK, fontsize=9)
        ax.set_yticks(y, [row[0] for row in rows], color=INK, fontsize=9)
        ax.set_xlabel(unit, color=INK)
        if log:
            ax.set_xscale("log")
        ax.set_xlim(right=max(values) * (3 if log else 1.2))
        libraries += [row[1] for row in rows]
    present = [library for library in ORDER if library in libraries]
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[library]) for library in present]
    legend = fig.legend(handles, present, loc="upper right", bbox_to_anchor=(1, 0.95), ncol=len(present),
                        frameon=False, fontsize=8.5)
    for text in legend.get_texts():
        text.set_color(INK)
    fig.suptitle(title, color=INK, x=0.01, ha="left", fontsize=11.5)
    fig.text(0.01, 0.01, caption(run) + (f"\n{note}" if note else ""), color=INK, fontsize=7.5, va="bottom")
    fig.tight_layout(rect=(0, 0.1 if note else 0.07, 1, 0.9))
    fig.savefig(path, format="svg", transparent=True, metadata={"Date": None}, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)


def library_of(name):
    lowered = name.lower()
    if "floor" in lowered or "doing nothing" in lowered:
        return "floor"
    if "npybridge" in lowered or "bare check" in lowered:
        return "npybridge"
    if "pybind11" in lowered:
        return "pybind11"
    if "nanobind" in lowered:
        return "nanobind"
    return "numpy"


def calls_chart(folder, out, run):
    bench = load(folder, "python_bench")
    calls = bench["calls_ns"]
    wanted = [
        (bench["floor"], "do-nothing METH_O (floor)"),
        ("np.asarray(a)", "np.asarray(a)"),
        ("npybridge borrow (float32)", "npybridge borrow"),
        ("npybridge borrow, scoped (no reference kept)", "npybridge scoped borrow"),
        ("npybridge borrow (QuantizedS8)", "npybridge borrow, QuantizedS8"),
        ("npybridge share of an existing tensor", "npybridge share (tensor -> ndarray)"),
        ("npybridge's pybind11 caster (npybridge::tensor argument)", "npybridge's pybind11 caster"),
        ("npybridge's nanobind caster (npybridge::tensor argument)", "npybridge's nanobind caster"),
        ("pybind11 array_t<float, c_style>", "pybind11 array_t<float>"),
        ("nanobind ndarray<float, c_contig, cpu>", "nanobind ndarray<float>"),
    ]
    rows = [(label, library_of(name), calls[name][0]) for name, label in wanted if name in calls]
    bar_chart(out / "perf-calls.svg", "One conversion per call, 1,000-element float32 array (lower is better)",
              [("ns per call (best of the run)", rows, False)], run,
              note="Each bar is a Python call into a function that converts its argument and returns; "
                   "per-call times move ±20-40% between runs on a shared machine.")


def build_chart(folder, out, run):
    bench = load(folder, "compile_time")
    parse = bench["parse_seconds"]
    modules = bench["modules"]
    seconds = []
    for name, label, library in [
            ("npybridge/convert.hpp", "parse: npybridge/convert.hpp", "npybridge"),
            ("npybridge/npybridge.hpp", "parse: npybridge.hpp (umbrella)", "npybridge"),
            ("<pybind11/pybind11.h> + <pybind11/numpy.h>", "parse: pybind11.h + numpy.h", "pybind11"),
            ("npybridge/bind/pybind11.hpp", "parse: npybridge/bind/pybind11.hpp", "npybridge"),
            ("<nanobind/nanobind.h> + <nanobind/ndarray.h>", "parse: nanobind.h + ndarray.h", "nanobind"),
            ("npybridge/bind/nanobind.hpp", "parse: npybridge/bind/nanobind.hpp", "npybridge")]:
        if name in parse:
            seconds.append((label, library, parse[name][0]))
    short = {"README's complete module (CPython API)": "README module (CPython API)",
             "README's pybind11 module (npybridge caster)": "README module (pybind11 + caster)",
             "the same with pybind11's array_t": "the same with pybind11 array_t"}
    sizes = []
    for name, value in modules.items():
        library = "pybind11" if "array_t" in name else "npybridge"
        seconds.append((f"-O2 build: {short.get(name, name)}", library, value["seconds"][0]))
        sizes.append((short.get(name, name), library, value["stripped_bytes"] / 1024))
    bar_chart(out / "perf-build.svg", "What npybridge costs a build (lower is better)",
              [("seconds of compiler CPU (header parse; module at -O2)", seconds, False),
               ("stripped .so, KiB", sizes, False)], run,
              note=f"{bench['compiler']} -std=c++17, best of {bench['rounds']} interleaved rounds "
                   "(tools/bench/compile_time.py).")


def gigabytes_per_second(benchmarks, name, same_bytes_as=None, array_bytes=None):
    """GB/s of a Google Benchmark entry (its name without the /real_time suffix): its own bytes_per_second, or
    the bytes of `same_bytes_as` (the same input array) or `array_bytes` over its time."""
    entry = benchmarks.get(name)
    if entry is None:
        return None
    seconds = entry["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry.get("time_unit", "ns")]
    if "bytes_per_second" in entry:
        return entry["bytes_per_second"] / 1e9
    if same_bytes_as in benchmarks and "bytes_per_second" in benchmarks[same_bytes_as]:
        twin = benchmarks[same_bytes_as]
        twin_seconds = twin["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[twin.get("time_unit", "ns")]
        return twin["bytes_per_second"] * twin_seconds / seconds / 1e9
    if array_bytes is not None:
        return array_bytes / seconds / 1e9
    return None


def by_name(path_data):
    return {b["name"].replace("/real_time", ""): b for b in path_data["benchmarks"]
            if b.get("run_type", "iteration") == "iteration"}


def copies_chart(folder, out, run):
    copy = by_name(load(folder, "copy_bench"))
    lowbit = by_name(load(folder, "lowbit_bench"))
    n = 16 << 20
    wanted = [
        (copy, "npybridge_copy_float32_T", None, None, "4096² float32 .T into a new tensor", "npybridge"),
        (copy, "numpy_ascontiguous_float32_T", None, None, "np.ascontiguousarray(x.T), the same", "numpy"),
        (copy, "contiguous_copy_float32", None, None, "a contiguous copy of the same bytes", "memcpy"),
        (copy, "npybridge_copy_int16_perm", None, None, "(64, 512, 512) int16 transpose into a new tensor",
         "npybridge"),
        (copy, "numpy_ascontiguous_int16_perm", None, None, "np.ascontiguousarray, the same int16", "numpy"),
        (copy, "npybridge_checked_narrowing_float64_T", None, None, "4096² float64 .T -> Float32, checked",
         "npybridge"),
        (copy, "numpy_ascontiguous_astype_float64_T", "npybridge_checked_narrowing_float64_T", None,
         "ascontiguousarray(x.T).astype(float32)", "numpy"),
        (copy, "copy_into_int64_checked/16777216", None, 8 * n, "copy_into int64 -> Int32, checked, 16 Mi",
         "npybridge"),
        (copy, "numpy_cast_int64_into_int32/16777216", None, 8 * n, "NumPy's unchecked cast into the same memory",
         "numpy"),
        (lowbit, "pack/IntB4", None, None, "pack IntB4 (int8 bytes in)", "npybridge"),
        (lowbit, "unpack/IntB4", None, None, "unpack IntB4 (int8 bytes out)", "npybridge"),
        (lowbit, "pack/QuantizedS4", None, None, "pack QuantizedS4", "npybridge"),
        (lowbit, "unpack/QuantizedS4", None, None, "unpack QuantizedS4", "npybridge"),
        (lowbit, "memcpy_unpacked_bytes", None, None, "memcpy of the unpacked bytes", "memcpy"),
    ]
    rows = []
    for benchmarks, name, twin, array_bytes, label, library in wanted:
        value = gigabytes_per_second(benchmarks, name, twin, array_bytes)
        if value is not None:
            rows.append((label, library, value))
    if not rows:
        raise SystemExit("plot: copy_bench.json and lowbit_bench.json hold none of the charted benchmarks")
    bar_chart(out / "perf-copies.svg", "Copies, checked narrowing and packing (higher is better)",
              [("GB/s (bytes of the source array per second)", rows, False)], run,
              note="Google Benchmark (tools/bench/copy_bench, lowbit_bench); arrays of 16-64 MiB, past the caches.")


def conversions_chart(folder, out, run):
    bench = load(folder, "throughput_bench")
    rows = []
    for row in bench["rows"]:
        rate = {key: row["bytes"] / min(times) / 1e9 for key, times in row["seconds"].items()}
        rows += [(f"{row['name']}: npybridge", "npybridge", rate["ours"]),
                 (f"{row['peer']}", "numpy", rate["peer"]),
                 ("a plain copy of the same bytes", "floor", rate["floor"])]
    bar_chart(out / "perf-conversions.svg", "Large conversions (higher is better)",
              [("GB/s (bytes of the source array per second)", rows, False)], run,
              note=f"tools/bench/throughput_bench.py: {bench['elements']:,} elements, best of {bench['rounds']} "
                   "interleaved rounds; peers are NumPy's or ml_dtypes' own calls.")


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    folder = pathlib.Path(argv[1])
    out = pathlib.Path(argv[2]) if len(argv) > 2 else pathlib.Path(__file__).resolve().parent.parent.parent / "docs"
    chosen = argv[3:] or list(CHARTS)
    unknown = [name for name in chosen if name not in CHARTS]
    if unknown:
        raise SystemExit(f"plot: no chart {', '.join(unknown)} (the charts: {', '.join(CHARTS)})")
    out.mkdir(parents=True, exist_ok=True)
    run = load(folder, "run")
    draw = {"perf-calls.svg": calls_chart, "perf-build.svg": build_chart, "perf-copies.svg": copies_chart,
            "perf-conversions.svg": conversions_chart}
    for name in chosen:
        draw[name](folder, out, run)
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
