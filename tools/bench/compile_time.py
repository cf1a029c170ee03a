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


def parse_memory(compiler, source, phase="TOTAL"):
    """GCC's garbage-collected memory allocated by the parse, in MB (the TOTAL line of -ftime-report, or another
    phase's line): the same every run whatever the machine's load, so it shows a change that the noisy CPU seconds
    hide. None for a compiler that does not report it."""
    result = subprocess.run([compiler, "-x", "c++", "-fsyntax-only", "-ftime-report", *flags(), "-"], input=source,
                            text=True, capture_output=True, check=True)
    for line in result.stderr.splitlines():
        if line.strip().startswith(phase):
            amount = line.split()[-1] if phase == "TOTAL" else line.split()[-3]
            scale = {"k": 1 / 1024, "M": 1, "G": 1024}.get(amount[-1])
            return float(amount[:-1]) * scale if scale else float(amount) / 2**20
    return None


def reached_headers(compiler):
    """The headers npybridge's own include (g++ -H of convert.hpp), each once in order: what a unit that includes
    convert.hpp parses besides npybridge."""
    result = subprocess.run([compiler, "-x", "c++", "-E", "-H", *flags(), "-"], input="#include <npybridge/convert.hpp>\n",
                            text=True, capture_output=True, check=True)
    stack, found = [], []
    for line in result.stderr.splitlines():
        dots, _, path = line.partition(" ")
        if not dots or set(dots) != {"."}:
            continue
        del stack[len(dots) - 1:]
        parent = stack[-1] if stack else "/npybridge/"
        stack.append(path)
        if "/npybridge/" not in path and "/npybridge/" in parent and path not in found:
            found.append(path)
    return found


def one_more(kind):
    """Five more specializations of `kind` (a template of one type argument, or byte_buffer) with a use each."""
    lines = []
    for i in range(5):
        lines.append(f"struct S{i} {{ int a; double b; }};")
        if kind == "std::optional" or kind == "npybridge::detail::maybe":
            lines.append(f"inline {kind}<S{i}> f{i}(bool c) {{ if (c) return S{i}{{1, 2}}; return std::nullopt; }}")
            lines.append(f"inline int g{i}() {{ auto o = f{i}(true); return o ? o->a : 0; }}")
        elif kind == "std::unique_ptr":
            lines.append(f"inline std::unique_ptr<S{i}[]> f{i}() {{ return std::unique_ptr<S{i}[]>(new S{i}[3]); }}")
            lines.append(f"inline int g{i}() {{ auto o = f{i}(); return o ? o[0].a : 0; }}")
        elif kind == "std::vector":
            lines.append(f"inline std::vector<S{i}> f{i}() {{ return std::vector<S{i}>(3); }}")
            lines.append(f"inline int g{i}() {{ auto o = f{i}(); return o.empty() ? 0 : o[0].a; }}")
        else:
            lines.append(f"inline npybridge::detail::byte_buffer f{i}() {{ return npybridge::detail::byte_buffer(sizeof(S{i}) * 3); }}")
            lines.append(f"inline int g{i}() {{ auto o = f{i}(); return o.get() ? o.get()[0] : 0; }}")
    return "\n".join(lines) + "\n"


def print_parts(compiler):
    """Where convert.hpp's parse memory goes (tables of docs/performance.md), and what one more specialization of a
    standard template costs in its unit."""
    reached = reached_headers(compiler)
    def unit(paths, extra=""):
        return "#define PY_SSIZE_T_CLEAN\n" + "".join(f'#include "{path}"\n' for path in paths) + extra
    without = lambda *names: [p for p in reached if not any(p.endswith("/" + name) for name in names)]
    parts = [("the headers npybridge includes (standard, CPython, NumPy, PFR, intrinsics)", unit(reached)),
             ("the same without `<complex>`", unit(without("complex"))),
             ("the same without `<complex>` and `<variant>`", unit(without("complex", "variant"))),
             ("the first row + `npybridge/core/dtype.hpp`", unit(reached, "#include <npybridge/core/dtype.hpp>\n")),
             ("the first row + `npybridge/core.hpp`", unit(reached, "#include <npybridge/core.hpp>\n")),
             ("`npybridge/convert.hpp`", "#include <npybridge/convert.hpp>\n")]
    print(f"{compiler} -std=c++17 -fsyntax-only -ftime-report, one compile each; the first row's "
          f"{len(reached)} headers are those g++ -H shows npybridge's headers including")
    print()
    print("| translation unit includes | parse MB | of it, template instantiation MB |")
    print("|---|---|---|")
    for label, source in parts:
        print(f"| {label} | {parse_memory(compiler, source):.0f} | "
              f"{parse_memory(compiler, source, 'template instantiation'):.0f} |")
    base = parse_memory(compiler, "#include <npybridge/convert.hpp>\n")
    print()
    print("| in `convert.hpp`'s unit, five more | parse MB more | per specialization |")
    print("|---|---|---|")
    for kind, label in [("std::optional", "`std::optional<S>`"), ("npybridge::detail::maybe", "`detail::maybe<S>`"),
                        ("std::unique_ptr", "`std::unique_ptr<S[]>`"), ("std::vector", "`std::vector<S>`"),
                        ("byte_buffer", "`detail::byte_buffer` uses")]:
        more = parse_memory(compiler, "#include <npybridge/convert.hpp>\n#include <memory>\n#include <vector>\n" +
                            one_more(kind)) - base
        print(f"| {label} | {more:.0f} | {more / 5:.1f} |")


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
    parser.add_argument("--parts", action="store_true", help="where convert.hpp's parse memory goes, instead")
    args = parser.parse_args()
    if args.parts:
        print_parts(args.compiler)
        return 0
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
