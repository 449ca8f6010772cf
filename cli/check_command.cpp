#include "check_command.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <memory>

#include "config_dir.hpp"
#include "output_file.hpp"
#include "run_mode.hpp"
#include "stripesim/model/baseline.hpp"
#include "stripesim/model/input_error.hpp"
#include "stripesim/model/json_file.hpp"

namespace stripesim::cli {
namespace {

struct CheckOptions {
  std::string baseline;
  std::string write_baseline;
  std::string experiment;
  std::string tolerance = "1e-6";
};

constexpr const char* kCheckExamples = R"(Examples:
  stripesim check --write-baseline reports/baseline/imbalance.json --experiment configs/experiments/baseline.json
      record the numbers once
  stripesim check --baseline reports/baseline/imbalance.json
      in CI: exit 1 with a table of what moved, 0 when every number is within tolerance
  stripesim check --baseline reports/baseline/imbalance.json --tolerance 0.01)";

double parse_tolerance(const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !(value >= 0) || !std::isfinite(value)) {
    throw model::InputError(fmt::format("--tolerance '{}': must be a non-negative number (relative difference)", text));
  }
  return value;
}

std::string number(double value) { return std::isnan(value) ? "missing" : fmt::format("{:.10g}", value); }

}  // namespace

std::function<int()> register_check_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CheckOptions& o = *options;
  CLI::App* cmd = app.add_subcommand("check", "Re-run a baseline's configurations and fail when a number moved");
  cmd->footer(kCheckExamples);
  auto* baseline = cmd->add_option("--baseline", o.baseline, "Baseline file to check against");
  auto* write = cmd->add_option("--write-baseline", o.write_baseline, "Write a baseline from --experiment to FILE");
  cmd->add_option("--experiment", o.experiment, "Experiment listing analyze and tms configurations (with --write-baseline)");
  cmd->add_option("--tolerance", o.tolerance, "Relative tolerance: |now - baseline| <= T * |baseline|")->capture_default_str();
  baseline->excludes(write);
  return [cmd, options]() -> int {
    if (!cmd->parsed()) return 0;
    const CheckOptions& opts = *options;
    const model::ConfigCatalog catalog(config_dir());
    if (!opts.write_baseline.empty()) {
      if (opts.experiment.empty()) throw model::InputError("--write-baseline: needs --experiment FILE to know what to record");
      const std::string label = "--experiment " + opts.experiment;
      const auto experiment = model::read_json_file(opts.experiment, label);
      if (parse_only()) {
        model::check_baseline_experiment(experiment, label, catalog);
        return 0;
      }
      const auto doc = model::write_baseline(experiment, label, catalog);
      write_output(doc.dump(2) + "\n", opts.write_baseline);
      fmt::print("baseline of {} metrics written to {}\n", model::baseline_metric_count(doc), opts.write_baseline);
      return 0;
    }
    if (opts.baseline.empty()) throw model::InputError("check: give --baseline FILE, or --write-baseline FILE --experiment FILE");
    const double tolerance = parse_tolerance(opts.tolerance);
    const std::string label = "--baseline " + opts.baseline;
    const auto doc = model::read_json_file(opts.baseline, label);
    if (parse_only()) {
      model::check_baseline_document(doc, label, catalog);
      return 0;
    }
    const auto moved = model::check_baseline(doc, label, catalog, tolerance);
    if (moved.empty()) {
      fmt::print("check: all {} metrics of {} within tolerance {:g}\n", model::baseline_metric_count(doc), opts.baseline,
                 tolerance);
      return 0;
    }
    size_t width = 13;
    for (const auto& m : moved) width = std::max(width, m.configuration.size());
    fmt::print("check: {} metrics moved beyond tolerance {:g}\n\n{:<{}}  {:<48} {:>16} {:>16} {:>14}\n", moved.size(),
               tolerance, "configuration", width, "metric", "baseline", "now", "difference");
    for (const auto& m : moved) {
      fmt::print("{:<{}}  {:<48} {:>16} {:>16} {:>14}\n", m.configuration, width, m.metric, number(m.baseline),
                 number(m.now), std::isnan(m.now) ? "-" : fmt::format("{:+.3g}", m.now - m.baseline));
    }
    return 1;
  };
}

}  // namespace stripesim::cli
