"""Each public header of npybridge compiles on its own, warning-free, for every compiler and standard a user may have.

npybridge is compiled by its users' compilers with their flags: a warning in a header breaks a user's -Werror
build. With -Wall -Wextra -Wpedantic -Werror in C++17, C++20 and C++23: every include/npybridge/*.hpp and
include/npybridge/core/*.hpp alone by GCC
(each header brings what it uses, whatever the standard library includes transitively in that standard), and the
umbrella, which includes every one of them, by GCC and Clang (g++ and clang++-14 / clang++; a missing one fails):
a header's warnings are the same alone or in the umbrella, so Clang compiling each one alone again would only
repeat the umbrella's answer. CPython, NumPy and Boost come in as -isystem, as a build system hands them over.
megengine_compat.hpp (the migration shim) stays out of the umbrella, so Clang compiles it alone too.
megbrain.hpp and megbrain_compat.hpp need MegBrain's headers: the umbrella leaves them out, and the real-MegBrain
example module (//examples:npybridge_megbrain_example.so, with -Werror) compiles them against MegEngine's own.
core.hpp includes every core header and nothing outside core/. The headers left at the core headers' paths of
before 0.5 only stop the build (tests/compile_fail checks their messages).
"""
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import unittest

import numpy

HERE = pathlib.Path(__file__).resolve().parent
STANDARDS = ["c++17", "c++20", "c++2b"]  # c++2b: C++23 as GCC 12 and Clang 14 spell it
FLAGS = ["-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
NEEDS_MEGBRAIN = {"megbrain.hpp", "megbrain_compat.hpp"}
# Included on purpose only: the migration shim of MegEngine's helper names.
OUTSIDE_UMBRELLA = {"megengine_compat.hpp"}


def runfiles_root():
    return pathlib.Path(os.environ.get("TEST_SRCDIR", HERE.parent.parent.parent)) / "npybridge"


def compilers():
    found = {"gcc": shutil.which("g++"), "clang": shutil.which("clang++-14") or shutil.which("clang++")}
    return found


def compile_one(compiler, standard, header, include, source=None):
    system = [numpy.get_include(), sysconfig.get_paths()["include"]]
    command = [compiler, "-x", "c++", f"-std={standard}", *FLAGS, "-I", str(include)]
    for folder in system:
        command += ["-isystem", folder]
    command.append("-")
    source = source or f"#include <npybridge/{header}>\n"
    result = subprocess.run(command, input=source, capture_output=True, text=True)
    return result.returncode, result.stderr


def core_headers(include):
    """The headers of core/, by name."""
    return sorted(p.name for p in (include / "npybridge" / "core").glob("*.hpp"))


def removed_headers(include):
    """The removed paths: include/npybridge/<name>.hpp for each core/<name>.hpp that moved there."""
    return [name for name in core_headers(include) if (include / "npybridge" / name).exists()]


def public_headers(include):
    """Every public header by its path under include/npybridge/ but the removed and the MegBrain ones."""
    top = {p.name for p in (include / "npybridge").glob("*.hpp")} - set(removed_headers(include)) - NEEDS_MEGBRAIN
    return sorted(top) + [f"core/{name}" for name in core_headers(include)]


def reached_from(include, header):
    """The npybridge headers `header` includes, directly or through others."""
    seen, todo = set(), [header]
    while todo:
        text = (include / "npybridge" / todo.pop()).read_text()
        for name in re.findall(r"^#include <npybridge/([^>]+)>", text, re.MULTILINE):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


class HeaderMatrixTest(unittest.TestCase):
    def test_the_umbrella_includes_every_public_header(self):
        include = runfiles_root() / "include"
        headers = set(public_headers(include)) - {"npybridge.hpp"} - OUTSIDE_UMBRELLA
        self.assertEqual((NEEDS_MEGBRAIN | OUTSIDE_UMBRELLA) & reached_from(include, "npybridge.hpp"), set(),
                         "the umbrella must not include the MegBrain headers (they need MegBrain's own) or the "
                         "migration shim")
        self.assertEqual(headers - reached_from(include, "npybridge.hpp"), set(),
                         "npybridge.hpp must include every public header (Clang compiles the umbrella only)")

    def test_the_core_umbrella_is_the_core_folder(self):
        include = runfiles_root() / "include"
        core = {f"core/{name}" for name in core_headers(include)}
        reached = reached_from(include, "core.hpp")
        self.assertGreaterEqual(len(core), 10)
        self.assertEqual(core - reached, set(), "core.hpp must include every header of core/")
        self.assertEqual({h for h in reached if not h.startswith("core/")}, set(),
                         "core.hpp (and the core headers) must include nothing outside core/")

    def test_the_removed_paths_hold_nothing_but_their_error(self):
        include = runfiles_root() / "include"
        removed = removed_headers(include)
        self.assertGreaterEqual(len(removed), 13)
        for name in removed:
            lines = [line for line in (include / "npybridge" / name).read_text().splitlines()
                     if line and not line.startswith("//")]
            self.assertEqual(len(lines), 1, name)
            self.assertTrue(lines[0].startswith("#error "), name)

    def test_helper_macros_end_in_their_header(self):
        # A function-like macro is either public (a `///` comment says what it does) or #undef'd in its header.
        include = runfiles_root() / "include"
        for header in sorted((include / "npybridge").rglob("*.hpp")):
            lines = header.read_text().splitlines()
            for number, line in enumerate(lines):
                match = re.match(r"#define (NPYBRIDGE_\w+)\(", line)
                if not match:
                    continue
                name = match.group(1)
                public = number > 0 and lines[number - 1].startswith("///")
                with self.subTest(header=header.name, macro=name):
                    self.assertTrue(public or f"#undef {name}" in lines,
                                    f"{header.name}: {name} is a helper: #undef it where its uses end")

    def test_every_header_alone_with_every_compiler_and_standard(self):
        include = runfiles_root() / "include"
        headers = public_headers(include)
        self.assertIn("npybridge.hpp", headers)
        self.assertIn("core.hpp", headers)
        self.assertGreaterEqual(len(headers), 25)
        found = compilers()
        for name, path in found.items():
            self.assertIsNotNone(path, f"no {name} compiler on PATH (tools/bazelw installs g++ and clang-14)")
        jobs = [(found["gcc"], standard, header) for standard in STANDARDS for header in headers]
        jobs += [(found["clang"], standard, header) for standard in STANDARDS
                 for header in ["npybridge.hpp", *OUTSIDE_UMBRELLA]]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda job: (job, compile_one(*job, include)), jobs))
        for (compiler, standard, header), (code, stderr) in results:
            with self.subTest(compiler=compiler, standard=standard, header=header):
                self.assertEqual(code, 0, f"{compiler} -std={standard}: {header}\n{stderr}")
                self.assertEqual(stderr.strip(), "", f"{compiler} -std={standard}: {header} printed\n{stderr}")


if __name__ == "__main__":
    sys.exit(unittest.main())
