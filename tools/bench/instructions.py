"""Instructions per Python call, counted by valgrind (callgrind): a measure that no other load and no
memory placement moves, to compare changes to the conversion paths where timings of a few dozen ns
drift by 10-20 ns between builds (see README "Performance").

Usage (tools/bench/run instructions does this): instructions.py BAZEL_BIN
Each call runs in its own process twice, N and 2N times; the difference over N is the count for one call,
so interpreter start-up and imports cancel out. Needs valgrind (Debian package `valgrind`). The DLPack rows
use the example module's Tensor (bazel-bin/examples), as dlpack_bench.py does.
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
sys.path[:0] = [sys.argv[1], sys.argv[4]]
import numpy as np
import npybridge_bench as nbb
import npybridge_example as nbx
a = np.arange(1000, dtype=np.float32)
q = np.zeros(1000, dtype=np.dtype("int8", metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 0.5}}))
t = nbx.Tensor.from_numpy(a)
call = {"noop": lambda: nbb.noop(a), "bare_check": lambda: nbb.bare_check_0(a), "borrow": lambda: nbb.borrow_0(a),
        "borrow_scoped": lambda: nbb.borrow_scoped_0(a),
        "borrow_quantized": lambda: nbb.borrow_0(q), "share_existing": lambda: nbb.share_existing_0(), "share": lambda: nbb.share_0(),
        "numpy_from_dlpack": lambda: np.from_dlpack(a), "dlpack_export": lambda: np.from_dlpack(t),
        "dlpack_import": lambda: nbx.Tensor.from_dlpack(a)}[sys.argv[2]]
call()  # first use: caches, free lists
def loop(n):
    for _ in range(n):
        call()
loop(int(sys.argv[3]))
"""

CALLS = ["noop", "bare_check", "borrow", "borrow_scoped", "borrow_quantized", "share_existing", "share",
         "numpy_from_dlpack", "dlpack_export", "dlpack_import"]
N = 20_000


def count(driver, module_dirs, name, n):
    with tempfile.NamedTemporaryFile(suffix=".out") as out:
        result = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", sys.executable, driver, module_dirs[0],
             name, str(n), module_dirs[1]],
            capture_output=True, text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0"))
        match = re.search(r"Collected : (\d+)", result.stderr) or re.search(r"refs:\s+([\d,]+)", result.stderr)
        if result.returncode != 0 or match is None:
            sys.exit(f"instructions.py: valgrind failed for {name}:\n{result.stderr[-2000:]}")
        return int(match.group(1).replace(",", ""))


def main(bazel_bin):
    if shutil.which("valgrind") is None:
        sys.exit("instructions.py: valgrind is not installed (apt-get install valgrind)")
    module_dirs = [str(pathlib.Path(bazel_bin) / "tools" / "bench"), str(pathlib.Path(bazel_bin) / "examples")]
    with tempfile.TemporaryDirectory() as scratch:
        driver = os.path.join(scratch, "driver.py")
        with open(driver, "w") as f:
            f.write(DRIVER)
        per_call = {name: (count(driver, module_dirs, name, 2 * N) - count(driver, module_dirs, name, N)) / N
                    for name in CALLS}
    loop = per_call["noop"]
    print("## Instructions per Python call (callgrind; the loop and a do-nothing call included)\n")
    print("| call | instructions | over the do-nothing call |")
    print("|---|---|---|")
    for name, value in per_call.items():
        print(f"| {name} | {value:.0f} | {value - loop:+.0f} |")
    # Each half of a DLPack exchange against NumPy's own np.from_dlpack of an ndarray (the example module's
    # Tensor). With the loop's share in both (as a timing of the whole statement has it) and without it: the
    # do-nothing call also takes out one C call, so the second is the stricter.
    print("\n| each half / np.from_dlpack(a), instructions | ratio | over the do-nothing call | target |")
    print("|---|---|---|---|")
    for label, name in [("export: np.from_dlpack(t)", "dlpack_export"), ("import: Tensor.from_dlpack(a)", "dlpack_import")]:
        whole = per_call[name] / per_call["numpy_from_dlpack"]
        own = (per_call[name] - loop) / (per_call["numpy_from_dlpack"] - loop)
        print(f"| {label} | {whole:.2f} | {own:.2f} | <= 1.3 |")


if __name__ == "__main__":
    main(sys.argv[1])
