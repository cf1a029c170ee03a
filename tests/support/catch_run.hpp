// Runs Catch2's session: the one entry point of catch_impl.cpp (Catch2 declares
// Catch::Session only where its implementation is compiled).
#pragma once

namespace test {
int run_catch(int argc, char* argv[]);
}
