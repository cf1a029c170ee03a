#!/usr/bin/env python3
"""docs/api.md from the public headers: every public name with its signature, its `///` summary and its header.

A public name is one declared at namespace scope in a public header (include/npybridge/*.hpp, core/*.hpp, bind/*.hpp)
outside any `detail` namespace, or a macro those headers leave defined. Overloads and re-declarations of a name
share its entry; one without a `///` of its own after a documented one (a definition after its declaration) adds
no signature. The summary is the first sentence of the `///` comment just before a declaration.

    tools/api_list.py            print docs/api.md
    tools/api_list.py --write    rewrite docs/api.md
    tools/api_list.py --check    exit 1 when docs/api.md is stale or a public name has no `///`
"""
import dataclasses
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = """# API

Every public name of npybridge: what each header declares outside `detail`, with its signature and the first
sentence of its `///` comment, headers in the order a reader meets them (the conversions first; removed
spellings are in upgrading.md). The headers say the rest. Written by `tools/api_list.py` from the headers
(`tools/api_list.py --write`); a test fails when this page is stale or a public name has no `///` comment.
"""


@dataclasses.dataclass
class Entity:
    name: str
    kind: str
    signatures: list
    summary: str


# The order a reader meets the library in: the conversions and their options, dtypes, errors, the other ways in and
# out, the binding libraries, MegBrain, then the parts underneath. A header not named here follows, by path.
READING_ORDER = [
    "convert.hpp", "core/options.hpp", "core/vocabulary.hpp", "policies.hpp", "core/dtype.hpp", "numpy_dtype.hpp",
    "core/errors.hpp", "python_errors.hpp", "array_quantization.hpp", "core/quantization.hpp", "core/tensor.hpp",
    "core/adapter.hpp", "core/layout.hpp", "core/lowbit.hpp", "dlpack.hpp", "core/dlpack_abi.hpp", "buffer.hpp",
    "arg.hpp", "bind/pybind11.hpp", "bind/nanobind.hpp", "megbrain.hpp", "megbrain_compat.hpp",
    "megengine_compat.hpp", "user_dtypes.hpp", "tracker.hpp", "python.hpp", "numpy.hpp", "python_owner.hpp", "core/owner.hpp",
    "core/scalar_types.hpp", "core/reflect.hpp", "core/version.hpp",
]


def public_headers(include):
    folder = include / "npybridge"
    headers = [*sorted(folder.glob("*.hpp")), *sorted((folder / "core").glob("*.hpp")), *sorted((folder / "bind").glob("*.hpp"))]
    headers = [h for h in headers if not re.search(r'^#error "npybridge: <npybridge/\S+> was removed', h.read_text(),
                                                   re.MULTILINE)]
    rank = {name: i for i, name in enumerate(READING_ORDER)}
    return sorted(headers, key=lambda h: (rank.get(h.relative_to(folder).as_posix(), len(rank)),
                                          h.relative_to(folder).as_posix()))


def removed(entity):
    """A removed spelling: docs/upgrading.md lists it, not this page."""
    return entity.summary.startswith("Removed")


def summary_of(doc_lines):
    """The comment's first sentence: up to the first period outside parentheses that ends a word."""
    text = " ".join(line.strip() for line in doc_lines).strip()
    depth = 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "." and depth <= 0 and (i + 1 == len(text) or text[i + 1] == " ") and text[i - 1] != ".":
            return text[:i + 1]
    return text


def strip_templates(text):
    """The declaration without its leading template <...> heads."""
    while text.startswith("template"):
        depth, i = 0, text.index("<")
        for i in range(text.index("<"), len(text)):
            depth += {"<": 1, ">": -1}.get(text[i], 0)
            if depth == 0:
                break
        text = text[i + 1:].lstrip()
    return text


def name_and_kind(declaration):
    text = strip_templates(declaration)
    text = re.sub(r"\[\[[^\]]*\]\]\s*", "", text)
    text = re.sub(r"^decltype\(auto\)\s*", "", text)
    if match := re.match(r"(?:using|namespace)\s+(\w+)\s*=", text):
        return match.group(1), "alias"
    if match := re.match(r"namespace\s+(\w+)$", text):
        return match.group(1), "namespace"
    if text.startswith("using namespace"):
        return "", "definition"  # a using-directive: no new name
    if match := re.match(r"using\s+[\w:]*::(\w+)$", text):
        return match.group(1), "using-declaration"
    if match := re.match(r"enum(?:\s+class)?\s+(\w+)", text):
        return match.group(1), "enum"
    if match := re.match(r"(?:class|struct|union)\s+(?:\w+\s+)*?(\w+)\s*(?:final\s*)?(?:[:{<;]|$)", text):
        return match.group(1), "class"
    if match := re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", text):
        return match.group(1), "variable"  # a function pointer
    head = re.split(r"\s*=\s*", text, 1)[0] if "=" in text.split("(", 1)[0] else text
    if "(" in head:
        before = head.split("(", 1)[0] if not re.search(r"operator\s*\(\)", head) else head.split("operator", 1)[0] + "operator()"
        if re.search(r"::\s*(operator\s*\S+|~?\w+)\s*$", before):
            return "", "definition"  # of a member or of a detail function declared elsewhere
        match = re.search(r"(operator\s*\S+|~?\w+)\s*$", before)
        return (match.group(1).replace(" ", ""), "function") if match else (None, None)
    if re.search(r"::\s*\w+\s*(?:\{.*)?$", head):
        return "", "definition"  # of a static member declared in its class
    match = re.search(r"(\w+)\s*(?:\{.*)?$", head)
    return (match.group(1), "variable") if match else (None, None)


def initializes(statement):
    """True when the declaration so far has reached its `=`: a brace after it opens an initializer."""
    head = strip_templates(" ".join(statement.split()))
    while re.search(r"\([^()]*\)", head):  # what is inside parentheses (default arguments) does not count
        head = re.sub(r"\([^()]*\)", "", head)
    return re.search(r"(?<![=!<>])=(?!=)", re.sub(r"operator\s*\S*=", "", head)) is not None


def scan(text):
    """(doc lines, declaration) for each declaration at a public namespace scope, and the macros left defined."""
    found, pending, statement = [], [], ""
    scopes = []  # one per open brace: "ns", "private ns" or "body"
    i, n = 0, len(text)
    at_line_start = True

    def public_scope():  # "inner": braces inside a declaration's parentheses (a default argument's {})
        return all(s in ("ns", "inner") for s in scopes)

    in_example = False  # a synopsis's `/// Example:` block documents the header, not the declaration below it
    while i < n:
        c = text[i]
        if c not in " \t\n" and not text.startswith("///", i):
            in_example = False
        if at_line_start and c == "#":  # a preprocessor line (with its continuations)
            end = i
            while True:
                end = text.find("\n", end)
                if end == -1 or text[end - 1] != "\\":
                    break
                end += 1
            end = n if end == -1 else end
            line = text[i:end]
            if public_scope() and (match := re.match(r"#define\s+(NPYBRIDGE_\w+)", line)):
                found.append((list(pending), "#define " + re.sub(r"\s*\\\n\s*", " ", line[8:]).split("  ")[0].strip(),
                              match.group(1)))
            if not line.startswith("#ifndef") and not line.startswith("#if "):
                pending = []
            if re.fullmatch(r"(\s*\w+\([^;]*\))+\s*", statement):
                statement = ""  # macro calls (a helper macro's uses)
            i = end
            continue
        if text.startswith("///", i):
            end = text.find("\n", i)
            end = n if end == -1 else end
            in_example = in_example or (not pending and text[i + 3:end].strip().startswith("Example"))
            if in_example:
                i = end
                continue
            if not text.startswith("///<", i) and not statement.strip() and public_scope():
                pending.append(text[i + 3:end])
            i = end
            continue
        if text.startswith("//", i):
            if text.startswith("// ----", i):
                pending = []  # a section banner: the comment above it is not the next declaration's
            end = text.find("\n", i)
            i = n if end == -1 else end
            continue
        if text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        if c in "\"'":
            end = i + 1
            while text[end] != c:
                end += 2 if text[end] == "\\" else 1
            if public_scope():
                statement += text[i:end + 1]
            i = end + 1
            continue
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        if c == "{" and public_scope() and (statement.count("(") > statement.count(")") or initializes(statement)):
            scopes.append("inner")
            statement += c
            i += 1
            continue
        if c == "{":
            head = " ".join(statement.split())
            if match := re.match(r"(?:inline\s+)?namespace\s*(?:\[\[.*?\]\]\s*)?(\w*)", head):
                name = match.group(1)
                if public_scope() and pending and name != "detail":
                    found.append((list(pending), f"namespace {name}", None))  # a namespace with a /// of its own
                scopes.append("private ns" if name == "detail" or not public_scope() else "ns")
                statement, pending = "", []
            else:
                if public_scope() and not head.startswith("extern"):
                    found.append((list(pending), head, None))
                    statement, pending = "", []
                scopes.append("body")
            i += 1
            continue
        if c == "}":
            closed = scopes.pop()
            i += 1
            if closed == "inner":
                statement += c
                continue
            pending = []
            if closed == "body" and public_scope():
                j = i
                while j < n and text[j] in " \t\n":
                    j += 1
                if j < n and text[j] == ";":
                    i = j + 1
                statement = ""
            continue
        if public_scope():
            if c == ";":
                head = " ".join(statement.split())
                if head:
                    found.append((list(pending), head, None))
                statement, pending = "", []
            else:
                statement += c
        i += 1
    undefined = set(re.findall(r"^#undef\s+(\w+)", text, re.MULTILINE))
    return [item for item in found if item[2] not in undefined]


def entities(include):
    """{header path: [Entity]}, and the names without a `///` comment (header, name)."""
    listed, undocumented = {}, []
    for header in public_headers(include):
        path = header.relative_to(include).as_posix()
        by_name = {}
        for doc, declaration, macro in scan(header.read_text()):
            if macro:
                name, kind = macro, "macro"
            else:
                if declaration.startswith("template <>") or declaration.startswith("static_assert"):
                    continue  # a specialization or a check: no new name
                name, kind = name_and_kind(declaration)
                if kind == "definition":
                    continue
                if name is None:
                    raise SystemExit(f"{path}: cannot read a name from: {declaration}")
            signature = re.sub(r"\s*=\s*$", "", declaration)
            if kind == "variable":
                signature = re.split(r"\s+=\s+|\{", signature, 1)[0]
            if kind in ("class", "enum"):
                signature = re.split(r"\s*(?:(?<!:):(?!:)|\{)", signature, 1)[0]
            entity = by_name.setdefault(name, Entity(name, kind, [], ""))
            if entity.summary and not doc:
                continue  # the definition of a declaration above, or an overload its comment covers
            if signature not in entity.signatures:
                entity.signatures.append(signature)
            if doc and not entity.summary:
                entity.summary = summary_of(doc)
        for entity in by_name.values():
            if not entity.summary:
                undocumented.append((path, entity.name))
        listed[path] = list(by_name.values())
    return listed, undocumented


def render(include):
    listed, _ = entities(include)
    out = [HEADER]
    for path, items in listed.items():
        if not items:
            continue
        out.append(f"## `<{path}>`\n")
        for entity in items:
            if removed(entity):
                continue
            out.append(f"- **`{entity.name}`** ({entity.kind}): {entity.summary}")
            for signature in entity.signatures:
                out.append(f"  - `{signature}`")
        out.append("")
    return "\n".join(out)


def main(argv):
    root = pathlib.Path(argv[argv.index("--root") + 1]) if "--root" in argv else ROOT
    include, doc = root / "include", root / "docs" / "api.md"
    text = render(include)
    if "--write" in argv:
        doc.write_text(text)
        return 0
    if "--check" in argv:
        problems = [f"{path}: {name} has no /// comment" for path, name in entities(include)[1]]
        if not doc.exists() or doc.read_text() != text:
            problems.append("docs/api.md is stale: run tools/api_list.py --write")
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
