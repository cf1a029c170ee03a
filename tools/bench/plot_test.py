"""tools/bench/plot.py on a small saved run: every chart is written, is SVG, carries the run's caption and
the libraries' labels; a missing input is an error naming the file."""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree

HERE = pathlib.Path(__file__).resolve().parent
PLOT = HERE / "plot.py"
SAVED = HERE / "testdata" / "results"


class PlotTest(unittest.TestCase):
    def run_plot(self, results, out):
        return subprocess.run([sys.executable, str(PLOT), str(results), str(out)], capture_output=True, text=True)

    def test_every_chart_is_drawn_with_the_runs_caption(self):
        run = json.loads((SAVED / "run.json").read_text())
        with tempfile.TemporaryDirectory() as folder:
            done = self.run_plot(SAVED, folder)
            self.assertEqual(done.returncode, 0, done.stderr)
            for name, must in [("perf-calls.svg", ["npybridge borrow", "pybind11 array_t", "nanobind ndarray",
                                                   "np.asarray", "floor"]),
                               ("perf-build.svg", ["convert.hpp", "array_t", "stripped"]),
                               ("perf-copies.svg", ["ascontiguousarray", "pack IntB4", "memcpy"]),
                               ("perf-conversions.svg", ["BFloat16", "astype(float16)", "a plain copy"])]:
                path = pathlib.Path(folder) / name
                self.assertTrue(path.exists(), name)
                text = path.read_text()
                ElementTree.fromstring(text)  # well-formed SVG
                self.assertIn("<svg", text)
                for word in must + [run["commit"], run["date"]]:
                    self.assertIn(word.replace("&", "&amp;"), text, (name, word))

    def test_named_charts_are_drawn_from_their_benches_alone(self):
        with tempfile.TemporaryDirectory() as folder:
            partial = pathlib.Path(folder) / "results"
            partial.mkdir()
            for name in ("run.json", "throughput_bench.json"):
                shutil.copy(SAVED / name, partial / name)
            out = pathlib.Path(folder) / "out"
            done = subprocess.run([sys.executable, str(PLOT), str(partial), str(out), "perf-conversions.svg"],
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(sorted(p.name for p in out.iterdir()), ["perf-conversions.svg"])
            wrong = subprocess.run([sys.executable, str(PLOT), str(partial), str(out), "perf-speed.svg"],
                                   capture_output=True, text=True)
            self.assertNotEqual(wrong.returncode, 0)
            self.assertIn("no chart perf-speed.svg", wrong.stderr)

    def test_a_missing_input_is_named(self):
        with tempfile.TemporaryDirectory() as folder:
            partial = pathlib.Path(folder) / "results"
            shutil.copytree(SAVED, partial)
            (partial / "compile_time.json").unlink()
            done = self.run_plot(partial, pathlib.Path(folder) / "out")
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("compile_time.json is missing", done.stderr)


if __name__ == "__main__":
    unittest.main()
