"""Writes every ```cpp block of README.md into one C++ file, so the build proves they compile.

#include lines are gathered at the top; each block becomes its own namespace.
Usage: readme_snippets.py README.md OUT.cpp [KIND]
With KIND (pybind11, nanobind), writes the one ```cpp KIND block instead, as it is: a whole extension module.
"""
import re
import sys


def main(readme, out):
    blocks = re.findall(r"```cpp\n(.*?)```", open(readme).read(), re.S)
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
    with open(out, "w") as f:
        f.write("// Generated from README.md by tools/readme_snippets.py: compiling is passing.\n")
        for include in dict.fromkeys(includes):
            f.write(include + "\n")
        f.write("\nnamespace npb = npybridge;\n\n")
        f.write("\n".join(bodies))
    if not blocks:
        sys.exit("readme_snippets: README.md has no ```cpp blocks")


def module_block(readme, out, kind):
    blocks = re.findall(r"```cpp " + re.escape(kind) + r"\n(.*?)```", open(readme).read(), re.S)
    if len(blocks) != 1:
        sys.exit(f"readme_snippets: README.md must have one ```cpp {kind} block, has {len(blocks)}")
    with open(out, "w") as f:
        f.write(f"// Generated from README.md's ```cpp {kind} block by tools/readme_snippets.py.\n")
        f.write(blocks[0])


if __name__ == "__main__":
    if len(sys.argv) == 4:
        module_block(sys.argv[1], sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1], sys.argv[2])
