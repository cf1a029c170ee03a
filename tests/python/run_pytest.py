"""Runs this folder's pytest files against the example module Bazel built.

Bazel's py_test runs this file; it puts examples/ of the runfiles on sys.path
so the freshly built extensions import. `--module=NAME` picks the example
module the suite tests (conftest.py: NPYBRIDGE_EXAMPLE_MODULE, which fresh
interpreters started by a test inherit); the default is npybridge_example.
`--bindings=pybind11` (or nanobind, or both comma-separated, the default) picks
the binding modules test_bindings.py tests (NPYBRIDGE_BINDINGS).
Under Bazel's test sharding (shard_count in BUILD) each shard runs every
TEST_TOTAL_SHARDS-th test of the collection, starting at TEST_SHARD_INDEX.
"""
import os
import pathlib
import sys

import pytest


class Shard:
    """Keeps the tests of one shard: every `total`-th of the collection, from `index`."""

    def __init__(self, index, total):
        self.index, self.total = index, total

    def pytest_collection_modifyitems(self, config, items):
        mine = [item for n, item in enumerate(items) if n % self.total == self.index]
        config.hook.pytest_deselected(items=[item for n, item in enumerate(items) if n % self.total != self.index])
        items[:] = mine


def shard_plugins():
    total = int(os.environ.get("TEST_TOTAL_SHARDS", "1"))
    if total <= 1:
        return []
    if os.environ.get("TEST_SHARD_STATUS_FILE"):
        pathlib.Path(os.environ["TEST_SHARD_STATUS_FILE"]).touch()  # tells Bazel this runner shards
    return [Shard(int(os.environ["TEST_SHARD_INDEX"]), total)]


def main():
    here = pathlib.Path(__file__).resolve().parent
    runfiles = pathlib.Path(os.environ.get("TEST_SRCDIR", here.parent.parent.parent)) / "npybridge"
    sys.path.insert(0, str(runfiles / "examples"))
    args = sys.argv[1:]
    for option, variable in [("--module=", "NPYBRIDGE_EXAMPLE_MODULE"), ("--bindings=", "NPYBRIDGE_BINDINGS")]:
        for arg in [a for a in args if a.startswith(option)]:
            os.environ[variable] = arg[len(option):]
            args.remove(arg)
    import numpy
    module = os.environ.get("NPYBRIDGE_EXAMPLE_MODULE", "npybridge_example")
    print(f"npybridge python tests: Python {sys.version.split()[0]}, NumPy {numpy.__version__}, module {module}")
    tests = args or [str(here)]
    return pytest.main(["-q", "-p", "no:cacheprovider", *tests], plugins=shard_plugins())


if __name__ == "__main__":
    sys.exit(main())
