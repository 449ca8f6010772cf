#pragma once
// `stripesim calibrate-step`: fits what a simulated training step prices without a kernel
// measurement (the element-wise work's cost, the kernel's partial-tile cost) to measured
// end-to-end speedups, and writes the fitted profiles.
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

[[nodiscard]] std::function<void()> register_calibrate_step_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
