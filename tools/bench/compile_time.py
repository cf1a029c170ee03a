"""What npybridge's headers cost a user's build: parse time of each public header alone, the umbrella and the
caster headers, against pybind11's and nanobind's own headers, in one run (interleaved: every translation unit
once per round, `--rounds` rounds), plus the README's complete module and its pybind11 module compiled at -O2
beside a pybind11 `array_t` module doing the same (time and stripped .so size).

Usage (tools/bench/run compile_time does this): compile_time.py [--rounds N] [--compiler g++]
Run with the numpy2 venv's Python (its NumPy, pybind11 and nanobind headers are used). Prints markdown
tables: best and worst CPU seconds of the compiler per translation unit with GCC's parse memory (deterministic,
where the seconds move by a third between runs on a shared machine), and the ratios the build-cost targets are
stated in (best against best, worst against worst, memory against memory).
"""
import argparse
import os
import pathlib
import subprocess
import sys
import sysconfig
import resource
import tempfile

import nanobind
import numpy
import pybind11

import results

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
INCLUDE = ROOT / "include"
NEEDS_MEGBRAIN = {"megbrain.hpp", "megbrain_compat.hpp"}


def flags():
    nanobind_root = pathlib.Path(nanobind.include_dir()).parent
    return ["-std=c++17", "-I", str(INCLUDE), "-isystem", numpy.get_include(), "-isystem", sysconfig.get_paths()["include"],
            "-isystem", pybind11.get_include(), "-isystem", nanobind.include_dir(),
            "-isystem", str(nanobind_root / "ext" / "robin_map" / "include")]


def units():
    """(label, source text) of every translation unit measured by parsing alone."""
    made = [("<pybind11/pybind11.h> + <pybind11/numpy.h>", "#include <pybind11/pybind11.h>\n#include <pybind11/numpy.h>\n"),
            ("<nanobind/nanobind.h> + <nanobind/ndarray.h>", "#include <nanobind/nanobind.h>\n#include <nanobind/ndarray.h>\n"),
            ("<boost/pfr.hpp>", "#include <boost/pfr.hpp>\n"),
            ("<Python.h> + NumPy's arrayobject.h",
             "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n#define NO_IMPORT_ARRAY\n#include <numpy/arrayobject.h>\n")]
    # The public headers by their paths: core/*.hpp, then the top level but the forwarders left at the core
    # headers' old paths and the MegBrain ones.
    core = sorted((INCLUDE / "npybridge" / "core").glob("*.hpp"))
    moved = {header.name for header in core}
    top = [h for h in sorted((INCLUDE / "npybridge").glob("*.hpp")) if h.name not in moved | NEEDS_MEGBRAIN]
    for header in core + top:
        name = header.relative_to(INCLUDE).as_posix()
        made.append((name, f"#include <{name}>\n"))
    made.append(("npybridge/bind/pybind11.hpp", "#include <npybridge/bind/pybind11.hpp>\n"))
    made.append(("npybridge/bind/nanobind.hpp", "#include <npybridge/bind/nanobind.hpp>\n"))
    return made


def cpu_seconds(command, source=None):
    """The compiler's CPU time (user + system, its children included): on a shared machine it moves less than the
    wall clock, which also counts the time other processes held the cores."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, input=source, text=True, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def parse_seconds(compiler, source):
    return cpu_seconds([compiler, "-x", "c++", "-fsyntax-only", *flags(), "-"], source)


def parse_memory(compiler, source):
    """GCC's garbage-collected memory allocated by the parse, in MB (the TOTAL line of -ftime-report): the same
    every run whatever the machine's load, so it shows a change that the noisy CPU seconds hide. None for a
    compiler that does not report it."""
    result = subprocess.run([compiler, "-x", "c++", "-fsyntax-only", "-ftime-report", *flags(), "-"], input=source,
                            text=True, capture_output=True, check=True)
    for line in result.stderr.splitlines():
        if line.strip().startswith("TOTAL"):
            amount = line.split()[-1]
            scale = {"k": 1 / 1024, "M": 1, "G": 1024}.get(amount[-1])
            return float(amount[:-1]) * scale if scale else float(amount) / 2**20
    return None


def readme_block(kind):
    text = (ROOT / "README.md").read_text()
    start = text.index(f"```cpp {kind}\n") + len(f"```cpp {kind}\n")
    return text[start:text.index("```", start)]


# The same two functions written with pybind11 alone: rows of a float32 matrix, and an empty array of a dtype.
PEER_MODULE = """#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>
namespace py = pybind11;
PYBIND11_MODULE(readme_pybind11, m) {
    m.def("rows", [](py::array_t<float, py::array::c_style | py::array::forcecast> a) {
        if (a.ndim() != 2) throw py::value_error("expected ndim=2");
        return a.shape(0);
    });
    m.def("empty", [](py::dtype type, std::size_t n) { return py::array(type, {n}); });
}
"""


def module_cost(compiler, source, work):
    path = work / "module.cpp"
    path.write_text(source)
    out = work / "module.so"
    seconds = cpu_seconds([compiler, "-O2", "-shared", "-fPIC", "-fvisibility=hidden", *flags(), str(path), "-o", str(out)])
    subprocess.run(["strip", "-s", str(out)], check=True)
    return seconds, out.stat().st_size


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compiler", default="g++")
    args = parser.parse_args()
    measured = units()
    times = {label: [] for label, _ in measured}
    modules = {"README's complete module (CPython API)": readme_block("my_module"),
               "README's pybind11 module (npybridge caster)": readme_block("pybind11"),
               "the same with pybind11's array_t": PEER_MODULE}
    module_times = {label: [] for label in modules}
    sizes = {}
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        for _ in range(args.rounds):
            for label, source in measured:
                times[label].append(parse_seconds(args.compiler, source))
            for label, source in modules.items():
                seconds, size = module_cost(args.compiler, source, work)
                module_times[label].append(seconds)
                sizes[label] = size
    memory = {label: parse_memory(args.compiler, source) for label, source in measured}
    print(f"{args.compiler} -std=c++17 -fsyntax-only, {args.rounds} interleaved rounds; CPU seconds of the compiler "
          "(best, worst); GCC's parse memory (MB, from -ftime-report: the same every run)")
    print()
    print("| translation unit includes | best s | worst s | parse MB |")
    print("|---|---|---|---|")
    for label, _ in measured:
        megabytes = f"{memory[label]:.0f}" if memory[label] is not None else "-"
        print(f"| {label} | {min(times[label]):.2f} | {max(times[label]):.2f} | {megabytes} |")
    best = {label: min(values) for label, values in times.items()}
    worst = {label: max(values) for label, values in times.items()}
    pybind_pair = "<pybind11/pybind11.h> + <pybind11/numpy.h>"
    nanobind_pair = "<nanobind/nanobind.h> + <nanobind/ndarray.h>"
    print()
    print("| ratio | best / best | worst / worst | parse MB / MB | target |")
    print("|---|---|---|---|---|")
    rows = [("convert.hpp / pybind11's two headers", "npybridge/convert.hpp", pybind_pair, 0.5),
            ("npybridge.hpp / pybind11's two headers", "npybridge/npybridge.hpp", pybind_pair, 0.7),
            ("bind/pybind11.hpp / pybind11's two headers", "npybridge/bind/pybind11.hpp", pybind_pair, 1.5),
            ("bind/nanobind.hpp / nanobind's two headers", "npybridge/bind/nanobind.hpp", nanobind_pair, 3.5),
            ("dtype.hpp / <boost/pfr.hpp>", "npybridge/core/dtype.hpp", "<boost/pfr.hpp>", 1.3)]
    for label, ours, theirs, target in rows:
        by_memory = (f"{memory[ours] / memory[theirs]:.2f}" if memory[ours] is not None and memory[theirs] else "-")
        print(f"| {label} | {best[ours] / best[theirs]:.2f} | {worst[ours] / worst[theirs]:.2f} | {by_memory} | "
              f"<= {target} |")
    results.save("compile_time", {
        "compiler": args.compiler, "rounds": args.rounds,
        "parse_seconds": {label: [min(values), max(values)] for label, values in times.items()},
        "parse_megabytes": memory,
        "modules": {label: {"seconds": [min(module_times[label]), max(module_times[label])],
                            "stripped_bytes": sizes[label]} for label in modules}})
    print()
    print("| module, -O2 | best s | worst s | stripped .so bytes |")
    print("|---|---|---|---|")
    for label in modules:
        print(f"| {label} | {min(module_times[label]):.1f} | {max(module_times[label]):.1f} | {sizes[label]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
