"""Writes every ```cpp block of the given Markdown files (or headers' `///` comments) into one C++ file, so the
build proves they compile.

#include lines are gathered at the top; each block becomes its own namespace.
Usage: readme_snippets.py --out OUT.cpp FILE.md...
       readme_snippets.py --block KIND --out OUT.cpp FILE.md...
With --block KIND (pybind11, nanobind, megbrain, my_module), writes the one ```cpp KIND block of the files
instead, as it is: a whole extension module.
"""
import argparse
import re
import sys


def blocks_of(path):
    text = open(path).read()
    if not path.endswith(".hpp"):
        return re.findall(r"```cpp\n(.*?)```", text, re.S)
    return ["\n".join(line[4:] if line.startswith("/// ") else line[3:] for line in block.splitlines()) + "\n"
            for block in re.findall(r"^/// ```cpp\n(.*?)^/// ```$", text, re.S | re.M)]


def all_blocks(files, out):
    blocks = [b for f in files for b in blocks_of(f)]
    includes, bodies = [], []
    for number, block in enumerate(blocks):
        lines = []
        for line in block.splitlines():
            if line.startswith("#include"):
                includes.append(line.split("//")[0].strip())
            elif line.strip() == "namespace npb = npybridge;":
                continue
            else:
                lines.append(line)
        bodies.append(f"namespace readme_block_{number} {{\n" + "\n".join(lines) + f"\n}}  // namespace readme_block_{number}\n")
    if not blocks:
        sys.exit(f"readme_snippets: no ```cpp blocks in {', '.join(files)}")
    with open(out, "w") as f:
        f.write(f"// Generated from {', '.join(files)} by tools/readme_snippets.py: compiling is passing.\n")
        for include in dict.fromkeys(includes):
            f.write(include + "\n")
        f.write("\nnamespace npb = npybridge;\n\n")
        f.write("\n".join(bodies))


def one_block(files, out, kind):
    blocks = [b for f in files for b in re.findall(r"```cpp " + re.escape(kind) + r"\n(.*?)```", open(f).read(), re.S)]
    if len(blocks) != 1:
        sys.exit(f"readme_snippets: {', '.join(files)} must have one ```cpp {kind} block, has {len(blocks)}")
    with open(out, "w") as f:
        f.write(f"// Generated from the ```cpp {kind} block of {', '.join(files)} by tools/readme_snippets.py.\n")
        f.write(blocks[0])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--block")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    if args.block:
        one_block(args.files, args.out, args.block)
    else:
        all_blocks(args.files, args.out)


if __name__ == "__main__":
    main()
