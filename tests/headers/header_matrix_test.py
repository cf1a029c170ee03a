"""Each public header of npybridge compiles on its own, warning-free, for every compiler and standard a user may have.

npybridge is compiled by its users' compilers with their flags: a warning in a header breaks a user's -Werror
build. Every include/npybridge/*.hpp (the umbrella among them) is compiled alone with -Wall -Wextra -Wpedantic
-Werror by GCC and Clang (whichever of g++ and clang++-14 / clang++ this machine has; a missing one fails) in
C++17, C++20 and C++23. CPython, NumPy and Boost come in as -isystem, as a build system hands them over.
"""
import concurrent.futures
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import unittest

import numpy

HERE = pathlib.Path(__file__).resolve().parent
STANDARDS = ["c++17", "c++20", "c++2b"]  # c++2b: C++23 as GCC 12 and Clang 14 spell it
FLAGS = ["-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]


def runfiles_root():
    return pathlib.Path(os.environ.get("TEST_SRCDIR", HERE.parent.parent.parent)) / "npybridge"


def compilers():
    found = {"gcc": shutil.which("g++"), "clang": shutil.which("clang++-14") or shutil.which("clang++")}
    return found


def compile_one(compiler, standard, header, include):
    system = [numpy.get_include(), sysconfig.get_paths()["include"]]
    command = [compiler, "-x", "c++", f"-std={standard}", *FLAGS, "-I", str(include)]
    for folder in system:
        command += ["-isystem", folder]
    command.append("-")
    result = subprocess.run(command, input=f"#include <npybridge/{header}>\n", capture_output=True, text=True)
    return result.returncode, result.stderr


class HeaderMatrixTest(unittest.TestCase):
    def test_every_header_alone_with_every_compiler_and_standard(self):
        include = runfiles_root() / "include"
        headers = sorted(p.name for p in (include / "npybridge").glob("*.hpp"))
        self.assertIn("npybridge.hpp", headers)
        self.assertGreaterEqual(len(headers), 15)
        found = compilers()
        for name, path in found.items():
            self.assertIsNotNone(path, f"no {name} compiler on PATH (tools/bazelw installs g++ and clang-14)")
        jobs = [(path, standard, header) for path in found.values() for standard in STANDARDS for header in headers]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda job: (job, compile_one(*job, include)), jobs))
        for (compiler, standard, header), (code, stderr) in results:
            with self.subTest(compiler=compiler, standard=standard, header=header):
                self.assertEqual(code, 0, f"{compiler} -std={standard}: {header}\n{stderr}")
                self.assertEqual(stderr.strip(), "", f"{compiler} -std={standard}: {header} printed\n{stderr}")


if __name__ == "__main__":
    sys.exit(unittest.main())
