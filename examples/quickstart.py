"""npybridge in five steps: NumPy arrays <-> npybridge tensors, through the example module.

Run it with `tools/quickstart` (it builds the module first).
"""
import numpy as np

import npybridge_example as nbx
from npybridge_example import Tensor


def step(title):
    print(f"\n== {title}")


step("1. A C-contiguous float32 array is borrowed: the tensor uses the array's memory")
a = np.arange(6, dtype=np.float32).reshape(2, 3)
t = Tensor.from_numpy(a)
print(f"array data at {a.ctypes.data:#x}, tensor data at {t.data_address:#x}: same memory = {t.data_address == a.ctypes.data}")
print(f"{t!r}  borrowed={t.borrowed}  shape={t.shape}  strides={t.strides} (in elements)")
a[0, 0] = 42.0
print(f"write through the array, read through the tensor: {t.numpy()[0, 0]}")

step("2. When memory cannot be shared, npybridge copies and says why")
wide = np.arange(4)  # int64: MegBrain has no 64-bit dtypes, so it is narrowed (checked) to Int32
t = Tensor.from_numpy(wide)
print(f"{t!r}  borrowed={t.borrowed}\n  reason: {t.copy_reason}")
swapped = np.arange(4, dtype=">f4")
print(f"big-endian float32: {Tensor.from_numpy(swapped).copy_reason}")
try:
    Tensor.from_numpy(swapped, policy="must_borrow")
except nbx.ConversionError as error:
    print(f"policy='must_borrow' refuses instead:\n  {type(error).__name__}: {error}")

step("3. A quantized array keeps its scale, exactly as MegEngine writes it")
qint8 = np.dtype("int8", metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 0.05}})
q = np.array([-100, 0, 100], dtype=qint8)
t = Tensor.from_numpy(q)
print(f"{t!r}  borrowed={t.borrowed}  scale={t.scale}")
back = t.numpy()
print(f"back in numpy: {back.dtype} with metadata {back.dtype.metadata}")
print(f"real values (q * scale): {back.astype(np.float32) * t.scale}")

step("4. An int4 tensor packs two values per byte (MegBrain's row-aligned layout)")
qint4 = np.dtype("int8", metadata={"mgb_dtype": {"name": "QuantizedS4", "scale": 0.5}})
four_bit = np.array([[-8, -1, 7], [1, 2, 3]], dtype=qint4)
t = Tensor.from_numpy(four_bit)
print(f"{t!r}: {four_bit.size} values in {len(t.storage())} bytes: {t.storage().hex(' ')}")
print(f"(each row of 3 starts on its own byte; reason for the copy: {t.copy_reason})")
print(f"unpacked again: {t.numpy().tolist()}")

step("5. Bad input gets a clear error naming the culprit")
try:
    Tensor.from_numpy(np.array([[1, 3], [5, 2**40]]))
except nbx.ValueRangeError as error:
    print(f"{type(error).__name__} (a ConversionError, TypeError and ValueError):\n  {error}")
try:
    Tensor.from_numpy(np.array([1, 3, 5, 6], dtype=np.int8), dtype="IntB4")
except nbx.ConversionError as error:
    print(f"{type(error).__name__}:\n  {error}")
bad_meta = np.dtype("uint8", metadata={"mgb_dtype": {"name": "Quantized8Asymm", "scale": 0.1, "zero_point": 300}})
try:
    Tensor.from_numpy(np.zeros(2, dtype=bad_meta))
except nbx.MetadataError as error:
    print(f"{type(error).__name__}:\n  {error}")
