"""No header of npybridge is over 600 lines: a header is one concept a reader can hold.

When a header's detail outgrows its API, the detail gets headers of its own (docs/README.md lists them). The
limit counts every line, comments included, of each include/npybridge/**/*.hpp.
"""
import os
import pathlib
import unittest

LIMIT = 600
HERE = pathlib.Path(__file__).resolve().parent


def include_root():
    return pathlib.Path(os.environ.get("TEST_SRCDIR", HERE.parent.parent.parent)) / "npybridge" / "include"


class HeaderSizeTest(unittest.TestCase):
    def test_every_header_is_at_most_600_lines(self):
        headers = sorted((include_root() / "npybridge").rglob("*.hpp"))
        self.assertGreaterEqual(len(headers), 30, f"too few headers found under {include_root()}")
        self.assertTrue(any(h.parent.name == "detail" for h in headers), "the detail headers were not found")
        for header in headers:
            with self.subTest(header=header.name):
                lines = len(header.read_text().splitlines())
                self.assertLessEqual(lines, LIMIT, f"{header.relative_to(include_root())} has {lines} lines: split it")


if __name__ == "__main__":
    unittest.main()
