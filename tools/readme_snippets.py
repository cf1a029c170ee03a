"""Writes every ```cpp block of README.md into one C++ file, so the build proves they compile.

#include lines are gathered at the top; each block becomes its own namespace.
Usage: readme_snippets.py README.md OUT.cpp
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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
