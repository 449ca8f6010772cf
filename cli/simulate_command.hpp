#pragma once
// `stripesim simulate`: the discrete-event simulation of the ring on a topology.
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

[[nodiscard]] std::function<void()> register_simulate_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
