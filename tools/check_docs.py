"""Every file, folder, section, Bazel target, C++ name and Python helper the docs mention exists.

Reads README.md, CONTRIBUTING.md, docs/*.md and examples/README.md (not CHANGELOG.md: it names what was) and
checks, outside fenced code blocks:
  - links [text](path#section): the file exists, and the section is a heading of it (GitHub's anchors);
  - `paths` in backticks (a/b, or a name ending in .md .hpp .cpp .h .py .cmake .bzl .txt .pat): a file or
    folder of the checkout, looked up from the checkout's root, the doc's folder, include/ and
    include/npybridge/;
  - `//package:target` labels: the package's BUILD defines the target (or holds the file);
  - C++ names in backticks (`npb::to_tensor`, `npybridge::megbrain::from_megdnn`, `Meth::borrow(cn)`, ...):
    the last name is declared somewhere in include/ (or, for a test's helper, tests/ and examples/);
  - `python -m npybridge --option` and `npybridge.function()`: the package has them;
that the README stays within 300 lines, and that every measured figure in docs/performance.md's prose is a cell of
the rows its paragraph names, or of its section's tables when it names none (prose names rows; it does not retype
them, and a figure of an earlier run is history).
Prints each miss as FILE:LINE: what; exits 1 when there is one. Usage: check_docs.py [ROOT]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
DOCS = [p for p in (ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "examples" / "README.md") if p.exists()] + [
        *sorted((ROOT / "docs").glob("*.md"))]
PATH_SUFFIXES = (".md", ".hpp", ".cpp", ".h", ".py", ".cmake", ".bzl", ".txt", ".pat", ".in", ".svg")
# Paths a doc names that are not the checkout's: a user's files, generated files, other projects' files.
NOT_OURS = re.compile(r"^(/|~|\$|<|\.\./|\.venv|bazel-|build/|site-packages|megengine/|megbrain/|megdnn/|src/|dnn/|"
                      r"pybind11/|nanobind/|boost/|numpy/|my_module|readme_|third_party/npybridge|share/|lib/|"
                      r"usr/|tmp/|home/|https?:)")


def anchors(path, cache={}):
    if path not in cache:
        slugs = set()
        in_code = False
        for line in path.read_text().splitlines():
            if line.startswith("```"):
                in_code = not in_code
            elif not in_code and line.startswith("#"):
                title = line.lstrip("#").strip().lower()
                slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
                base, n = slug, 1
                while slug in slugs:
                    slug, n = f"{base}-{n}", n + 1
                slugs.add(slug)
        cache[path] = slugs
    return cache[path]


def text_lines(doc):
    """(line number, line) outside fenced blocks and HTML comments."""
    in_code = False
    for number, line in enumerate(doc.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if not in_code:
            yield number, re.sub(r"<!--.*?-->", "", line)


def identifiers(folders):
    words = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".hpp", ".h", ".cpp") and path.is_file():
                words.update(re.findall(r"[A-Za-z_~][A-Za-z0-9_]*", path.read_text(errors="replace")))
    return words


HEADER_WORDS = identifiers(["include"])
TEST_WORDS = identifiers(["tests", "examples"])
KNOWN_WORDS = HEADER_WORDS | TEST_WORDS | {
    word for folder in ("python", "tools", "tests", "cmake", "third_party", "examples") for path in (ROOT / folder).rglob("*")
    if path.is_file() and path.suffix in (".py", ".bzl", ".cmake", ".txt", "", ".tpl", ".in") and "__pycache__" not in path.parts
    for word in re.findall(r"[A-Za-z_]\w*", path.read_text(errors="replace"))} | {
    word for path in ROOT.glob("*") if path.is_file() and path.suffix in ("", ".bzl", ".toml", ".txt")
    for word in re.findall(r"[A-Za-z_]\w*", path.read_text(errors="replace"))}
# Other projects' names the docs compare against: MegEngine's helper and MegBrain, pybind11.
EXTERNAL = {"get_tracker", "begin_set_tracker", "end_set_tracker", "mgb_assert", "cpp_function"}
KNOWN_WORDS |= EXTERNAL
PACKAGE = (ROOT / "python" / "npybridge" / "__init__.py").read_text()
MAIN = (ROOT / "python" / "npybridge" / "__main__.py").read_text()


SKIP_DIRS = {".git", ".venv", "__pycache__"}
ALL_NAMES = {p.name for p in ROOT.rglob("*") if not (SKIP_DIRS & set(p.relative_to(ROOT).parts))
             and not p.relative_to(ROOT).parts[0].startswith("bazel-")}


def find_path(doc, token):
    """A path from the root, the doc's folder or the include folders; a bare file name anywhere in the
    checkout; package/target for a Bazel target (tools/dtype_table)."""
    token = token.rstrip("/").split("#")[0]
    for base in (ROOT, doc.parent, ROOT / "include", ROOT / "include" / "npybridge"):
        if (base / token).exists():
            return True
    if "/" not in token:
        return token in ALL_NAMES
    package, _, name = token.rpartition("/")
    return bazel_target(f"//{package}:{name}")


def bazel_target(label):
    match = re.fullmatch(r"//([\w/.-]*):([\w.%+-]+)", label)
    if not match:
        return not re.fullmatch(r"//[\w/.-]*", label) or (ROOT / label[2:] / "BUILD").exists() or label.endswith("...")
    package, name = match.groups()
    build = ROOT / package / "BUILD"
    if not build.exists():
        return False
    text = build.read_text()
    if f'"{name}"' in text or (ROOT / package / name).exists():
        return True
    for pattern in re.findall(r'name = "([^"]*%s[^"]*)"', text):  # names made in a list comprehension
        if re.fullmatch(re.escape(pattern).replace("%s", r"[\w.-]+"), name):
            return True
    return False


def check(doc):
    misses = []
    for number, line in text_lines(doc):
        where = f"{doc.relative_to(ROOT)}:{number}"
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"https?:|mailto:", target):
                continue
            file_part, _, section = target.partition("#")
            path = (doc.parent / file_part).resolve() if file_part else doc
            if not path.exists():
                misses.append(f"{where}: link to {target}: no {file_part}")
            elif section and path.suffix == ".md" and section not in anchors(path):
                misses.append(f"{where}: link to {target}: {path.relative_to(ROOT)} has no section #{section}")
        for token in re.findall(r"`([^`]+)`", line):
            token = token.strip()
            if re.fullmatch(r"/+", token):
                continue
            if token.startswith("//"):
                for label in token.split():
                    if label.startswith("//") and not bazel_target(label.rstrip(",.")):
                        misses.append(f"{where}: no Bazel target {label}")
                continue
            if token.startswith("python -m npybridge"):
                for option in re.findall(r"--[\w-]+", token):
                    if f'"{option}"' not in MAIN:
                        misses.append(f"{where}: python -m npybridge has no {option}")
                continue
            call = re.fullmatch(r"npybridge\.(\w+)\(.*\)", token)
            if call:
                if not re.search(rf"^(def |class )?{call.group(1)}\b", PACKAGE, re.M):
                    misses.append(f"{where}: the Python package has no npybridge.{call.group(1)}")
                continue
            cpp = re.fullmatch(r"(?:[A-Za-z_]\w*(?:<[^>]*>)?::)+(~?[A-Za-z_]\w*)(?:<.*>)?(?:\(.*\))?(?:\.\w+\(.*\))*", token)
            if cpp and not token.startswith(("std::", "boost::", "pybind11::", "py::", "nb::", "nanobind::")):
                for name in re.findall(r"(?:::|\.)(~?[A-Za-z_]\w*)", token):
                    if name not in HEADER_WORDS and name not in TEST_WORDS:
                        misses.append(f"{where}: no C++ name {name} (in `{token}`)")
                continue
            snake = re.fullmatch(r"([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(\(\))?", token)
            if snake and snake.group(1) not in KNOWN_WORDS:
                misses.append(f"{where}: no name {snake.group(1)} in the headers, tests, tools or package")
                continue
            if " " in token or NOT_OURS.match(token) or re.search(r"[*{}<>$=]|\.\.\.|/\d|^/+$", token):
                continue
            if "/" not in token and token.endswith(".h"):
                continue  # a header of CPython's, NumPy's, MegEngine's or a binding library's
            looks_like_path = ("/" in token and re.fullmatch(r"[\w./-]+", token) and not token.startswith("-")) or \
                (token.endswith(PATH_SUFFIXES) and re.fullmatch(r"[\w./-]+", token))
            if looks_like_path and not find_path(doc, token):
                misses.append(f"{where}: no file or folder {token}")
    return misses


README_LINES = 300  # the front door: what is past it belongs in docs/

# A measured figure: a decimal, or a whole number with a unit of time, rate or ratio.
FIGURE = re.compile(r"(?<![\w.,/-])(\d[\d,]*\.\d+|\d[\d,]*(?=\s?(?:x|%|ns|us|µs|ms|s|MB|GB/s)(?![\w/]| \d)))")
# Not a measurement: a target, a version, a size or a count of things.
NOT_MEASURED_BEFORE = re.compile(r"(?:<=|>=|target(?: of)?|within|outside|NumPy|pybind11|nanobind|ml_dtypes|Python|g\+\+|GCC|"
                                 r"clang|C\+\+|Debian|Bazel|release|MegEngine)\s*$")
NOT_MEASURED_AFTER = re.compile(r"\s?(?:KiB|MiB|GiB|Ki|Mi|Gi|bytes?|cores?|rounds?|runs?|calls?|elements?)\b|x target\b")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def sections_of(doc):
    """Per section (a `# ` or `## ` heading and what is under it): its table rows as (label, the numbers of the other
    cells), header rows left out, and its prose as paragraphs of (line number, line)."""
    sections, current, previous = [], None, ""
    for number, line in text_lines(doc):
        if line.startswith(("# ", "## ")):
            current = ([], [[]])
            sections.append(current)
        elif current is None:
            pass
        elif line.lstrip().startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if set("".join(cells)) <= set("-: "):  # the separator: the row above it was the header
                if current[0] and current[0][-1][2] == previous:
                    current[0].pop()
            else:
                current[0].append((cells[0].replace("`", ""), set(NUMBER.findall(" ".join(cells[1:]))), line))
        elif not line.startswith("#"):
            if line.strip():
                current[1][-1].append((number, line))
            elif current[1][-1]:
                current[1].append([])
        previous = line
    return sections


def figures(doc):
    """Each measured figure of a prose paragraph that its section's tables do not hold: in a row the paragraph
    names (its label, words and all) when it names one, else in any row of the section."""
    misses = []
    for rows, paragraphs in sections_of(doc):
        everywhere = set().union(*(numbers for _, numbers, _ in rows)) if rows else set()
        for paragraph in paragraphs:
            text = " ".join(line for _, line in paragraph).replace("`", "")
            named = [numbers for label, numbers, _ in rows
                     if len(label) > 2 and re.search(r"[A-Za-z]", label) and label in text]
            cells = set().union(*named) if named else everywhere
            for number, line in paragraph:
                line = re.sub(r"`[^`]*`|\[[^]]*\]\([^)]*\)", lambda m: " " * len(m.group()), line)
                for figure in FIGURE.finditer(line):
                    if figure.group(1) in cells or NOT_MEASURED_BEFORE.search(line[:figure.start()]) or \
                            NOT_MEASURED_AFTER.match(line, figure.end()):
                        continue
                    where = "none of the rows its paragraph names" if named else "no table of its section"
                    misses.append(f"{doc.relative_to(ROOT)}:{number}: the figure {figure.group(1)} is in {where}: "
                                  "name the row instead, or move a figure of an earlier run to CHANGELOG.md")
    return misses


def main():
    misses = [miss for doc in DOCS for miss in check(doc)]
    performance = ROOT / "docs" / "performance.md"
    if performance.exists():
        misses += figures(performance)
    readme = ROOT / "README.md"
    if readme.exists() and len(readme.read_text().splitlines()) > README_LINES:
        misses.append(f"README.md: {len(readme.read_text().splitlines())} lines, over {README_LINES}: move detail "
                      "to docs/")
    for miss in misses:
        print(miss)
    print(f"check_docs: {len(DOCS)} documents, {len(misses)} missing mentions")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
