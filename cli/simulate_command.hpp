#pragma once
// `stripesim simulate`: the discrete-event simulation of the ring on a topology.
#include <CLI/CLI.hpp>
#include <functional>

namespace stripesim::cli {

[[nodiscard]] std::function<void()> register_simulate_command(CLI::App& app);

}  // namespace stripesim::cli
