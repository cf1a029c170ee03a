"""Every function in include/ is one a reader can hold: at most 60 lines and a cyclomatic complexity of 25, as
`lizard -l cpp -L 60 -C 25 include/` measures them (a longer or more branched function is usually a decision and
its execution interleaved: the planner's job, core/detail/plan.hpp)."""
import os
import pathlib
import sys
import unittest

import lizard

MAX_LINES = 60
MAX_COMPLEXITY = 25


class FunctionSizeTest(unittest.TestCase):
    def test_every_function_is_short_and_plain(self):
        include = pathlib.Path(os.environ["TEST_SRCDIR"]) / "npybridge" / "include"
        headers = sorted(include.rglob("*.hpp"))
        self.assertGreater(len(headers), 40)
        over = []
        functions = 0
        for header in headers:
            for function in lizard.analyze_file(str(header)).function_list:
                functions += 1
                if function.length > MAX_LINES or function.cyclomatic_complexity > MAX_COMPLEXITY:
                    over.append(f"{header.relative_to(include)}:{function.start_line}: {function.name} "
                                f"({function.length} lines, CCN {function.cyclomatic_complexity})")
        self.assertGreater(functions, 500, "lizard found the functions")
        self.assertEqual(over, [], f"functions over {MAX_LINES} lines or CCN {MAX_COMPLEXITY}: split them")


if __name__ == "__main__":
    sys.exit(unittest.main())
