"""MegBrain's headers and the MegEngine wheel's library, for code compiled against real MegBrain tensors.

A MegBrain-based project has MegEngine's source tree; the environment variable MEGENGINE_SOURCE names it
(absolute, or relative to the main workspace). From it this rule takes `src/core/include`, `dnn/include`
and `src/megbrain_build_config.h.in`, and generates `megbrain_build_config.h` with the values the
`megengine==1.13.0` wheel was built with (cmake/megengine_wheel_switches.txt). The library is the wheel's `megengine/core/lib/libmegengine_shared.so`,
found by asking `interpreter` (the py310 venv) where the `megengine` package is, without importing it.

Without MEGENGINE_SOURCE the repository still exists (so `bazel query //...` works) and `defs.bzl` says
MEGENGINE_AVAILABLE = False; building `:megbrain` then fails with a message that says what to set.
"""

_FIND_LIBRARY = """
import importlib.util, os, sys
spec = importlib.util.find_spec("megengine")
if spec is None or not spec.submodule_search_locations:
    sys.exit("the megengine package is not installed for " + sys.executable)
lib = os.path.join(list(spec.submodule_search_locations)[0], "core", "lib")
if not os.path.exists(os.path.join(lib, "libmegengine_shared.so")):
    sys.exit("no libmegengine_shared.so in " + lib)
print(lib)
"""

_MISSING_BUILD = """
# No MegEngine source tree: MEGENGINE_SOURCE is not set.
genrule(
    name = "missing",
    outs = ["missing.h"],
    cmd = "echo 'npybridge: %s' >&2; exit 1",
)

cc_library(
    name = "megbrain",
    hdrs = [":missing"],
    visibility = ["//visibility:public"],
)
"""

def _generated_config(template, switches_file):
    """Each `#cmakedefine01 NAME` of the template becomes `#define NAME 1` for the wheel's switches (the list
    npybridge's CMake and Python helpers read too), else 0."""
    switches = [s.strip() for s in switches_file.splitlines() if s.strip() and not s.startswith("#")]
    lines = []
    for line in template.splitlines():
        if line.startswith("#cmakedefine01 "):
            name = line.split(" ")[1].strip()
            line = "#define %s %d" % (name, 1 if name in switches else 0)
        lines.append(line)
    return "\n".join(lines) + "\n"

def _unavailable(rctx, why):
    rctx.file("defs.bzl", "MEGENGINE_AVAILABLE = False\nMEGENGINE_MISSING = %r\n" % why)
    rctx.file("BUILD", _MISSING_BUILD % why.replace("'", ""))
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)

def _megengine_configure_impl(rctx):
    source = rctx.os.environ.get("MEGENGINE_SOURCE", "")
    if not source:
        _unavailable(rctx, "no MegEngine source (set MEGENGINE_SOURCE to a MegEngine source tree)")
        return
    root = rctx.path(Label("@//:WORKSPACE")).dirname
    if not source.startswith("/"):
        source = str(root) + "/" + source
    for needed in ["src/core/include/megbrain/tensor.h", "dnn/include/megdnn/dtype.h", "src/megbrain_build_config.h.in"]:
        if not rctx.path(source + "/" + needed).exists:
            fail("npybridge: MEGENGINE_SOURCE=%s is not a MegEngine source tree: it has no %s" % (source, needed))

    interpreter = rctx.attr.interpreter
    if not interpreter.startswith("/"):
        interpreter = str(root) + "/" + interpreter
    if not rctx.path(interpreter).exists:
        _unavailable(rctx, "no MegEngine library: %s does not exist (tools/bazelw makes the py310 venv)" % interpreter)
        return
    found = rctx.execute([interpreter, "-c", _FIND_LIBRARY])
    if found.return_code != 0:
        _unavailable(rctx, "no MegEngine library: " + (found.stderr.strip() or "exit %d" % found.return_code))
        return
    libdir = found.stdout.strip()

    rctx.symlink(source + "/src/core/include", "megbrain_include")
    rctx.symlink(source + "/dnn/include", "megdnn_include")
    rctx.file("config/megbrain_build_config.h", _generated_config(
        rctx.read(source + "/src/megbrain_build_config.h.in"),
        rctx.read(rctx.path(rctx.attr._switches)),
    ))
    rctx.file("defs.bzl", "MEGENGINE_AVAILABLE = True\nMEGENGINE_MISSING = ''\n")
    rctx.template("BUILD", rctx.attr._build_tpl, {
        "%{libdir}": libdir,
        "%{source}": source,
    })
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)

megengine_configure = repository_rule(
    implementation = _megengine_configure_impl,
    attrs = {
        "interpreter": attr.string(doc = "An interpreter that has the megengine wheel (absolute or workspace-relative)."),
        "_build_tpl": attr.label(default = Label("//third_party/megengine:BUILD.tpl")),
        "_switches": attr.label(default = Label("//:cmake/megengine_wheel_switches.txt")),
    },
    environ = ["MEGENGINE_SOURCE"],
    local = True,
)
