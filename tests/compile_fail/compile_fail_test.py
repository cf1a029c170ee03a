"""Each .cpp here must fail to compile with the `// expect:` message on its first line.

These are the compile errors npybridge promises (static_assert messages that start
with `npybridge:`); a file that compiles, or fails for another reason, fails. So does every removed spelling of
tools/upgrading.py's list: its `use` must fail with the message that names its replacement.
Each case is compiled by GCC and by Clang (g++ and clang++-14 / clang++; a missing one fails), whatever the
build's configuration. CPython's and NumPy's headers are on the include path for the cases that need the
Python-facing headers (npybridge/arg.hpp).
"""
import concurrent.futures
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import unittest

import numpy

HERE = pathlib.Path(__file__).resolve().parent
# Boost.PFR from the system (libboost1.81-dev); the other headers used here are pure C++.
# (Added to the include path only when it is not a system folder: -isystem
# /usr/include would break the C library's #include_next.)
BOOST = os.environ.get("BOOST_INCLUDE_DIR", "")


def runfiles_root():
    return pathlib.Path(os.environ.get("TEST_SRCDIR", HERE.parent.parent.parent)) / "npybridge"


def compile_source(compiler, source, root, standard="c++17"):
    return subprocess.run(
        [compiler, f"-std={standard}", "-fsyntax-only", "-I", str(root / "include"), *(["-isystem", BOOST] if BOOST else []),
         "-isystem", numpy.get_include(), "-isystem", sysconfig.get_paths()["include"], "-x", "c++", "-"],
        input=source, capture_output=True, text=True)


def compile_case(compiler, case, root):
    # A case's second line may name its standard ("// std: c++14"); C++17 otherwise.
    lines = case.read_text().splitlines()
    standard = lines[1].removeprefix("// std:").strip() if len(lines) > 1 and lines[1].startswith("// std:") else "c++17"
    return compile_source(compiler, case.read_text(), root, standard)


def removed_spellings(root):
    spec = importlib.util.spec_from_file_location("upgrading", root / "tools" / "upgrading.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.REMOVED


def compilers():
    found = {"gcc": shutil.which("g++"), "clang": shutil.which("clang++-14") or shutil.which("clang++")}
    for name, path in found.items():
        if path is None:
            raise AssertionError(f"no {name} compiler on PATH (tools/bazelw installs g++ and clang-14)")
    return list(found.values())


def first_error(stderr):
    return next((line for line in stderr.splitlines() if "error:" in line), "")


class CompileFailTest(unittest.TestCase):
    def test_each_case_fails_with_its_message_with_gcc_and_clang(self):
        root = runfiles_root()
        cases = sorted((root / "tests" / "compile_fail").glob("*.cpp"))
        self.assertGreaterEqual(len(cases), 4)
        jobs = [(compiler, case) for compiler in compilers() for case in cases]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda job: compile_case(*job, root), jobs))
        for (compiler, case), result in zip(jobs, results):
            with self.subTest(compiler=compiler, case=case.name):
                expect = case.read_text().splitlines()[0].removeprefix("// expect:").strip()
                self.assertNotEqual(result.returncode, 0, f"{compiler}: {case.name} compiled but must not")
                self.assertIn(expect, result.stderr, f"{compiler}: {case.name} failed for another reason")
                # npybridge's message is the first error the user reads
                self.assertIn("npybridge:", first_error(result.stderr),
                              f"{compiler}: {case.name}: the first error is not npybridge's")

    def test_each_removed_spelling_names_its_replacement_with_gcc_and_clang(self):
        root = runfiles_root()
        removed = removed_spellings(root)
        self.assertGreaterEqual(len(removed), 20)
        jobs = [(compiler, entry) for compiler in compilers() for entry in removed]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda job: compile_source(job[0], job[1].use, root), jobs))
        for (compiler, entry), result in zip(jobs, results):
            with self.subTest(compiler=compiler, removed=entry.old):
                self.assertNotEqual(result.returncode, 0, f"{compiler}: {entry.old} still compiles")
                # the first error the user reads is the message, whole
                self.assertIn(entry.message(), first_error(result.stderr), f"{compiler}: {entry.old}\n{result.stderr}")


if __name__ == "__main__":
    sys.exit(unittest.main())
