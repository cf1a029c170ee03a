"""The Python builds npybridge knows: the default, NumPy 1's and the matrix's Pythons."""

# --config=py310 / py312 / py313 (.bazelrc): pyenv's Pythons, each in its venv.
MATRIX = [
    "py310",
    "py312",
    "py313",
]

def python_target(target):
    """The select() of one target of the python_configure repositories for the build's Python."""
    branches = {
        "//third_party/python:numpy1": "@npybridge_python_numpy1//:" + target,
        "//conditions:default": "@npybridge_python//:" + target,
    }
    for version in MATRIX:
        branches["//third_party/python:" + version] = "@npybridge_python_%s//:%s" % (version, target)
    if target == "pybind11":
        branches["//third_party/python:pybind11_debian"] = "@npybridge_system_pybind11//:pybind11"
    return select(branches)
