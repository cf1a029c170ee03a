"""The README's pybind11 and nanobind modules (tests/BUILD builds them from the README as written) work: both, or
those named as arguments (readme_pybind11_test: the suite against Debian's pybind11 builds no nanobind module)."""
import importlib
import os
import pathlib
import sys
import unittest

import numpy as np

HERE = pathlib.Path(os.environ.get("TEST_SRCDIR", pathlib.Path(__file__).resolve().parent.parent.parent)) / "npybridge" / "tests"
sys.path.insert(0, str(HERE))

NAMES = sys.argv[1:] or ["readme_pybind11", "readme_nanobind"]
del sys.argv[1:]  # (unittest.main reads the rest)
MODULES = [importlib.import_module(name) for name in NAMES]


class ReadmeBindingsTest(unittest.TestCase):
    def test_both_modules_do_what_the_readme_says(self):
        for module in MODULES:
            with self.subTest(module=module.__name__):
                self.assertEqual(module.rows(np.zeros((3, 2), np.float32)), 3)
                with self.assertRaisesRegex(TypeError, r"NDArray\[numpy.float32\].*Float32.*ndim=2"):
                    module.rows(np.zeros(3, np.float32))  # ndim 1: declined, the constraint named
                with self.assertRaises(module.ValueRangeError):
                    module.rows(np.full((2, 2), 1e300))  # taken, but a value does not fit Float32
                made = module.empty(np.dtype("int8"), 4)
                self.assertEqual((made.shape, made.dtype), ((4,), np.int8))
                self.assertRegex(module.rows.__doc__, r"NDArray\[numpy\.float32\].*Float32.*ndim=2")


if __name__ == "__main__":
    unittest.main()
