"""docs/megbrain.md's module (tests/BUILD builds it from docs/megbrain.md as written, against MegEngine's headers and
library) works, beside MegEngine itself."""
import os
import pathlib
import sys
import unittest

import numpy as np

HERE = pathlib.Path(os.environ.get("TEST_SRCDIR", pathlib.Path(__file__).resolve().parent.parent.parent)) / "npybridge" / "tests"
sys.path.insert(0, str(HERE))

import readme_megbrain  # noqa: E402


class ReadmeMegBrainTest(unittest.TestCase):
    def test_twice_copies_narrowing_with_a_check(self):
        np.testing.assert_array_equal(readme_megbrain.twice(np.arange(6.0).reshape(2, 3)), [[0, 2, 4], [6, 8, 10]])
        self.assertEqual(readme_megbrain.twice(np.arange(3)).dtype, np.float32)
        with self.assertRaises(readme_megbrain.ValueRangeError):
            readme_megbrain.twice(np.array([1e300]))

    def test_view_shares_memory_both_ways(self):
        a = np.arange(12, dtype=np.int16).reshape(3, 4)[::-1, ::2]
        v = readme_megbrain.view(a)
        self.assertTrue(np.shares_memory(a, v))
        np.testing.assert_array_equal(v, a)
        with self.assertRaises(readme_megbrain.ConversionError):
            readme_megbrain.view(np.arange(3, dtype=">i4"))  # byte-swapped: must_borrow says why

    def test_beside_megengine(self):
        import megengine
        from megengine.core.tensor.dtype import qint8
        q = megengine.tensor(np.array([1.0, -2.0], np.float32)).astype(qint8(0.5)).numpy()
        v = readme_megbrain.view(q)
        self.assertEqual(v.dtype.metadata, q.dtype.metadata)
        self.assertTrue(np.shares_memory(v, q))


if __name__ == "__main__":
    unittest.main()
