"""tools/bench/compare on one cheap benchmark against REV = HEAD (tools/test runs this in its second lane): the
report's shape, not its timings. Prints "//tools/bench:compare_test PASSED" when every check holds.

Usage: compare_test.py (with the numpy2 venv's Python); NPYBRIDGE_COMPARE_WORK_OUTPUT_BASE keeps the work
tree's build out of the output base the Bazel suites use."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
COMPARE = ROOT / "tools" / "bench" / "compare"
RATIO_PAIRS = 5  # dtype_bench's pairs in ratios.py


def run(*args):
    return subprocess.run([str(COMPARE), *args], cwd=ROOT, text=True, capture_output=True)


def main():
    done = run("HEAD", "dtype_bench", "--rounds", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    assert lines[0].startswith(f"## HEAD ({head}) against the work tree ({head}"), lines[0]
    assert "2 alternating rounds" in lines[0], lines[0]
    table = [line for line in lines if line.startswith("| dtype_bench |")]
    assert len(table) == RATIO_PAIRS, done.stdout
    for line in table:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert len(cells) == 6, line
        assert re.fullmatch(r"\d+\.\d\d-\d+\.\d\d", cells[2]) and re.fullmatch(r"\d+\.\d\d-\d+\.\d\d", cells[3]), line
        assert re.fullmatch(r"\d+\.\d{3}", cells[4]), line
        assert cells[5] in ("slower", "faster", "same (ranges overlap)"), line
    unknown = run("HEAD", "no_such_bench")
    assert unknown.returncode != 0 and "unknown bench no_such_bench" in unknown.stderr, unknown.stderr
    bad = run("not-a-commit-anywhere")
    assert bad.returncode != 0 and "REV 'not-a-commit-anywhere' is not a commit" in bad.stderr, bad.stderr
    print("//tools/bench:compare_test PASSED")


if __name__ == "__main__":
    main()
