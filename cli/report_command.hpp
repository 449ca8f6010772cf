#pragma once
// `stripesim report`: a Markdown report with SVG figures from the commands' JSON.
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

[[nodiscard]] std::function<void()> register_report_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
