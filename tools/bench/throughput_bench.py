"""Large conversions that change the element type or the layout, each beside what a user would call instead and
beside the floor, in one run: `throughput_bench.py BAZEL_BIN [--elements N] [--rounds R]` (BAZEL_BIN holds
examples/npybridge_example.so; tools/bench/run throughput_bench does this).

Every row converts the same source three ways, interleaved round by round: npybridge, the peer (NumPy's or
ml_dtypes' own call for the same job), and the floor (np.copyto of as many bytes as the source holds, between two
arrays already written). GB/s counts source bytes. "vs peer" and "vs floor" divide npybridge's speed by theirs: best
of the rounds (worst in parentheses; the machine is shared). A conversion into a new array also writes its result
into pages the kernel has just zeroed, which the floor never does: "new pages" is the time of np.full of the
result's bytes (a fresh array written, nothing read) over npybridge's, both best of the rounds: the share of
npybridge's time that any new result of that size costs ("-" where the result already exists). Results go to throughput_bench.json with NPYBRIDGE_BENCH_RESULTS.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402


def rows(nbx, n, ml_dtypes):
    """(name, source array, npybridge, peer, peer's name), each call converting all of the source."""
    rng = np.random.default_rng(0)
    f64 = rng.standard_normal(n) * 100
    f32 = f64.astype(np.float32)
    f16 = f32.astype(np.float16)
    ints = np.rint(f64).astype(np.int64)
    Tensor = nbx.Tensor
    qs8 = np.dtype(np.int8, metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 0.5}})
    qs4 = np.dtype(np.int8, metadata={"mgb_dtype": {"name": "QuantizedS4", "scale": 0.5}})
    codes = np.clip(np.rint(f32 / 0.5), -128, 127).astype(np.int8)
    square = f32[: 4096 * 4096].reshape(4096, 4096) if n >= 4096 * 4096 else f32.reshape(-1, 64)
    cube = ints[: 64 * 512 * 512].astype(np.int16).reshape(64, 512, 512) if n >= 64 * 512 * 512 else None
    odd = (ints % 16 * 2 - 15).astype(np.int8)
    small = np.clip(ints, -128, 127).astype(np.int32)
    whole = np.rint(f32)
    tiny64 = np.clip(ints, -2048, 2048)  # exact in float16
    past24 = (np.clip(ints, -1024, 1023) << 20).astype(np.int32)  # exact in float32, most past 2**24
    small_square = small[: 4096 * 4096].reshape(4096, 4096) if n >= 4096 * 4096 else small.reshape(-1, 64)
    tall = np.rint(f64).clip(-128, 127)
    tall = tall[: 7000 * 1000].reshape(1000, 7000) if n >= 7000 * 1000 else tall[: n - n % 64].reshape(-1, 64)
    c128 = (f64[: n // 2] + 1j * f64[n // 2: 2 * (n // 2)]).astype(np.complex128)
    c128_square = c128[: 2048 * 2048].reshape(2048, 2048) if c128.size >= 2048 * 2048 else c128.reshape(-1, 64)
    made = []
    if ml_dtypes is not None:
        bf = ml_dtypes.bfloat16
        made += [
            ("float32 -> BFloat16", f32, lambda: Tensor.from_numpy(f32, dtype="BFloat16"), lambda: f32.astype(bf),
             "astype(ml_dtypes.bfloat16)"),
            ("float64 -> BFloat16", f64, lambda: Tensor.from_numpy(f64, dtype="BFloat16"), lambda: f64.astype(bf),
             "astype(ml_dtypes.bfloat16)"),
        ]
        b16 = f32.astype(bf)
        made.append(("bfloat16 -> Float32", b16, lambda: Tensor.from_numpy(b16, dtype="Float32"),
                     lambda: b16.astype(np.float32), "astype(float32)"))
        tiny = np.clip(ints, -256, 255).astype(np.int32)  # exact in bfloat16
        made.append(("int32 -> BFloat16, checked", tiny, lambda: Tensor.from_numpy(tiny, dtype="BFloat16"),
                     lambda: tiny.astype(bf), "astype(ml_dtypes.bfloat16)"))
        tiny_unsigned = np.abs(tiny).astype(np.uint32)
        made.append(("uint32 -> BFloat16, checked", tiny_unsigned,
                     lambda: Tensor.from_numpy(tiny_unsigned, dtype="BFloat16"), lambda: tiny_unsigned.astype(bf),
                     "astype(ml_dtypes.bfloat16)"))
        tiny16 = tiny.astype(np.int16)
        made.append(("int16 -> BFloat16, checked", tiny16, lambda: Tensor.from_numpy(tiny16, dtype="BFloat16"),
                     lambda: tiny16.astype(bf), "astype(ml_dtypes.bfloat16)"))
    made += [
        ("float32 -> Float16, checked", f32, lambda: Tensor.from_numpy(f32, dtype="Float16"),
         lambda: f32.astype(np.float16), "astype(float16)"),
        ("float64 -> Float16, checked", f64, lambda: Tensor.from_numpy(f64, dtype="Float16"),
         lambda: f64.astype(np.float16), "astype(float16)"),
        ("float16 -> Float32", f16, lambda: Tensor.from_numpy(f16, dtype="Float32"), lambda: f16.astype(np.float32),
         "astype(float32)"),
        ("int32 -> Float16, checked", small, lambda: Tensor.from_numpy(small, dtype="Float16"),
         lambda: small.astype(np.float16), "astype(float16)"),
        ("int64 -> Float16, checked", tiny64, lambda: Tensor.from_numpy(tiny64, dtype="Float16"),
         lambda: tiny64.astype(np.float16), "astype(float16)"),
        ("int64 -> Float32, checked", ints, lambda: Tensor.from_numpy(ints, dtype="Float32"),
         lambda: ints.astype(np.float32), "astype(float32)"),
        ("int32 -> Float32, checked, past 2**24", past24, lambda: Tensor.from_numpy(past24, dtype="Float32"),
         lambda: past24.astype(np.float32), "astype(float32)"),
        ("int64 -> Int32, checked", ints, lambda: Tensor.from_numpy(ints), lambda: ints.astype(np.int32),
         "astype(int32)"),
        ("float64 -> Float32, checked", f64, lambda: Tensor.from_numpy(f64), lambda: f64.astype(np.float32),
         "astype(float32)"),
        ("int32 -> Int8, checked", small, lambda: Tensor.from_numpy(small, dtype="Int8"),
         lambda: small.astype(np.int8), "astype(int8)"),
        ("float32 -> Int16, checked", whole, lambda: Tensor.from_numpy(whole, dtype="Int16"),
         lambda: whole.astype(np.int16), "astype(int16)"),
        # Strided sources are read once too (stepped rows gathered, other views in slabs through the tiled copier,
        # then tested as stored); the peer makes the same C-order result.
        ("int32 4096x4096 .T -> Int8, checked", small_square.T,
         lambda: Tensor.from_numpy(small_square.T, dtype="Int8"), lambda: small_square.T.astype(np.int8, order="C"),
         "astype(int8, order='C')"),
        ("float64 1000x7000 .T -> Int8, checked", tall.T, lambda: Tensor.from_numpy(tall.T, dtype="Int8"),
         lambda: tall.T.astype(np.int8, order="C"), "astype(int8, order='C')"),
        ("int32 [:, ::2] -> Int8, checked", small_square[:, ::2],
         lambda: Tensor.from_numpy(small_square[:, ::2], dtype="Int8"),
         lambda: small_square[:, ::2].astype(np.int8, order="C"), "astype(int8, order='C')"),
        ("complex128 -> Complex64, checked", c128, lambda: Tensor.from_numpy(c128, dtype="Complex64"),
         lambda: c128.astype(np.complex64), "astype(complex64)"),
        ("complex128 2048x2048 .T -> Complex64, checked", c128_square.T,
         lambda: Tensor.from_numpy(c128_square.T, dtype="Complex64"),
         lambda: c128_square.T.astype(np.complex64, order="C"), "astype(complex64, order='C')"),
        ("quantize float32 -> QuantizedS8", f32, lambda: nbx.quantize(f32, qs8),
         lambda: np.clip(np.rint(f32 / np.float32(0.5)), -128, 127).astype(np.int8), "clip(rint(x / s)).astype"),
        ("quantize float32 -> QuantizedS4 (packed)", f32, lambda: nbx.quantize(f32, qs4),
         lambda: np.clip(np.rint(f32 / np.float32(0.5)), -8, 7).astype(np.int8), "clip(rint(x / s)).astype"),
        ("dequantize QuantizedS8 -> float32", codes.astype(qs8), lambda: nbx.dequantize(codes.astype(qs8)),
         lambda: codes.astype(np.float32) * np.float32(0.5), "astype(float32) * s"),
        ("float32 4096x4096 .T copy", square.T, lambda: Tensor.from_numpy(square.T, policy="copy"),
         lambda: np.ascontiguousarray(square.T), "np.ascontiguousarray"),
        ("int8 -> IntB4 pack", odd, lambda: Tensor.from_numpy(odd, dtype="IntB4"), lambda: odd.copy(),
         "a plain int8 copy"),
    ]
    # The same transposes into memory that is already there (copy_into): the copier without the kernel's
    # zeroing of fresh pages, beside np.copyto into an existing array.
    square_into = Tensor.from_numpy(np.empty(square.T.shape, np.float32), policy="copy")
    square_out = np.empty(square.T.shape, np.float32)
    made.insert(-1, ("float32 4096x4096 .T copy_into", square.T, lambda: square_into.copy_from(square.T),
                     lambda: np.copyto(square_out, square.T), "np.copyto"))
    if cube is not None:
        view = cube.transpose(2, 0, 1)
        made.insert(-1, ("int16 (64,512,512) .transpose(2,0,1) copy", view,
                         lambda: Tensor.from_numpy(view, policy="copy"), lambda: np.ascontiguousarray(view),
                         "np.ascontiguousarray"))
        view_into = Tensor.from_numpy(np.empty(view.shape, np.int16), policy="copy")
        view_out = np.empty(view.shape, np.int16)
        made.insert(-1, ("int16 (64,512,512) .transpose(2,0,1) copy_into", view,
                         lambda: view_into.copy_from(view), lambda: np.copyto(view_out, view), "np.copyto"))
    bytes_square = small_square.astype(np.int8)
    packed = Tensor.from_numpy(odd, dtype="IntB4")
    made.insert(-1, ("int8 4096x4096 .T copy", bytes_square.T, lambda: Tensor.from_numpy(bytes_square.T, policy="copy"),
                     lambda: np.ascontiguousarray(bytes_square.T), "np.ascontiguousarray"))
    made.append(("IntB4 -> int8 unpack", odd, lambda: packed.numpy(), lambda: odd.copy(), "a plain int8 copy"))
    return made


def result_bytes(result):
    """The bytes a conversion made: an array's, a tensor's storage, none when it filled an existing one."""
    if result is None:
        return 0
    return result.nbytes if isinstance(result, np.ndarray) else len(result.storage())


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("bazel_bin")
    parser.add_argument("--elements", type=int, default=16 << 20)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--only", default="", help="run the rows whose name holds this text")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.join(args.bazel_bin, "examples"))
    import npybridge_example as nbx
    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    print(f"### Large conversions (NumPy {np.__version__}, ml_dtypes "
          f"{getattr(ml_dtypes, '__version__', 'absent')}; {args.elements:,} elements, best (worst) of "
          f"{args.rounds} interleaved rounds; GB/s of source bytes)\n")
    print("| conversion | npybridge GB/s | peer | peer GB/s | vs peer | floor GB/s | vs floor | new pages |")
    print("|---|---|---|---|---|---|---|---|")
    saved = []
    for name, source, ours, peer, peer_name in rows(nbx, args.elements, ml_dtypes):
        if args.only not in name:
            continue
        nbytes = source.nbytes
        # Both written first: pages never written read as the kernel's shared zero page, which stays in cache
        # and made the floor 1.5x a real copy's speed.
        plain_from, plain_to = np.full(nbytes, 1, np.uint8), np.full(nbytes, 2, np.uint8)
        floor = lambda: np.copyto(plain_to, plain_from)  # noqa: E731
        made = result_bytes(ours())
        calls = [("ours", ours), ("peer", peer), ("floor", floor)]
        if made:
            calls.append(("new pages", lambda: np.full(made, 3, np.uint8)))
        times = {key: [] for key, _ in calls}
        for _ in range(args.rounds):
            for key, call in calls:
                start = time.perf_counter()
                result = call()
                times[key].append(time.perf_counter() - start)
                del result
        rate = {key: nbytes / min(value) / 1e9 for key, value in times.items()}
        slow = {key: nbytes / max(value) / 1e9 for key, value in times.items()}
        vs_peer, vs_peer_worst = rate["ours"] / rate["peer"], slow["ours"] / slow["peer"]
        vs_floor, vs_floor_worst = rate["ours"] / rate["floor"], slow["ours"] / slow["floor"]
        pages = f"{min(times['new pages']) / min(times['ours']):.2f}" if made else "-"
        print(f"| {name} | {rate['ours']:.2f} | `{peer_name}` | {rate['peer']:.2f} | {vs_peer:.2f} "
              f"({vs_peer_worst:.2f}) | {rate['floor']:.2f} | {vs_floor:.2f} ({vs_floor_worst:.2f}) | {pages} |")
        saved.append({"name": name, "bytes": nbytes, "peer": peer_name,
                      "seconds": {key: sorted(value) for key, value in times.items()}})
    results.save("throughput_bench", {"elements": args.elements, "rounds": args.rounds, "rows": saved})


if __name__ == "__main__":
    main()
