"""python -m npybridge --includes | --cflags | --cmakedir | --pkgconfigdir | --nanobind-stubgen-patterns | --version
                    | --megengine-cflags [--megengine-source DIR] | --megengine-libs"""
import argparse
import pathlib
import sys

import npybridge


def print_flags(flags):
    """The flags as one line on stdout; when a folder in them holds white space or a glob character, what to do
    on stderr (a command substitution would split or expand it)."""
    print(npybridge._shell_line(flags))
    if npybridge._needs_eval(flags):
        print("npybridge: a folder in these flags holds white space or a glob character (* ? [), which "
              "$(python -m npybridge ...) splits or expands: they are quoted for eval, so write "
              "eval \"g++ ... $(python -m npybridge ...) ...\", or use CMake (find_package(npybridge)) or "
              "pkg-config, or install into a folder without them", file=sys.stderr)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m npybridge", description=npybridge.__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--includes", action="store_true",
                       help="-I flags for npybridge, NumPy, CPython and Boost (folders the compiler searches anyway "
                            "are left out)")
    group.add_argument("--cflags", action="store_true", help="--includes plus -fvisibility=hidden")
    group.add_argument("--cmakedir", action="store_true", help="the folder of npybridgeConfig.cmake")
    group.add_argument("--pkgconfigdir", action="store_true", help="a folder holding npybridge.pc for this Python")
    group.add_argument("--nanobind-stubgen-patterns", action="store_true",
                       help="the pattern file for python -m nanobind.stubgen -p (the scalar types of bfloat16 / intbN)")
    group.add_argument("--version", action="store_true", help="npybridge's version")
    group.add_argument("--megengine-cflags", action="store_true",
                       help="for MegBrain's own tensors over the megengine wheel: the wheel's string ABI, a "
                            "megbrain_build_config.h made for the wheel, MegBrain's include folders (of "
                            "--megengine-source or $MEGENGINE_SOURCE)")
    group.add_argument("--megengine-libs", action="store_true",
                       help="-L, -l and rpath for the installed megengine wheel's libmegengine_shared.so")
    parser.add_argument("--megengine-source", metavar="DIR",
                        help="a MegEngine source tree of the wheel's version (default: $MEGENGINE_SOURCE)")
    args = parser.parse_args(argv)
    if args.megengine_source and not args.megengine_cflags:
        parser.error("--megengine-source goes with --megengine-cflags")
    try:
        if args.includes:
            print_flags(npybridge._include_flags())
        elif args.cflags:
            print_flags(npybridge._cflag_list())
        elif args.cmakedir:
            print(npybridge.get_cmake_dir())
        elif args.pkgconfigdir:
            print(npybridge.get_pkgconfig_dir())
        elif args.nanobind_stubgen_patterns:
            print(pathlib.Path(npybridge.__file__).with_name("nanobind_stubgen.pat"))
        elif args.megengine_cflags:
            print_flags(npybridge._megengine_cflag_list(args.megengine_source))
        elif args.megengine_libs:
            print_flags(npybridge._megengine_lib_list())
        else:
            print(npybridge.__version__)
    except npybridge.MissingDependency as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
