// npybridge/version.hpp — npybridge's version: the one place it is written (the pip package and CMake read it here).
#pragma once

#define NPYBRIDGE_VERSION "0.5.0"
