#pragma once
// `stripesim sweep`: TMS over a grid of hardware, models, meshes, sequence lengths and tiles,
// one row per point, from flags or a JSON experiment file.
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

[[nodiscard]] std::function<void()> register_sweep_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
