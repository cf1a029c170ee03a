"""Typed signatures: the stubs each binding library's generator writes for a module built with npybridge's casters
(pybind11-stubgen for the pybind11 example module, nanobind.stubgen with npybridge's pattern file for the
nanobind one) parse and type-check with mypy (zero errors), a typed user script passes, and the same script
used wrongly fails on exactly the lines marked "error" (docs/guide.md, "Stubs").

Usage: stubs_test.py EXAMPLE_MODULE_OR_DIR PATTERNS (tests/typing/BUILD passes them)."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
# The folder of the example modules (the first argument names one of them, or the folder) and the pattern file.
FIRST = pathlib.Path(os.path.abspath(sys.argv[1])) if len(sys.argv) > 1 else None
EXAMPLES = FIRST.parent if FIRST is not None and FIRST.is_file() else FIRST
PATTERNS = pathlib.Path(os.path.abspath(sys.argv[2])) if len(sys.argv) > 2 else None


def run(*command, cwd):
    # The generators import the module (PYTHONPATH); mypy reads the stubs written under cwd/stubs (MYPYPATH).
    env = dict(os.environ, PYTHONPATH=str(EXAMPLES), MYPYPATH=str(pathlib.Path(cwd) / "stubs"),
               MYPY_CACHE_DIR=str(pathlib.Path(cwd) / ".mypy_cache"))
    return subprocess.run([sys.executable, *command], cwd=cwd, env=env, text=True, capture_output=True)


class StubsTest(unittest.TestCase):
    def stubs(self, module, folder):
        if "pybind11" in module:
            made = run("-m", "pybind11_stubgen", module, "-o", "stubs", cwd=folder)
            self.assertEqual(made.returncode, 0, made.stderr)
            # Every signature resolves; the one name pybind11-stubgen cannot import is the class attribute
            # `intbN.dtype` (NumPy names its class `numpy.dtype[intbN]`, as for ml_dtypes' types).
            errors = [line for line in made.stderr.splitlines() if "ERROR" in line]
            self.assertTrue(all(re.search(r"Can't find/import 'numpy\.dtype\[intb[124]\]'", e) for e in errors),
                            "\n".join(errors))
        else:
            out = pathlib.Path(folder) / "stubs" / f"{module}.pyi"
            out.parent.mkdir()
            made = run("-m", "nanobind.stubgen", "-m", module, "-p", str(PATTERNS), "-o", str(out), cwd=folder)
            self.assertEqual(made.returncode, 0, made.stderr)
        return pathlib.Path(folder) / "stubs" / f"{module}.pyi"

    def mypy(self, folder, *files):
        return run("-m", "mypy", "--no-error-summary", "--hide-error-context", *files, cwd=folder)

    def check(self, module):
        with tempfile.TemporaryDirectory() as folder:
            stub = self.stubs(module, folder)
            text = stub.read_text()
            # Overloads on dtype are told apart by their NumPy scalar type; the MegDNN name rides in the metadata.
            self.assertIn("numpy.typing.NDArray[numpy.int8]", text)
            self.assertIn("QuantizedS8", text)
            checked = self.mypy(folder, str(stub))
            self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
            for name in ("user_ok.py", "user_bad.py", "user_numpy_floor.py"):
                (pathlib.Path(folder) / name).write_text((HERE / name).read_text().replace("MODULE", module))
            good = self.mypy(folder, "user_ok.py")
            self.assertEqual(good.returncode, 0, good.stdout + good.stderr)
            bad = self.mypy(folder, "user_bad.py")
            wanted = {i + 1 for i, line in enumerate((HERE / "user_bad.py").read_text().splitlines())
                      if "# error" in line}
            reported = {int(m.group(1)) for m in re.finditer(r"user_bad\.py:(\d+): error", bad.stdout)}
            self.assertEqual(reported, wanted, bad.stdout)
            # A floor set by NumPy's stubs, not by npybridge's (docs/guide.md, "Stubs").
            floor = self.mypy(folder, "user_numpy_floor.py")
            self.assertEqual(floor.returncode, 0, "NumPy's stubs now tell array dtypes apart: move "
                             "user_numpy_floor.py's lines into user_bad.py\n" + floor.stdout)

    def test_pybind11_stubs(self):
        self.check("npybridge_pybind11_example")

    def test_nanobind_stubs(self):
        self.check("npybridge_nanobind_example")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
