# A typed user of a module built with npybridge's casters (MODULE is the module under test): mypy must accept
# every line. tests/typing/stubs_test.py checks it against the stubs each binding library's generator writes.
import numpy as np
import numpy.typing as npt

import MODULE as m

floats: npt.NDArray[np.float32] = np.zeros(3, np.float32)
codes: npt.NDArray[np.int8] = np.zeros((2, 2), np.int8)
first: str = m.kind(floats)  # overloads on dtype are told apart
second: str = m.kind(codes)
scale: float = m.qs8_scale(codes)
either: str = m.float_or_asymm(np.zeros(3, np.uint8))
made: npt.NDArray[np.generic] = m.zeros(np.dtype(np.float32), [2, 3])
name: str = m.dtype_name(np.float32)
odd: m.intb4 = m.intb4(3)
back: npt.NDArray[np.generic] = m.identity(floats)
