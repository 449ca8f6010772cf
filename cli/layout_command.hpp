#pragma once
// `stripesim layout`: one layout written for training code (JSON loadable as permutation:FILE,
// CSV or NumPy .npy), built from the same flags as `analyze`.
#include <CLI/CLI.hpp>
#include <functional>

#include "run_mode.hpp"

namespace stripesim::cli {

// Registers the subcommand on `app`; the returned callable runs it after parsing.
[[nodiscard]] std::function<void()> register_layout_command(CLI::App& app, RunMode mode);

}  // namespace stripesim::cli
