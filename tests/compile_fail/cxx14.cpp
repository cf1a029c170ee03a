// expect: npybridge: needs C++17 or newer: compile with -std=c++17
// std: c++14
#include <npybridge/npybridge.hpp>
