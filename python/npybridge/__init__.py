"""npybridge: header-only C++17 conversions between NumPy arrays and MegBrain-style tensors.

This package carries the headers and tells build systems where they are:
get_include(), get_cmake_dir(), get_pkgconfig_dir(), and `python -m npybridge --includes`; for a module over
MegBrain's own tensors built against the `megengine` wheel, megengine_cflags() and megengine_libs().
"""
import hashlib
import importlib.util
import os
import pathlib
import re
import shlex
import sys
import sysconfig

_HERE = pathlib.Path(__file__).resolve().parent


def _version():
    text = (_HERE / "include" / "npybridge" / "core" / "version.hpp").read_text()
    return re.search(r'#define NPYBRIDGE_VERSION "([^"]+)"', text).group(1)


__version__ = _version()

# The folders a compiler searches without being told: an -I for them would
# reorder the system headers (GCC's #include_next), so they are left out.
_DEFAULT_INCLUDE_DIRS = ("/usr/include", "/usr/local/include")
_MIN_BOOST = 108100  # Boost 1.81: the first with Boost.PFR's for_each_field as npybridge uses it


class MissingDependency(RuntimeError):
    """A header npybridge needs is not on this machine; the message names what to install."""


def get_include():
    """The folder to put on the include path: it holds npybridge/npybridge.hpp."""
    return str(_HERE / "include")


def get_cmake_dir():
    """The folder holding npybridgeConfig.cmake (pass it as -Dnpybridge_DIR=...)."""
    return str(_HERE / "share" / "cmake" / "npybridge")


def get_python_include():
    """CPython's headers for this interpreter."""
    include = sysconfig.get_paths()["include"]
    if not (pathlib.Path(include) / "Python.h").exists():
        raise MissingDependency(f"npybridge: Python.h is not in {include}: install this Python's development headers "
                                f"(Debian: python3-dev for /usr/bin/python3)")
    return include


def get_numpy_include():
    """NumPy's C headers for this interpreter's NumPy."""
    try:
        import numpy
    except ImportError as error:
        raise MissingDependency(f"npybridge: NumPy is not importable here ({error}): pip install numpy") from None
    return numpy.get_include()


def get_boost_include():
    """The folder holding boost/pfr.hpp (Boost >= 1.81); BOOST_ROOT or BOOST_INCLUDEDIR win."""
    candidates = []
    for variable in ("BOOST_INCLUDEDIR", "BOOST_ROOT"):
        if os.environ.get(variable):
            root = pathlib.Path(os.environ[variable])
            candidates += [root, root / "include"]
    candidates += [pathlib.Path(p) for p in os.environ.get("CPATH", "").split(os.pathsep) if p]
    candidates += [pathlib.Path(p) for p in _DEFAULT_INCLUDE_DIRS]
    too_old = []
    for folder in candidates:
        version_header = folder / "boost" / "version.hpp"
        if not version_header.exists():
            continue
        match = re.search(r"#define BOOST_VERSION (\d+)", version_header.read_text())
        if match and int(match.group(1)) >= _MIN_BOOST and (folder / "boost" / "pfr.hpp").exists():
            return str(folder)
        too_old.append(f"{folder} ({match.group(1) if match else 'unknown version'})")
    found = f"; found only {', '.join(too_old)}" if too_old else ""
    raise MissingDependency("npybridge: Boost >= 1.81 with Boost.PFR (boost/pfr.hpp) was not found" + found +
                            ": install libboost1.81-dev (Debian 12) or set BOOST_ROOT")


def include_dirs():
    """Every folder a compiler needs, in order: npybridge, NumPy (before CPython: Debian links an older NumPy's
    headers inside CPython's folder), CPython, Boost. Folders the compiler searches anyway are left out."""
    folders = [get_include(), get_numpy_include(), get_python_include(), get_boost_include()]
    unique = []
    for folder in folders:
        if folder not in unique and folder not in _DEFAULT_INCLUDE_DIRS:
            unique.append(folder)
    return unique


# What a shell does to the output of a command substitution, `$(python -m npybridge --cflags)`: it splits
# the text at white space and expands glob patterns, nothing else (no quote removal, no `$`, `~` or `#`).
_SPLIT_OR_GLOB = re.compile(r"[\s*?\[]")


def _shell_word(flag):
    """A flag as a command substitution needs it: as it is unless it holds white space or a glob character
    (`* ? [`), which no output can protect there; such a flag is quoted for `eval` instead."""
    return shlex.quote(flag) if _SPLIT_OR_GLOB.search(flag) else flag


def _shell_line(flags):
    """Flags as one line: for a command substitution (each word by _shell_word); when one of them needs `eval`
    (_needs_eval), every flag is quoted for it, so `$ ( & ' #` in another folder survive the eval too."""
    if _needs_eval(flags):
        return " ".join(shlex.quote(flag) for flag in flags)
    return " ".join(_shell_word(flag) for flag in flags)


def _needs_eval(flags):
    """Whether any of the flags holds white space or a glob character: then their line works through `eval`,
    not through `$(...)`."""
    return any(_SPLIT_OR_GLOB.search(flag) for flag in flags)


def _include_flags():
    """The -I flags, one list item each, unquoted."""
    return ["-I" + folder for folder in include_dirs()]


def includes():
    """The -I flags, as `python -m npybridge --includes` prints them, for `$(python -m npybridge --includes)`:
    a shell splits that at white space and expands glob characters, and does nothing else to it, so each
    folder is written as it is (quotes, `$`, `~`, `#`, `&`, parentheses and non-ASCII letters included). A
    folder with white space or a glob character is quoted for `eval` (_needs_eval says so)."""
    return _shell_line(_include_flags())


def cflags():
    """The compiler flags a module using npybridge needs: the includes, and hidden visibility (npybridge's own
    namespace is hidden; a type of yours that holds one of its types should be too)."""
    return _shell_line(_cflag_list())


def _cflag_list():
    """cflags() as a list, unquoted."""
    return _include_flags() + ["-fvisibility=hidden"]


# pkg-config's output is written for eval: pkgconf puts a backslash before these (and before each byte of a
# non-ASCII letter), which a command substitution keeps; it writes `$ ( )` bare, which eval reads as shell syntax.
_PC_ESCAPED = re.compile(r"[\s!\"#%&'*;<>?\[\\\]`{|}\x80-\U0010ffff]")
_PC_BARE = re.compile(r"[$()]")


def _pc_escape(value):
    """A value as a .pc file writes it: pkg-config splits fields into shell words, so white space, quotes and
    backslashes are escaped with a backslash, and so is `#` (a comment otherwise: a folder `c#projects` cut the
    flags short). Refused by name: `${name}`, which pkg-config expands in any field with no escape for it, white
    space ending the value (trimmed), and a value no shell route carries (one character pkgconf escapes, which needs
    eval, and one of `$ ( )`, which eval reads)."""
    escaped, bare = _PC_ESCAPED.search(value), _PC_BARE.search(value)
    if "${" in value or (escaped and bare) or value != value.rstrip():
        why = "it expands '${...}' in every field" if "${" in value else "it trims white space ending a line" if (
            value != value.rstrip()) else f"its output needs eval for {escaped.group()!r} and eval reads {bare.group()!r}"
        raise MissingDependency(f"npybridge: pkg-config cannot carry the path {value!r}: {why} (use CMake, or "
                                "python -m npybridge --cflags, for this folder)")
    return re.sub(r"([\\\s'\"#])", r"\\\1", value)


def _cache_dir():
    """$XDG_CACHE_HOME, or ~/.cache; None when neither is known. The XDG spec says an empty or relative
    XDG_CACHE_HOME is to be ignored; a HOME that is unset, for a user with no passwd entry, is no home."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return pathlib.Path(xdg)
    try:
        home = pathlib.Path.home()
    except (RuntimeError, KeyError, OSError):
        return None
    return home / ".cache" if home.is_absolute() else None


def get_pkgconfig_dir():
    """A folder holding npybridge.pc for this interpreter (written on first use: the flags name this
    interpreter's CPython and NumPy headers, which a file made when the package was built cannot know): the
    package's own share/pkgconfig when it is writable, else one under the user's cache folder."""
    flags = [_pc_escape("-I" + folder) for folder in include_dirs()] + ["-fvisibility=hidden"]
    content = (f"prefix={_pc_escape(str(_HERE))}\n"
               f"includedir=${{prefix}}/include\n\n"
               f"Name: npybridge\n"
               f"Description: Header-only C++17 conversions between NumPy arrays and MegBrain-style tensors\n"
               f"Version: {__version__}\n"
               f"Cflags: {' '.join(flags)}\n")
    return _write_generated(pathlib.Path("share") / "pkgconfig", "pkgconfig", "npybridge.pc", content)


def _write_generated(package_folder, cache_folder, name, content):
    """Writes the file `name` (unless it already holds `content`) into the package's own `package_folder` when
    that is writable, else into the user's cache folder; returns the folder it is in."""
    tried = []
    for folder in _generated_folders(package_folder, cache_folder):
        tried.append(str(folder))
        path = folder / name
        try:
            if not path.exists() or path.read_text() != content:
                folder.mkdir(parents=True, exist_ok=True)
                path.write_text(content)
            return str(folder)
        except OSError:
            continue
    raise MissingDependency(f"npybridge: could not write {name} to any of {tried} "
                            f"(set XDG_CACHE_HOME to a writable folder)")


def _generated_folders(package_folder, cache_folder):
    """Where a generated file may go, in order; the cache folder is looked up only when the first is not
    writable (one cache folder per installed package)."""
    yield _HERE / package_folder
    cache = _cache_dir()
    if cache is not None:
        yield cache / "npybridge" / cache_folder / re.sub(r"[^A-Za-z0-9]+", "_", str(_HERE))


# MegBrain over the megengine wheel. The wheel ships libmegengine_shared.so but not MegBrain's headers: those
# come from a MegEngine source tree of the same version (the user's, named by MEGENGINE_SOURCE), with a
# megbrain_build_config.h generated from its template with the switches the wheel was built with.
_MEGENGINE_VERSION = "1.13.0"
_MEGENGINE_NEEDS = ("src/core/include/megbrain/tensor.h", "dnn/include/megdnn/dtype.h",
                    "src/megbrain_build_config.h.in")


def _megengine_source(source=None):
    """The MegEngine source tree: `source`, else $MEGENGINE_SOURCE; checked to be one."""
    named = "--megengine-source" if source else "MEGENGINE_SOURCE"
    source = source or os.environ.get("MEGENGINE_SOURCE", "")
    if not source:
        raise MissingDependency("npybridge: no MegEngine source tree: set MEGENGINE_SOURCE (or pass "
                                f"--megengine-source) to a checkout of MegEngine v{_MEGENGINE_VERSION}, whose "
                                "headers the megengine wheel does not ship (git clone --depth 1 --branch "
                                f"v{_MEGENGINE_VERSION} https://github.com/MegEngine/MegEngine.git)")
    root = pathlib.Path(source).resolve()
    for needed in _MEGENGINE_NEEDS:
        if not (root / needed).exists():
            raise MissingDependency(f"npybridge: {named}={source} is not a MegEngine source tree: it has no "
                                    f"{needed}")
    return root


def get_megengine_lib():
    """The folder of the installed megengine wheel's libmegengine_shared.so (megengine is not imported)."""
    spec = importlib.util.find_spec("megengine")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency(f"npybridge: the megengine package is not installed for {sys.executable}: "
                                f"pip install megengine=={_MEGENGINE_VERSION} (CPython 3.10)")
    from importlib.metadata import version
    installed = version("megengine")
    if installed != _MEGENGINE_VERSION:
        raise MissingDependency(f"npybridge: megengine {installed} is installed; npybridge knows the build switches "
                                f"of megengine {_MEGENGINE_VERSION} only: pip install megengine=={_MEGENGINE_VERSION}")
    lib = pathlib.Path(list(spec.submodule_search_locations)[0]) / "core" / "lib"
    if not (lib / "libmegengine_shared.so").exists():
        raise MissingDependency(f"npybridge: no libmegengine_shared.so in {lib}: reinstall megengine")
    return str(lib)


def megbrain_build_config(template_text, switches):
    """megbrain_build_config.h from MegEngine's template: each `#cmakedefine01 NAME` becomes `#define NAME 1`
    for the switches given, else 0."""
    def define(match):
        return f"#define {match.group(1)} {1 if match.group(1) in switches else 0}"
    return re.sub(r"^#cmakedefine01 +(\w+)[ \t]*$", define, template_text, flags=re.M)


def _wheel_switches():
    text = (pathlib.Path(get_cmake_dir()) / "megengine_wheel_switches.txt").read_text()
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}


def get_megengine_config_dir(source=None):
    """A folder holding megbrain_build_config.h for the megengine wheel, made from the source tree's template
    (written on first use, beside the package or in the user's cache folder)."""
    root = _megengine_source(source)
    content = megbrain_build_config((root / "src" / "megbrain_build_config.h.in").read_text(), _wheel_switches())
    key = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    return _write_generated(pathlib.Path("share") / "megengine" / key, "megengine/" + key,
                            "megbrain_build_config.h", content)


def megengine_cflags(source=None):
    """The flags a module over MegBrain's tensors needs besides cflags(): the wheel's string ABI, the build
    config and MegBrain's include folders. Checks the wheel is installed, so a missing one is said here."""
    return _shell_line(_megengine_cflag_list(source))


def _megengine_cflag_list(source=None):
    """megengine_cflags() as a list, unquoted."""
    get_megengine_lib()
    root = _megengine_source(source)
    folders = [get_megengine_config_dir(source), str(root / "src" / "core" / "include"), str(root / "dnn" / "include")]
    return ["-D_GLIBCXX_USE_CXX11_ABI=0"] + ["-I" + folder for folder in folders]


def megengine_libs():
    """The link flags for the megengine wheel's library (with an rpath: one library serves the module and
    `import megengine`)."""
    return _shell_line(_megengine_lib_list())


def _megengine_lib_list():
    """megengine_libs() as a list, unquoted."""
    lib = get_megengine_lib()
    return ["-L" + lib, "-l:libmegengine_shared.so", "-Wl,-rpath," + lib]
