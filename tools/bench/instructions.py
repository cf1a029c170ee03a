"""Instructions per Python call, counted by valgrind (callgrind): a measure that no other load and no
memory placement moves, to compare changes to the conversion paths where timings of a few dozen ns
drift by 10-20 ns between builds (see README "Performance").

Usage (tools/bench/run instructions does this): instructions.py BAZEL_BIN
Each call runs in its own process twice, N and 2N times; the difference over N is the count for one call,
so interpreter start-up and imports cancel out. Needs valgrind (Debian package `valgrind`).
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

DRIVER = r"""
import sys
sys.path[:0] = [sys.argv[1]]
import numpy as np
import npybridge_bench as nbb
a = np.arange(1000, dtype=np.float32)
q = np.zeros(1000, dtype=np.dtype("int8", metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 0.5}}))
call = {"noop": lambda: nbb.noop(a), "bare_check": lambda: nbb.bare_check_0(a), "borrow": lambda: nbb.borrow_0(a),
        "borrow_scoped": lambda: nbb.borrow_scoped_0(a),
        "borrow_quantized": lambda: nbb.borrow_0(q), "share_existing": lambda: nbb.share_existing_0(), "share": lambda: nbb.share_0()}[sys.argv[2]]
call()  # first use: caches, free lists
def loop(n):
    for _ in range(n):
        call()
loop(int(sys.argv[3]))
"""

CALLS = ["noop", "bare_check", "borrow", "borrow_scoped", "borrow_quantized", "share_existing", "share"]
N = 20_000


def count(driver, module_dir, name, n):
    with tempfile.NamedTemporaryFile(suffix=".out") as out:
        result = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", sys.executable, driver, module_dir, name,
             str(n)],
            capture_output=True, text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0"))
        match = re.search(r"Collected : (\d+)", result.stderr) or re.search(r"refs:\s+([\d,]+)", result.stderr)
        if result.returncode != 0 or match is None:
            sys.exit(f"instructions.py: valgrind failed for {name}:\n{result.stderr[-2000:]}")
        return int(match.group(1).replace(",", ""))


def main(bazel_bin):
    if shutil.which("valgrind") is None:
        sys.exit("instructions.py: valgrind is not installed (apt-get install valgrind)")
    module_dir = str(pathlib.Path(bazel_bin) / "tools" / "bench")
    with tempfile.TemporaryDirectory() as scratch:
        driver = os.path.join(scratch, "driver.py")
        with open(driver, "w") as f:
            f.write(DRIVER)
        per_call = {name: (count(driver, module_dir, name, 2 * N) - count(driver, module_dir, name, N)) / N
                    for name in CALLS}
    loop = per_call["noop"]
    print("## Instructions per Python call (callgrind; the loop and a do-nothing call included)\n")
    print("| call | instructions | over the do-nothing call |")
    print("|---|---|---|")
    for name, value in per_call.items():
        print(f"| {name} | {value:.0f} | {value - loop:+.0f} |")


if __name__ == "__main__":
    main(sys.argv[1])
