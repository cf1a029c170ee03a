"""Repositories npybridge needs. A consumer's WORKSPACE calls npybridge_dependencies().

    local_repository(name = "npybridge", path = "...")
    load("@npybridge//:deps.bzl", "npybridge_dependencies")
    npybridge_dependencies()
"""

load("//third_party/boost:boost_pfr_configure.bzl", "boost_pfr_configure")
load("//third_party/python:python_configure.bzl", "python_configure")

def npybridge_dependencies(python_interpreter = ""):
    """Declares @npybridge_python (Python + NumPy headers) and @npybridge_boost_pfr.

    Args:
      python_interpreter: preferred interpreter path; PYTHON_BIN_PATH still wins.
    """
    if "npybridge_python" not in native.existing_rules():
        python_configure(name = "npybridge_python", interpreter = python_interpreter)
    if "npybridge_boost_pfr" not in native.existing_rules():
        boost_pfr_configure(name = "npybridge_boost_pfr")
