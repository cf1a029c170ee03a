"""Prints a benchmark run (Google Benchmark JSON) as a table of ratios to its baselines.

Usage: ratios.py RESULTS.json
Each benchmark binary's pairs are listed in PAIRS below: (measured, baseline, what it shows).
"""
import json
import sys

PAIRS = {
    "dtype_bench": [
        ("resolve_quantized", "resolve_plain_float32", "quantized dtype object vs plain float32 (target <= 3x)"),
        ("resolve_quantized_reference_style", "resolve_quantized",
         "reference-style per-call PyDict_GetItemString vs npybridge (target >= 3x)"),
        ("parse_quantized_metadata", "resolve_plain_float32", "first sight of a quantized dtype object (parse) vs plain"),
        ("resolve_quantized_reference_style", "parse_quantized_metadata",
         "reference-style vs npybridge's full parse"),
        ("make_quantized_numpy_dtype", "make_plain_numpy_dtype", "dtype -> np.dtype: quantized (cached) vs plain"),
    ],
    "copy_bench": [
        *[(f"copy_into_float32/{n}", f"numpy_copy_into_float32/{n}",
           f"copy_into, same dtype (straight in) / numpy copying into the same memory, {label}")
          for n, label in ((262144, "256 Ki"), (16777216, "16 Mi"))],
        *[(f"copy_into_int64_checked/{n}", f"numpy_cast_int64_into_int32/{n}",
           f"copy_into, checked int64 -> Int32 (staged: every value checked before any is written) / numpy's unchecked "
           f"cast into the same memory, {label}")
          for n, label in ((262144, "256 Ki"), (16777216, "16 Mi"))],
        ("npybridge_copy_float32_T", "numpy_ascontiguous_float32_T",
         "4096 x 4096 float32 .T into a new tensor / np.ascontiguousarray (target <= 0.4)"),
        ("npybridge_copy_float32_T", "contiguous_copy_float32",
         "the same / a contiguous copy of the same bytes into a new tensor (target <= 3)"),
        ("npybridge_copy_int16_perm", "numpy_ascontiguous_int16_perm",
         "(64, 512, 512) int16 transpose(2, 0, 1) / np.ascontiguousarray (target <= 0.4)"),
        ("npybridge_copy_int16_perm", "contiguous_copy_int16",
         "the same / a contiguous copy of the same bytes (target <= 3)"),
        ("npybridge_checked_narrowing_float64_T", "numpy_ascontiguous_astype_float64_T",
         "4096 x 4096 float64 .T, checked narrowing to Float32 / ascontiguousarray(x.T).astype(float32) (target <= 0.5)"),
    ],
    "lowbit_bench": [
        *[(f"memcpy_unpacked_bytes", f"{kind}/{dtype}", f"{kind} {dtype} throughput / memcpy throughput (target >= 0.7)")
          for kind in ("pack", "unpack") for dtype in ("IntB1", "IntB2", "IntB4", "QuantizedS4")],
        ("memcpy_unpacked_bytes", "pack_into_existing/IntB4",
         "pack into an existing tensor (via a temporary, so it stays untouched on error) / memcpy"),
        *[(f"{kind}_per_element/{dtype}", f"{kind}/{dtype}", f"{kind} speedup over the per-element loop")
          for kind in ("pack", "unpack") for dtype in ("IntB1", "IntB2", "IntB4")],
        *[("memcpy_unpacked_bytes", f"{kind}_per_element/{dtype}", f"per-element {kind} {dtype} / memcpy")
          for kind in ("pack", "unpack") for dtype in ("IntB1", "IntB4")],
    ],
}


def main(path):
    data = json.load(open(path))
    binary = data["context"]["executable"].rsplit("/", 1)[-1]
    times = {b["name"].removesuffix("/real_time"): b["real_time"] for b in data["benchmarks"] if b.get("run_type", "iteration") == "iteration"}
    unit = {b["name"].removesuffix("/real_time"): b["time_unit"] for b in data["benchmarks"]}
    print(f"## {binary}\n")
    print("| benchmark | time |")
    print("|---|---|")
    for name, value in times.items():
        print(f"| {name} | {value:.3g} {unit[name]} |")
    print()
    print("| ratio (time / time) | value | meaning |")
    print("|---|---|---|")
    for measured, baseline, meaning in PAIRS.get(binary, []):
        if measured in times and baseline in times:
            print(f"| {measured} / {baseline} | {times[measured] / times[baseline]:.2f} | {meaning} |")
    print()


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        main(argument)
