"""Finds Python and NumPy headers by asking an interpreter that can import numpy.

Order of preference:
  1. the environment variable PYTHON_BIN_PATH (always wins when set);
  2. the `interpreter` attribute (absolute, or relative to the main workspace),
     when that file exists (with `interpreter_only`, it or nothing);
  3. `python3`, `python` on PATH and `/usr/bin/python3`: the first that can
     `import numpy`.
Fails with a message that says what to install when none can.
"""

_PROBE = """
import json, site, sys, sysconfig
import numpy
libdir = sysconfig.get_config_var("LIBDIR") or ""
ldlib = sysconfig.get_config_var("LDLIBRARY") or ""
try:
    sites = site.getsitepackages()
except AttributeError:
    sites = []
try:  # optional: the binding-library headers (pybind11 casters and their example module)
    import pybind11
    pybind11_include = pybind11.get_include()
except Exception:
    pybind11_include = ""
try:  # optional: nanobind (its sources are compiled into each extension that uses it)
    import nanobind, os
    nanobind_root = os.path.dirname(nanobind.include_dir())
except Exception:
    nanobind_root = ""
print(json.dumps({
    "executable": sys.executable,
    "version": "%d.%d" % sys.version_info[:2],
    "include": sysconfig.get_paths()["include"],
    "numpy_include": numpy.get_include(),
    "numpy_version": numpy.__version__,
    "libdir": libdir,
    "ldlibrary": ldlib,
    "site_packages": sites,
    "pybind11_include": pybind11_include,
    "nanobind_root": nanobind_root,
}))
"""

def _probe(rctx, python):
    result = rctx.execute([python, "-c", _PROBE])
    if result.return_code != 0:
        return None, result.stderr.strip().splitlines()[-1:] or ["exit code %d" % result.return_code]
    return json.decode(result.stdout.strip()), None

def _candidates(rctx):
    tried = []
    env_path = rctx.os.environ.get("PYTHON_BIN_PATH", "")
    if env_path:
        return [("PYTHON_BIN_PATH", env_path)], True
    if rctx.attr.interpreter:
        path = rctx.attr.interpreter
        if not path.startswith("/"):
            root = rctx.path(Label("@//:WORKSPACE")).dirname
            path = str(root) + "/" + path
        if rctx.attr.interpreter_only:
            return [("interpreter attribute", path)], True
        if rctx.path(path).exists:
            tried.append(("interpreter attribute", path))
    for name in ["python3", "python"]:
        found = rctx.which(name)
        if found:
            tried.append(("PATH", str(found)))
    tried.append(("Debian", "/usr/bin/python3"))
    return tried, False

def _python_configure_impl(rctx):
    candidates, forced = _candidates(rctx)
    info = None
    failures = []
    chosen = None
    for origin, python in candidates:
        if not rctx.path(python).exists:
            failures.append("%s (%s): not found" % (python, origin))
            continue
        info, error = _probe(rctx, python)
        if info:
            chosen = origin
            break
        failures.append("%s (%s): %s" % (python, origin, " ".join(error)))
    if not info:
        hint = ("Only %s was tried (PYTHON_BIN_PATH, or interpreter_only). " % candidates[0][1] if forced else "")
        fail(("npybridge: no Python interpreter that can import numpy was found.\n  tried:\n    %s\n" +
              "  %sInstall the headers and NumPy (Debian: apt-get install python3-dev python3-numpy),\n" +
              "  or set PYTHON_BIN_PATH to an interpreter that has numpy and its headers.") %
             ("\n    ".join(failures), hint))

    if not rctx.path(info["include"] + "/Python.h").exists:
        fail(("npybridge: %s has no Python.h in %s. Install the CPython headers " +
              "(Debian: apt-get install python3-dev).") % (info["executable"], info["include"]))

    # Said once per fetch (Bazel shows it as DEBUG): which interpreter's headers and NumPy a build uses.
    print("npybridge: @%s uses %s (NumPy %s, from %s; set PYTHON_BIN_PATH to choose another)" %
          (rctx.name, info["executable"], info["numpy_version"], chosen))
    rctx.symlink(info["include"], "python_include")
    rctx.symlink(info["numpy_include"], "numpy_include")
    if info.get("pybind11_include"):
        rctx.symlink(info["pybind11_include"], "pybind11_include")
    else:
        rctx.file("pybind11_include/MISSING", "pybind11 is not importable by %s\n" % info["executable"])
    if info.get("nanobind_root"):
        rctx.symlink(info["nanobind_root"], "nanobind_root")
    else:
        rctx.file("nanobind_root/MISSING", "nanobind is not importable by %s\n" % info["executable"])

    libname = info["ldlibrary"]
    if libname.startswith("lib") and libname.endswith(".so"):
        libname = libname[3:-3]
    elif libname.startswith("lib") and ".so" in libname:
        libname = libname[3:libname.index(".so")]
    else:
        libname = "python" + info["version"]

    rctx.template("BUILD", rctx.attr._build_tpl, {
        "%{libdir}": info["libdir"],
        "%{libname}": libname,
        "%{interpreter}": info["executable"],
    })
    rctx.file("python_info.h", "\n".join([
        "// Generated by npybridge's python_configure: the interpreter Bazel found.",
        "#pragma once",
        "#define NPYBRIDGE_PYTHON_EXECUTABLE \"%s\"" % info["executable"],
        "#define NPYBRIDGE_PYTHON_SITE_PACKAGES \"%s\"" % ":".join(info["site_packages"]),
        "#define NPYBRIDGE_BUILD_NUMPY_VERSION \"%s\"" % info["numpy_version"],
        "",
    ]))
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)

python_configure = repository_rule(
    implementation = _python_configure_impl,
    attrs = {
        "interpreter": attr.string(doc = "Preferred interpreter (absolute or workspace-relative path)."),
        "interpreter_only": attr.bool(doc = "Use the interpreter attribute or fail: no other Python stands in."),
        "_build_tpl": attr.label(default = Label("//third_party/python:BUILD.tpl")),
    },
    environ = ["PYTHON_BIN_PATH", "PATH"],
    local = True,
)
