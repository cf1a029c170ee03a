"""Runs this folder's pytest files against the example module Bazel built.

Bazel's py_test runs this file; it puts examples/ of the runfiles on sys.path
so `import npybridge_example` finds the freshly built extension.
"""
import os
import pathlib
import sys

import pytest


def main():
    here = pathlib.Path(__file__).resolve().parent
    runfiles = pathlib.Path(os.environ.get("TEST_SRCDIR", here.parent.parent.parent)) / "npybridge"
    sys.path.insert(0, str(runfiles / "examples"))
    import numpy
    print(f"npybridge python tests: Python {sys.version.split()[0]}, NumPy {numpy.__version__}")
    tests = sys.argv[1:] or [str(here)]
    return pytest.main(["-q", "-p", "no:cacheprovider", *tests])


if __name__ == "__main__":
    sys.exit(main())
