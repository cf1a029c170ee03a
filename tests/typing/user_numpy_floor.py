# What NumPy 2.4's own stubs let through: an array of another dtype where a parameter names float32 (mypy
# reports nothing for either line). stubs_test.py checks that this is still so: the day NumPy's stubs tell
# dtypes of arrays apart, user_bad.py gains these lines.
import numpy as np

import MODULE as m

m.must_borrow_f32(np.zeros(3, np.int16))
m.kind(np.zeros(3, np.float64))
