"""docs/README.md, the map of the code, names every header of include/npybridge/ by its path there, so a new
header cannot go unexplained; every header under core/ is listed in the map's Python-free part; and a header that
reaches no Python API lives under core/.

Header length is a review signal, not a rule: CONTRIBUTING.md says when a long header deserves a second look.

Public headers read as synopses: the ones in SYNOPSIS open with their declarations and hold no `namespace detail`
(their mechanics live in detail/ files); every other header has at most one `namespace detail` block, but the
ones in MANY_DETAIL_BLOCKS, which are still to be split. Both lists only move one way.

Comments carry rationale, not measurements: at most COMMENT_WORDS_PER_1000_LINES words inside `//` and `/* */`
comments per 1,000 lines of include/ (string literals are not comments), and no timing, throughput or size figure
in a comment (those live in docs/performance.md beside the bench that shows them; a threshold such as "1 MiB" is a
contract, not a figure).
"""
import os
import pathlib
import re
import subprocess
import unittest

HERE = pathlib.Path(__file__).resolve().parent


def project_root():
    return pathlib.Path(os.environ.get("TEST_SRCDIR", HERE.parent.parent.parent)) / "npybridge"


def include_root():
    return project_root() / "include"


def named(name, text):
    # The whole path, not a piece of a longer one ("dtype.hpp" is not "numpy_dtype.hpp" nor "core/dtype.hpp").
    return re.search(r"(?<![\w/])" + re.escape(name) + r"(?!\w)", text) is not None


SYNOPSIS = [
    "arg.hpp", "array_quantization.hpp", "bind/nanobind.hpp", "bind/pybind11.hpp", "buffer.hpp", "convert.hpp",
    "core/adapter.hpp", "core/dtype.hpp", "core/layout.hpp", "core/lowbit.hpp", "core/owner.hpp",
    "core/quantization.hpp", "core/scalar_types.hpp", "core/tensor.hpp", "dlpack.hpp", "megbrain.hpp",
    "megbrain_compat.hpp", "megengine_compat.hpp", "numpy.hpp", "numpy_dtype.hpp", "policies.hpp", "python.hpp",
    "python_errors.hpp", "python_owner.hpp", "tracker.hpp", "user_dtypes.hpp",
]
MANY_DETAIL_BLOCKS = set()
# Python-free headers outside core/: the core's umbrella, and a part of arg.hpp that needs its declarations (to move
# with arg.hpp's Python-free tags). Only moves one way.
PYTHON_FREE_OUTSIDE_CORE = {"core.hpp", "detail/arg_typing.hpp"}
# The mechanism under detail/ rests on core/ and the Python basics, never on the facades it serves.
DETAIL_MAY_INCLUDE = {"python.hpp", "numpy.hpp"}
# Errors are written in detail/messages.hpp, from their facts. The files that still build message text by hand: only
# moves one way. (messages_dlpack.hpp is its DLPack part, parsed only where DLPack is; messages_arguments.hpp its
# part about keyword arguments, which policies.hpp reads without NumPy.)
BUILDS_MESSAGE_TEXT = set()
HAND_BUILT_THROW = re.compile(r"\bthrow\s+\w*error\s*\((?!\s*\))")  # python_error() carries Python's text
COMMENT_WORDS_PER_1000_LINES = 1100
COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)
MEASUREMENT = re.compile(r"\d(\.\d+)? ?(GB/s|MB/s|ms|ns|µs|MB|%)(?!\w)|\d ?s of parse")


def comments(text):
    return [m.group(0) for m in COMMENT_OR_STRING.finditer(text) if not m.group(0).startswith('"')]


class HeaderMapTest(unittest.TestCase):
    def test_synopsis_headers_declare_first_and_keep_mechanics_in_detail_files(self):
        for name in SYNOPSIS:
            with self.subTest(header=name):
                text = (include_root() / "npybridge" / name).read_text()
                self.assertNotIn("namespace detail {", text)
                self.assertIn("// ---- Definitions", text)
                self.assertIn("/// ```cpp", text.split("// ---- Definitions")[0], "one compiled example")

    def test_no_top_level_header_only_forwards(self):
        # The umbrellas include on purpose; a removed path stops the build (#error). Anything else declares.
        for header in sorted((include_root() / "npybridge").glob("*.hpp")):
            text = header.read_text()
            code = [line for line in text.splitlines() if line.strip() and not line.startswith("//")]
            if header.name in ("npybridge.hpp", "core.hpp") or (code and code[0].startswith("#error")):
                continue
            with self.subTest(header=header.name):
                self.assertTrue("namespace npybridge" in text or "#define NPYBRIDGE_" in text,
                                "it only includes another header: give it declarations of its own, or remove it")

    def test_every_public_header_shows_one_compiled_example(self):
        # Public: include/npybridge/*.hpp, core/*.hpp and bind/*.hpp that declare something (umbrellas and the removed
        # paths only include or stop the build); doc_blocks_alone_test compiles the examples.
        root = include_root() / "npybridge"
        public = sorted([*root.glob("*.hpp"), *(root / "core").glob("*.hpp"), *(root / "bind").glob("*.hpp")])
        shown = [h for h in public if "namespace npybridge" in h.read_text() or "#define NPYBRIDGE" in h.read_text()]
        self.assertGreaterEqual(len(shown), 25)
        for header in shown:
            with self.subTest(header=str(header.relative_to(root))):
                self.assertEqual(header.read_text().count("/// ```cpp"), 1, "one example, in `/// ```cpp` lines")

    def reached(self, name, seen=None):
        """The npybridge headers `name` includes, directly or not."""
        seen = set() if seen is None else seen
        text = (include_root() / "npybridge" / name).read_text()
        for found in re.findall(r"^#include <npybridge/([^>]+)>", text, re.MULTILINE):
            if found not in seen:
                seen.add(found)
                self.reached(found, seen)
        return seen

    def test_the_vocabulary_header_brings_only_the_config(self):
        # core/vocabulary.hpp (the policies, narrowing, lowbit_layout, lowbit_format): the standard library and the
        # core's config, and it compiles with no CPython or NumPy on the include path.
        self.assertEqual(self.reached("core/vocabulary.hpp"), {"core/config.hpp"})
        result = subprocess.run(["g++", "-x", "c++", "-std=c++17", "-fsyntax-only", "-I", str(include_root()), "-"],
                                input="#include <npybridge/core/vocabulary.hpp>\n", capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_the_options_header_adds_only_the_dtype(self):
        # core/options.hpp's to_tensor_options holds a dtype (a table row with its params): the vocabulary and
        # core/dtype.hpp, nothing else.
        self.assertEqual(self.reached("core/options.hpp") - {"core/dtype.hpp", "core/vocabulary.hpp"},
                         self.reached("core/dtype.hpp"))

    def test_one_detail_block_per_header(self):
        for name in self.headers():
            text = (include_root() / "npybridge" / name).read_text()
            # npybridge's own: the binding headers also open pybind11::detail / nanobind::detail, where the
            # libraries want their type_caster specializations.
            text = re.sub(r"^namespace (pybind11|nanobind) \{\nnamespace detail \{", "", text, flags=re.MULTILINE)
            blocks = len(re.findall(r"^namespace detail \{", text, re.MULTILINE))
            with self.subTest(header=name):
                if name in MANY_DETAIL_BLOCKS:
                    self.assertGreater(blocks, 1, "now one block: take it off MANY_DETAIL_BLOCKS")
                else:
                    self.assertLessEqual(blocks, 1, "more than one namespace detail block")

    def test_comments_are_lean(self):
        lines = words = 0
        for name in self.headers():
            text = (include_root() / "npybridge" / name).read_text()
            lines += text.count("\n") + 1
            words += sum(len(re.findall(r"[A-Za-z0-9_']+", c)) for c in comments(text))
        self.assertLessEqual(1000 * words / lines, COMMENT_WORDS_PER_1000_LINES,
                             f"{words} comment words over {lines} header lines: say it shorter")

    def test_no_measurement_in_a_comment(self):
        found = []
        for name in self.headers():
            for c in comments((include_root() / "npybridge" / name).read_text()):
                if "```" not in c and MEASUREMENT.search(c):
                    found.append(f"{name}: {c.strip()[:100]}")
        self.assertEqual(found, [], "move these figures to docs/performance.md")

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

    def test_detail_headers_include_no_facade(self):
        root = include_root() / "npybridge"
        for name in self.headers():
            if not name.startswith("detail/"):
                continue
            top = re.findall(r"#include <npybridge/(\w+\.hpp)>", (root / name).read_text())
            with self.subTest(header=name):
                self.assertEqual([h for h in top if h not in DETAIL_MAY_INCLUDE], [],
                                 "detail/ includes core/, detail/ and the Python basics only")

    def test_errors_of_the_conversion_paths_come_from_the_message_builder(self):
        root = include_root() / "npybridge"
        builds = {name for name in self.headers()
                  if name.startswith("detail/") and not name.startswith("detail/messages") and
                  HAND_BUILT_THROW.search((root / name).read_text())}
        self.assertEqual(sorted(builds - BUILDS_MESSAGE_TEXT), [],
                         "write the error in detail/messages.hpp (a function from its facts) and throw that")
        self.assertEqual(sorted(BUILDS_MESSAGE_TEXT - builds), [], "done: take it off BUILDS_MESSAGE_TEXT")

    def test_every_header_outside_core_needs_python(self):
        # A header that reaches no CPython or NumPy header (through npybridge's includes) belongs under core/.
        root = include_root() / "npybridge"
        includes = {name: re.findall(r"#include <npybridge/([\w/]+\.hpp)>", (root / name).read_text())
                    for name in self.headers()}
        python_facing = {"python.hpp", "numpy.hpp"}
        python_api = re.compile(r"\bPy[A-Z_]\w*|\bNPY_\w+|<Python\.h>")

        def reaches_python(name, seen):
            if name in python_facing or python_api.search((root / name).read_text()):
                return True
            seen.add(name)
            return any(reaches_python(inc, seen) for inc in includes.get(name, []) if inc not in seen)

        for name in self.headers():
            if (name.startswith("core/") or name in PYTHON_FREE_OUTSIDE_CORE or
                    re.search(r"^#error ", (root / name).read_text(), re.MULTILINE)):
                continue
            with self.subTest(header=name):
                self.assertTrue(reaches_python(name, set()), f"{name} needs no Python: it belongs under core/")


if __name__ == "__main__":
    unittest.main()
