"""Repositories npybridge needs. A consumer's WORKSPACE calls npybridge_dependencies().

    local_repository(name = "npybridge", path = "...")
    load("@npybridge//:deps.bzl", "npybridge_dependencies")
    npybridge_dependencies()
"""

load("//third_party:offline_standins.bzl", "offline_standins")
load("//third_party/boost:boost_pfr_configure.bzl", "boost_pfr_configure")
load("//third_party/python:python_configure.bzl", "python_configure")

def npybridge_dependencies(python_interpreter = ""):
    """Declares @npybridge_python (Python + NumPy headers), @npybridge_boost_pfr, and offline stand-ins for
    @rules_cc, @rules_java and @remote_coverage_tools (Bazel 4's own tools load them) unless declared before.

    Args:
      python_interpreter: preferred interpreter path; PYTHON_BIN_PATH still wins.
    """
    offline_standins()
    if "npybridge_python" not in native.existing_rules():
        python_configure(name = "npybridge_python", interpreter = python_interpreter)
    if "npybridge_boost_pfr" not in native.existing_rules():
        boost_pfr_configure(name = "npybridge_boost_pfr")
