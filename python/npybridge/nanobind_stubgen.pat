# Patterns for `python -m nanobind.stubgen -p <this file>` (python -m npybridge --nanobind-stubgen-patterns
# prints its path) on a module built with npybridge's nanobind casters. nanobind.stubgen never writes a class's
# __new__, and numpy.generic's stub declares one abstract: these give the scalar types that
# npybridge::register_user_dtypes adds to the module (bfloat16, intb1, intb2, intb4) their constructor, so
# `x: my_module.intb4 = my_module.intb4(3)` type-checks.
\.(intb[124]|bfloat16)\.__prefix__$:
    def __new__(cls, value: int | float = ..., /) -> \1: ...
