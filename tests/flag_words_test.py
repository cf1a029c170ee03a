"""python -m npybridge's flag lines over include folders made of any printable characters (white space, tab and every
shell metacharacter included): the words a shell makes of the line are the flags, exactly, by the route the line is
written for: `$(...)` where --cflags writes plain words, the advised `eval` where it quotes them. pkg-config's
Cflags are the flags by eval unless a folder holds `$ ( )`, and by `$(...)` unless it holds a character pkgconf
escapes; a folder neither route carries (or holding '${', which pkg-config expands) is refused by name when the .pc
file is written. Generated folders holding npybridge's headers compile a translation unit by both shell routes, and
by CMake's find_package from an installed layout in such a folder: any character but a backslash (CMake makes it a
slash in a path it is given), a square bracket (CMake's lists nest at them: a ';' after an unclosed '[' joins the
next folder to it) or a double quote (CMake's Makefile generator writes the path unescaped into
CMakeFiles/Makefile.cmake, which an odd number of quotes leaves unterminated)."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

from hypothesis import HealthCheck, given, settings, strategies as st

ROOT = pathlib.Path(os.environ["TEST_SRCDIR"], "npybridge") if "TEST_SRCDIR" in os.environ else \
    pathlib.Path(__file__).resolve().parent.parent
# The package as pip lays it out: its __init__.py beside the headers.
PACKAGE = pathlib.Path(tempfile.mkdtemp(prefix="flag-words-"))
(PACKAGE / "npybridge").mkdir()
shutil.copy(ROOT / "python" / "npybridge" / "__init__.py", PACKAGE / "npybridge")
(PACKAGE / "npybridge" / "include").symlink_to(ROOT / "include")
sys.path.insert(0, str(PACKAGE))
import npybridge  # noqa: E402

# Printable ASCII, tab, and a letter beyond ASCII; '/' is the separator the folders are made with.
CHARACTERS = st.sampled_from([chr(c) for c in range(0x20, 0x7F) if chr(c) != "/"] + ["\t", "\u00e9"])
FOLDER = st.lists(st.text(CHARACTERS, min_size=1, max_size=12), min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts))


def shell_words(command, line):
    """The words bash makes of `line` in `command` ($LINE), NUL-separated by printf."""
    done = subprocess.run(["bash", "-c", command], env={"LINE": line, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                          capture_output=True, check=True)
    return done.stdout.decode().split("\0")[:-1]


BY_SUBSTITUTION = 'printf "%s\\0" $LINE'  # what $(python -m npybridge --cflags) makes: split and globbed, no quotes
BY_EVAL = 'eval "printf \'%s\\0\' $LINE"'  # the advised eval "g++ ... $(python -m npybridge --cflags)"


class FlagWords(unittest.TestCase):
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(folders=st.lists(FOLDER, min_size=1, max_size=3))
    def test_the_line_gives_the_flags_by_the_route_it_is_written_for(self, folders):
        flags = ["-I" + folder for folder in folders] + ["-fvisibility=hidden"]
        line = npybridge._shell_line(flags)
        route = BY_EVAL if npybridge._needs_eval(flags) else BY_SUBSTITUTION
        self.assertEqual(shell_words(route, line), flags, line)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(folder=FOLDER)
    def test_pkg_config_gives_the_flags_by_its_routes_or_the_folder_is_refused_by_name(self, folder):
        escaped, bare = npybridge._PC_ESCAPED.search(folder), npybridge._PC_BARE.search(folder)
        if "${" in folder or (escaped and bare) or folder != folder.rstrip():
            with self.assertRaises(npybridge.MissingDependency) as refused:
                npybridge._pc_escape("-I" + folder)
            self.assertIn("pkg-config cannot carry the path", str(refused.exception))
            return
        with tempfile.TemporaryDirectory() as pc:
            pathlib.Path(pc, "t.pc").write_text(
                f"prefix={npybridge._pc_escape(folder)}\nName: t\nDescription: t\nVersion: 1\n"
                f"Cflags: {npybridge._pc_escape('-I' + folder)}\n")
            out = subprocess.run(["pkg-config", "--cflags", "t"], env=dict(os.environ, PKG_CONFIG_PATH=pc),
                                 capture_output=True, check=True).stdout.decode("utf-8", "surrogateescape")
        out = out.rstrip("\n ")
        if not bare:  # eval "g++ ... $(pkg-config --cflags npybridge)"
            self.assertEqual(shell_words(BY_EVAL, out), ["-I" + folder], out)
        if not escaped:  # the README's g++ ... $(pkg-config --cflags npybridge)
            self.assertEqual(shell_words(BY_SUBSTITUTION, out), ["-I" + folder], out)

    @settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(name=st.text(CHARACTERS, min_size=1, max_size=10))
    def test_headers_in_such_a_folder_compile_by_the_advised_route(self, name):
        with tempfile.TemporaryDirectory() as work:
            folder = pathlib.Path(work, name, "include")
            shutil.copytree(ROOT / "include" / "npybridge" / "core", folder / "npybridge" / "core")
            shutil.copy(ROOT / "include" / "npybridge" / "core.hpp", folder / "npybridge")
            flags = ["-I" + str(folder)]  # Boost where the compiler looks anyway
            line = npybridge._shell_line(flags)
            source = pathlib.Path(work, "uses.cpp")
            source.write_text("#include <npybridge/core.hpp>\nint main() { return npybridge::dtype_count > 0 ? 0 : 1; }\n")
            route = "eval \"g++ -std=c++17 -fsyntax-only $LINE '$SOURCE'\"" if npybridge._needs_eval(flags) else \
                'g++ -std=c++17 -fsyntax-only $LINE "$SOURCE"'
            done = subprocess.run(["bash", "-c", route], env=dict(os.environ, LINE=line, SOURCE=str(source)),
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, f"{route} with {line}:\n{done.stderr[-2000:]}")

    @settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(name=st.text(CHARACTERS.filter(lambda c: c not in '\\[]"'), min_size=1, max_size=10))
    def test_cmake_finds_and_builds_with_npybridge_installed_in_such_a_folder(self, name):
        with tempfile.TemporaryDirectory() as work:
            prefix = pathlib.Path(work, name)
            shutil.copytree(ROOT / "cmake", prefix / "lib" / "cmake" / "npybridge")
            shutil.copytree(ROOT / "include" / "npybridge", prefix / "include" / "npybridge")
            project = pathlib.Path(work, "project")
            project.mkdir()
            (project / "CMakeLists.txt").write_text(
                "cmake_minimum_required(VERSION 3.18)\nproject(uses CXX)\n"
                "find_package(npybridge CONFIG REQUIRED COMPONENTS core)\n"
                "add_executable(uses uses.cpp)\ntarget_link_libraries(uses PRIVATE npybridge::core)\n")
            (project / "uses.cpp").write_text(
                "#include <npybridge/core.hpp>\nint main() { return npybridge::dtype_count > 0 ? 0 : 1; }\n")
            build = pathlib.Path(work, "build")
            for step in (["cmake", "-S", str(project), "-B", str(build),
                          "-Dnpybridge_DIR=" + str(prefix / "lib" / "cmake" / "npybridge")],
                         ["cmake", "--build", str(build)]):
                done = subprocess.run(step, capture_output=True, text=True)
                self.assertEqual(done.returncode, 0, f"{step}:\n{done.stdout[-1500:]}{done.stderr[-1500:]}")


if __name__ == "__main__":
    unittest.main()
