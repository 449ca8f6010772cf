#pragma once
// `stripesim check`: CI regression of imbalance and speedup numbers against a baseline.
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

// Returns the exit code to use: 0 within tolerance, 1 when a metric moved.
[[nodiscard]] std::function<int()> register_check_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
