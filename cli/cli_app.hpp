#pragma once
// The whole stripesim command line as a function, so it runs in-process (main.cpp, the CLI
// fuzzer) with the same exit codes and messages.
#include <cstdio>

#include "run_mode.hpp"

namespace stripesim::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;  // also `check`: a metric moved
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitDeviceFailure = 3;  // validate: a GPU or NCCL failed, named by rank and operation

// Parses argv, runs the chosen subcommand (as far as `mode` says) and returns the exit code.
// Errors are one line on `errors` (stderr for the executable); command output goes to stdout or
// its --output file.
[[nodiscard]] int run_cli(int argc, char** argv, std::FILE* errors = stderr, RunMode mode = RunMode::full);

}  // namespace stripesim::cli
