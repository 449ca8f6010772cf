#pragma once
// `stripesim plan`: rank context-parallel algorithm x layout x mesh for a model on a cluster.
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

[[nodiscard]] std::function<void()> register_plan_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
