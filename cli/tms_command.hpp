#pragma once
// `stripesim tms`: the paper's Theoretical Maximum Speedup of striped and zigzag over
// contiguous Ring Attention for one model, hardware, mesh and sequence length.
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

[[nodiscard]] std::function<void()> register_tms_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
