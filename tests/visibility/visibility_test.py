"""npybridge's namespace has hidden visibility (config.hpp, NPYBRIDGE_NAMESPACE_ATTRIBUTES): an extension
module built without -fvisibility=hidden must still export none of npybridge's functions or state, so two
modules built with different npybridge versions cannot share (and corrupt) each other's free lists,
caches or registered types. Reads the module's dynamic symbol table with readelf (binutils, installed with g++).
"""
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(os.environ["TEST_SRCDIR"]) / "npybridge" / "tests" / "visibility"


def exported_symbols(shared_object):
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(shared_object)], check=True, capture_output=True,
                         text=True).stdout
    names = []
    for line in out.splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name -- defined (Ndx not UND), not local.
        if len(fields) >= 8 and fields[0].endswith(":") and fields[6] != "UND" and fields[4] != "LOCAL":
            names.append(fields[7])
    return names


def main():
    probe = HERE / "probe_module.so"
    names = exported_symbols(probe)
    assert "PyInit_probe_module" in names, f"the probe exports no PyInit (reading the table failed?): {names[:20]}"
    leaked = [name for name in names if "npybridge" in name]
    assert not leaked, f"{len(leaked)} npybridge symbols leave the module, e.g. {leaked[:10]}"
    # The module still works: hidden symbols are the module's own.
    sys.path.insert(0, str(HERE))
    import numpy as np
    import probe_module
    a = np.arange(6, dtype=np.int8)
    assert np.array_equal(probe_module.round_trip(a), a)
    print(f"visibility_test: {len(names)} exported symbols, none of them npybridge's")


if __name__ == "__main__":
    main()
