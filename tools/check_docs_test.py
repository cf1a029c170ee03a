"""tools/check_docs.py finds each kind of stale mention (a small checkout made here), and passes a correct one."""
import pathlib
import subprocess
import sys
import tempfile

CHECKER = pathlib.Path(__file__).resolve().with_name("check_docs.py")
GOOD = """# Title

## A section

[guide](docs/guide.md#the-guide), [here](#a-section), `include/npybridge/core/config.hpp`, `core/config.hpp`,
`npb::to_tensor(obj)`, `Meth::borrow(cn).for_reading()`, `//tests:real_test`, `python -m npybridge --cflags`,
`npybridge.get_include()`, `real_function`, `tools/real_tool`, `config.hpp`
"""
BAD = {
    "[guide](docs/dtypes.md)": "no docs/dtypes.md",
    "[guide](docs/guide.md#no-such-section)": "has no section #no-such-section",
    "`include/npybridge/detail/`": "no file or folder include/npybridge/detail/",
    "`npy::tensor2np`": "no C++ name tensor2np",
    "`//tests:gone_test`": "no Bazel target //tests:gone_test",
    "`python -m npybridge --nope`": "has no --nope",
    "`npybridge.get_nothing()`": "has no npybridge.get_nothing",
    "`set_tracker_gone`": "no name set_tracker_gone",
}


def checkout(readme):
    root = pathlib.Path(tempfile.mkdtemp())
    for folder in ("docs", "include/npybridge/core", "tests", "tools", "python/npybridge", "examples"):
        (root / folder).mkdir(parents=True)
    (root / "README.md").write_text(readme)
    (root / "docs" / "guide.md").write_text("# The guide\n")
    (root / "include/npybridge/core/config.hpp").write_text(
        "namespace npybridge { template <class T> T to_tensor(int); struct Meth { static Meth borrow(int); "
        "Meth for_reading(); }; void real_function(); }\n")
    (root / "tests" / "BUILD").write_text('cc_test(name = "real_test")\n')
    (root / "tools" / "BUILD").write_text('cc_binary(name = "real_tool")\n')
    (root / "python/npybridge/__init__.py").write_text("def get_include():\n    pass\n")
    (root / "python/npybridge/__main__.py").write_text('group.add_argument("--cflags")\n')
    return root


def run(root):
    return subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True, text=True)


def main():  # (an argument, the checkout's root, is accepted and not needed)
    good = run(checkout(GOOD))
    assert good.returncode == 0, good.stdout + good.stderr
    for mention, said in BAD.items():
        bad = run(checkout(GOOD + mention + "\n"))
        assert bad.returncode == 1 and said in bad.stdout and "README.md:8:" in bad.stdout, (mention, bad.stdout, bad.stderr)
    performance = checkout(GOOD)
    table = "# Performance\n\n## Copies\n\n| row | GB/s |\n|---|---|\n| copy | 10.5 |\n\n"
    (performance / "docs" / "performance.md").write_text(
        table + "The copy row, 10.5 GB/s (target >= 8.0 GB/s, NumPy 2.4, 64 MiB), `1.23x` in code.\n")
    named = run(performance)
    assert named.returncode == 0, named.stdout + named.stderr
    (performance / "docs" / "performance.md").write_text(table + "It ran 9.75 GB/s in another run, 3x NumPy.\n")
    retyped = run(performance)
    assert retyped.returncode == 1 and "performance.md:9: the figure 9.75 is in no table" in retyped.stdout and \
        "the figure 3 is in no table" in retyped.stdout, retyped.stdout
    # A figure its paragraph's row does not hold, though another row does: retyped from elsewhere, not this row's.
    rows = "# Performance\n\n## Copies\n\n| row | GB/s |\n|---|---|\n| plain copy | 10.5 |\n| strided copy | 4.25 |\n\n"
    (performance / "docs" / "performance.md").write_text(rows + "The plain copy row: 4.25 GB/s.\n")
    coincidental = run(performance)
    assert coincidental.returncode == 1 and \
        "performance.md:10: the figure 4.25 is in none of the rows its paragraph names" in coincidental.stdout, \
        coincidental.stdout
    (performance / "docs" / "performance.md").write_text(rows + "The plain copy row: 10.5 GB/s, a 3.5x target.\n")
    own_row = run(performance)
    assert own_row.returncode == 0, own_row.stdout + own_row.stderr
    long = run(checkout(GOOD + "line\n" * 300))
    assert long.returncode == 1 and "over 300" in long.stdout, long.stdout
    print(f"check_docs_test: a correct checkout passes, a README over 300 lines does not, nor a figure of "
          f"docs/performance.md's prose that its tables (or the rows its paragraph names) do not hold; {len(BAD)} kinds of stale mention are each found")


if __name__ == "__main__":
    main()
