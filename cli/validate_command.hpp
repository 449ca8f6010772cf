#pragma once
// `stripesim validate`: the ring on a real backend (cpu, cuda, nccl), checked against dense
// attention, measured, and with --calibrate / --compare set beside the simulator's prediction.
// Returns 0, or 1 when an output missed its tolerance; a failing device throws
// validate::DeviceFailure (exit code 3).
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

[[nodiscard]] std::function<int()> register_validate_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
