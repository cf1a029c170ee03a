"""Each ```cpp block of the README and docs/guide.md compiles on its own, as a reader copies it: its own includes
and namespace alias, nothing from the blocks before it (//tests:readme_snippets_test compiles them together, and
would hide a block that leans on another's includes). So does the example in each public header's synopsis (a
```cpp block inside its `///` comments; bind/'s with this interpreter's pybind11 and nanobind), with -Wall -Wextra
-Werror and -fvisibility=hidden (as docs/building.md asks of an extension). g++ -fsyntax-only in C++17, NumPy's and
CPython's headers as a build system hands them over."""
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sysconfig
import unittest

import numpy

ROOT = pathlib.Path(os.environ.get("TEST_SRCDIR", pathlib.Path(__file__).resolve().parent.parent.parent)) / "npybridge"
DOCS = ["README.md", "docs/guide.md"]


def blocks():
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for match in re.finditer(r"```cpp\n(.*?)```", text, re.S):
            yield f"{doc}:{text.count(chr(10), 0, match.start()) + 1}", match.group(1)


def header_examples():
    """The ```cpp blocks of the public headers' /// comments."""
    include = ROOT / "include" / "npybridge"
    for header in sorted([*include.glob("*.hpp"), *(include / "core").glob("*.hpp"), *(include / "bind").glob("*.hpp")]):
        if header.name.startswith("megbrain"):
            continue  # MegEngine's headers needed: //tests:megbrain_header_examples.so compiles these
        text = header.read_text()
        for match in re.finditer(r"^/// ```cpp\n(.*?)^/// ```$", text, re.S | re.M):
            code = "\n".join(line[4:] if line.startswith("/// ") else line[3:] for line in match.group(1).splitlines())
            yield f"{header.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}", code + "\n"


def binding_includes():
    """pybind11's and nanobind's headers from this interpreter, for the bind/ headers' examples."""
    import nanobind
    import pybind11
    return ["-isystem", pybind11.get_include(), "-isystem", nanobind.include_dir()]


def compile_alone(source, warnings=()):
    extra = binding_includes() if "npybridge/bind/" in source else []
    command = ["g++", "-x", "c++", "-std=c++17", "-fsyntax-only", *warnings, "-I", str(ROOT / "include"),
               "-isystem", numpy.get_include(), "-isystem", sysconfig.get_paths()["include"], *extra, "-"]
    result = subprocess.run(command, input=source, capture_output=True, text=True)
    return result.returncode, result.stderr


class DocBlocksAloneTest(unittest.TestCase):
    def test_each_block_compiles_alone(self):
        found = list(blocks())
        self.assertGreaterEqual(len(found), 8, "the README and the guide lost their C++ blocks")
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda block: compile_alone(block[1]), found))
        for (where, _), (code, errors) in zip(found, results):
            with self.subTest(block=where):
                self.assertEqual(code, 0, f"the block at {where} does not compile alone:\n{errors[:2000]}")

    def test_each_header_example_compiles_alone_without_warnings(self):
        found = list(header_examples())
        self.assertGreaterEqual(len(found), 1, "the public headers lost their examples")
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda block: compile_alone(block[1], ["-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"]), found))
        for (where, _), (code, errors) in zip(found, results):
            with self.subTest(block=where):
                self.assertEqual(code, 0, f"the example at {where} does not compile alone:\n{errors[:2000]}")


if __name__ == "__main__":
    unittest.main()
