"""npybridge's namespace has hidden visibility (config.hpp, NPYBRIDGE_NAMESPACE_ATTRIBUTES): an extension
module built without -fvisibility=hidden must still export none of npybridge's functions or state, so two
modules built with different npybridge versions cannot share (and corrupt) each other's free lists,
caches or registered types. Reads the module's dynamic symbol table with readelf (binutils, installed with g++).

Optimized (-O2), the module exports no symbol that even mentions npybridge. Unoptimized (-O0, a debug build),
it also exports the standard library's templates instantiated with npybridge's types (std::optional of
npybridge::dtype_enum and the like): libstdc++ declares namespace std with explicit default visibility, which GCC
lets win over the hidden visibility of the template's arguments, and at -O0 nothing is inlined away. Those are
std's code, not npybridge's functions or state; -fvisibility=hidden on the module hides them too (README). The
debug probe is checked for exactly that: npybridge's own entities never, std's instantiations only.
"""
import os
import pathlib
import re
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


# A mangled name whose own scope is npybridge: its functions, data, vtables, typeinfo, guard variables, TLS.
NPYBRIDGE_OWN = re.compile(r"^_Z(?:T[VISHW]|GV)?Z*N[KRVO]*9npybridge")
# A mangled name in namespace std (St), possibly a member (N...St) of a const / ref-qualified function.
STD = re.compile(r"^_Z(?:T[VIS])?N?[KRVO]*St")


def check_debug_probe():
    names = exported_symbols(HERE / "probe_module_debug.so")
    assert "PyInit_probe_module" in names, f"the debug probe exports no PyInit: {names[:20]}"
    own = [name for name in names if NPYBRIDGE_OWN.match(name)]
    assert not own, f"{len(own)} of npybridge's own symbols leave the -O0 module, e.g. {own[:10]}"
    mentioning = [name for name in names if "npybridge" in name]
    not_std = [name for name in mentioning if not STD.match(name)]
    assert not not_std, f"-O0 module exports npybridge symbols outside namespace std: {not_std[:10]}"
    return len(mentioning)


def main():
    probe = HERE / "probe_module.so"
    names = exported_symbols(probe)
    assert "PyInit_probe_module" in names, f"the probe exports no PyInit (reading the table failed?): {names[:20]}"
    leaked = [name for name in names if "npybridge" in name]
    assert not leaked, f"{len(leaked)} npybridge symbols leave the module, e.g. {leaked[:10]}"
    std_instantiations = check_debug_probe()
    # The module still works: hidden symbols are the module's own.
    sys.path.insert(0, str(HERE))
    import numpy as np
    import probe_module
    a = np.arange(6, dtype=np.int8)
    assert np.array_equal(probe_module.round_trip(a), a)
    print(f"visibility_test: {len(names)} exported symbols, none of them npybridge's; at -O0, "
          f"{std_instantiations} of std's templates instantiated with npybridge types, none of npybridge's own")


if __name__ == "__main__":
    main()
