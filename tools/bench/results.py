"""Where a bench run keeps its numbers for tools/bench/plot: with NPYBRIDGE_BENCH_RESULTS naming a folder
(tools/bench/run sets it from --results), each bench script saves one JSON file there beside the tables it
prints. Without it, nothing is written."""
import json
import os
import pathlib


def save(name, data):
    folder = os.environ.get("NPYBRIDGE_BENCH_RESULTS")
    if not folder:
        return
    path = pathlib.Path(folder) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
