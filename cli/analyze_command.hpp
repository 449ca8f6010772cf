#pragma once
// `stripesim analyze`: the exact work model for several layouts, as a table, JSON or CSV.
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

// Registers the subcommand on `app`; the returned callable runs it after parsing.
[[nodiscard]] std::function<void()> register_analyze_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
