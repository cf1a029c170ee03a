"""No header of npybridge is over 600 lines: a header is one concept a reader can hold.

When a header's detail outgrows its API, the detail gets headers of its own. The limit counts every line,
comments included, of each include/npybridge/**/*.hpp. And docs/README.md, the map of the code, names every
one of them by its path under include/npybridge/, so a new header cannot go unexplained.
"""
import os
import pathlib
import re
import unittest

LIMIT = 600
HERE = pathlib.Path(__file__).resolve().parent


def project_root():
    return pathlib.Path(os.environ.get("TEST_SRCDIR", HERE.parent.parent.parent)) / "npybridge"


def include_root():
    return project_root() / "include"


class HeaderSizeTest(unittest.TestCase):
    def test_every_header_is_at_most_600_lines(self):
        headers = sorted((include_root() / "npybridge").rglob("*.hpp"))
        self.assertGreaterEqual(len(headers), 30, f"too few headers found under {include_root()}")
        self.assertTrue(any(h.parent.name == "detail" for h in headers), "the detail headers were not found")
        for header in headers:
            with self.subTest(header=header.name):
                lines = len(header.read_text().splitlines())
                self.assertLessEqual(lines, LIMIT, f"{header.relative_to(include_root())} has {lines} lines: split it")

    def test_docs_readme_names_every_header(self):
        text = (project_root() / "docs" / "README.md").read_text()
        headers = sorted((include_root() / "npybridge").rglob("*.hpp"))
        names = [str(h.relative_to(include_root() / "npybridge")) for h in headers]
        # The whole path, not a piece of a longer one ("dtype.hpp" is not "numpy_dtype.hpp").
        missing = [name for name in names if not re.search(r"(?<![\w/])" + re.escape(name) + r"(?!\w)", text)]
        self.assertEqual(missing, [], "docs/README.md does not list these headers (add a line each)")


if __name__ == "__main__":
    unittest.main()
