"""docs/README.md, the map of the code, names every header of include/npybridge/ by its path there, so a new
header cannot go unexplained; and every header under core/ is listed in the map's Python-free part.

Header length is a review signal, not a rule: CONTRIBUTING.md says when a long header deserves a second look.
"""
import os
import pathlib
import re
import unittest

HERE = pathlib.Path(__file__).resolve().parent


def project_root():
    return pathlib.Path(os.environ.get("TEST_SRCDIR", HERE.parent.parent.parent)) / "npybridge"


def include_root():
    return project_root() / "include"


def named(name, text):
    # The whole path, not a piece of a longer one ("dtype.hpp" is not "numpy_dtype.hpp" nor "core/dtype.hpp").
    return re.search(r"(?<![\w/])" + re.escape(name) + r"(?!\w)", text) is not None


class HeaderMapTest(unittest.TestCase):
    def headers(self):
        headers = sorted((include_root() / "npybridge").rglob("*.hpp"))
        self.assertGreaterEqual(len(headers), 30, f"too few headers found under {include_root()}")
        return [str(h.relative_to(include_root() / "npybridge")) for h in headers]

    def test_docs_readme_names_every_header(self):
        text = (project_root() / "docs" / "README.md").read_text()
        missing = [name for name in self.headers() if not named(name, text)]
        self.assertEqual(missing, [], "docs/README.md does not list these headers (add a line each)")

    def test_the_core_headers_are_in_the_python_free_part_of_the_map(self):
        text = (project_root() / "docs" / "README.md").read_text()
        core_part = text[text.index("Python-free core"):text.index("Python-facing")]
        core = [name for name in self.headers() if name.startswith("core/")]
        self.assertGreaterEqual(len(core), 15)
        self.assertEqual([name for name in core if not named(name, core_part)], [],
                         "docs/README.md lists these core/ headers outside its Python-free part")


if __name__ == "__main__":
    unittest.main()
