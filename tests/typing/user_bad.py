# The same module used wrongly: mypy must report an error on each line marked "error".
import numpy as np

import MODULE as m

odd: m.intb4 = 3  # error: an int is not an intb4
m.qs8_scale("codes")  # error: a str is not an array
m.kind(3.5)  # error: no overload takes a float
m.dtype_name(3.5)  # error: a float is not a dtype-like
m.zeros(np.dtype(np.float32), "23")  # error: a str is not a sequence of ints
name: int = m.kind(np.zeros(3, np.float32))  # error: kind gives a str
