#include "check_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <memory>

#include "config_dir.hpp"
#include "distinct_list.hpp"
#include "output_file.hpp"
#include "run_mode.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/workflows/baseline.hpp"
#include "stripesim/model/workflows/experiment_files.hpp"
#include "stripesim/report/junit.hpp"
#include "stripesim/sim/simulate_baseline.hpp"

namespace stripesim::cli {
namespace {

struct CheckOptions {
  std::string baseline;
  std::string write_baseline;
  std::string experiment;
  std::vector<std::string> tolerance;  // none given: 1e-6 for every metric (CheckRules)
  std::vector<std::string> limits;
  std::vector<std::string> metrics;
  std::string junit;
};

constexpr const char* kCheckExamples = R"(Examples:
  stripesim check --write-baseline reports/baseline/imbalance.json --experiment configs/experiments/baseline.json
      record the numbers once
  stripesim check --baseline reports/baseline/imbalance.json
      in CI: exit 1 with a table of what moved the bad way, 0 when every number is within
      tolerance or improved (lower imbalance, spread or time; higher speedup)
  stripesim check --baseline reports/baseline/imbalance.json --tolerance 0.01,spread=0.5
      1 % for every metric, 50 % for spreads
  stripesim check --baseline reports/baseline/imbalance.json --metrics tiles.imbalance --limit 'zigzag.tiles.imbalance<=1.10'
      only the tile imbalances; zigzag's judged against an absolute limit instead of its recorded value
  stripesim check --baseline reports/baseline/imbalance.json --junit check.xml
      also a JUnit XML report (a test case per metric) for the CI system's test view)";


std::vector<model::BaselineEntryKind> entry_kinds(const model::ConfigCatalog& catalog) {
  auto kinds = model::model_baseline_kinds(catalog);
  kinds.push_back(sim::simulate_baseline_kind(catalog));
  return kinds;
}

// Each given value (the flag repeats) as its comma-separated items, an empty one refused as every
// other list flag refuses it ('1e-6,' was taken as '1e-6').
std::vector<std::string> list_items(const std::vector<std::string>& given, const char* flag) {
  std::vector<std::string> items;
  for (const auto& text : given) {
    for (auto& item : model::split_list(text, flag)) items.push_back(std::move(item));
  }
  return items;
}

model::CheckRules check_rules(const CheckOptions& o) {
  model::CheckRules rules;
  model::parse_tolerances(list_items(o.tolerance, "--tolerance"), rules, "--tolerance");
  for (const auto& text : list_items(o.limits, "--limit")) rules.limits.push_back(model::parse_metric_limit(text, "--limit"));
  const std::vector<std::string> metrics = list_items(o.metrics, "--metrics");
  require_distinct(metrics, "--metrics", "given twice in the list");
  rules.metrics = metrics;  // split_list refused empty patterns
  return rules;
}

std::string number(double value) { return fmt::format("{:.10g}", value); }

std::string metrics_table(const std::vector<model::CheckedMetric>& rows) {
  size_t width = 13;
  size_t metric_width = 6;
  for (const auto& m : rows) {
    width = std::max(width, m.configuration.size());
    metric_width = std::max(metric_width, m.metric.size());
  }
  std::string out = fmt::format("\n{:<{}}  {:<{}} {:>16} {:>16} {:>14}  {}\n", "configuration", width, "metric", metric_width,
                                "baseline", "now", "difference", "judged by");
  for (const auto& m : rows) {
    out += fmt::format("{:<{}}  {:<{}} {:>16} {:>16} {:>14}  {}\n", m.configuration, width, m.metric, metric_width,
                       number(m.baseline), m.now ? number(*m.now) : "missing",
                       m.now ? fmt::format("{:+.3g}", *m.now - m.baseline) : "-", m.rule);
  }
  return out;
}

// The checked metrics whose outcome `keep` accepts, in the baseline's order.
template <typename Keep>
std::vector<model::CheckedMetric> those(const std::vector<model::CheckedMetric>& checked, Keep keep) {
  std::vector<model::CheckedMetric> rows;
  std::ranges::copy_if(checked, std::back_inserter(rows), [&](const auto& m) { return keep(m.outcome); });
  return rows;
}

}  // namespace

std::function<int()> register_check_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<CheckOptions>();
  CheckOptions& o = *options;
  CLI::App* cmd = app.add_subcommand("check", "Re-run a baseline's configurations and fail when a number got worse");
  cmd->footer(kCheckExamples);
  auto* baseline = cmd->add_option("--baseline", o.baseline, "Baseline file to check against");
  auto* write = cmd->add_option("--write-baseline", o.write_baseline, "Write a baseline from --experiment to FILE");
  auto* experiment = cmd->add_option("--experiment", o.experiment,
                                     "Experiment listing analyze, tms and simulate configurations (with --write-baseline)");
  auto* tolerance = cmd->add_option("--tolerance", o.tolerance,
                                    "Relative tolerance |now - baseline| <= T * |baseline|: T for every metric, "
                                    "PATTERN=T for the metrics a pattern matches (the first match wins) [default: 1e-6]");
  auto* limit = cmd->add_option("--limit", o.limits,
                                "Absolute limit METRIC<=V or METRIC>=V (e.g. 'imbalance<=1.10'); a metric a limit "
                                "matches is judged by it instead of the tolerance");
  auto* metrics = cmd->add_option("--metrics", o.metrics,
                                  "Check only these metrics: patterns matching a whole name (zigzag.tiles.imbalance) or "
                                  "its last parts (imbalance, tiles.speedup); * is a wildcard");
  auto* junit = cmd->add_option("--junit", o.junit, "Also write the results as JUnit XML to FILE (a test case per metric)");
  baseline->excludes(write);
  experiment->excludes(baseline);
  for (auto* only_when_checking : {tolerance, limit, metrics, junit}) only_when_checking->excludes(write);
  return [cmd, options, mode]() -> int {
    if (!cmd->parsed()) return 0;
    const CheckOptions& opts = *options;
    const model::ConfigCatalog catalog(config_dir());
    const auto kinds = entry_kinds(catalog);
    if (!opts.write_baseline.empty()) {
      if (opts.experiment.empty()) throw model::InputError("--write-baseline: needs --experiment FILE to know what to record");
      const std::string label = "--experiment " + opts.experiment;
      const auto experiment_doc = model::read_json_file(opts.experiment, label);
      const std::string experiment_dir = model::folder_of(opts.experiment);
      const auto plan = model::plan_write_baseline(experiment_doc, label, kinds, experiment_dir, model::folder_of(opts.write_baseline));
      if (mode == RunMode::parse_only) return 0;
      const auto doc = model::write_baseline(plan);
      OutputFiles outputs;
      outputs.add(doc.dump(2) + "\n", opts.write_baseline, "--write-baseline");
      outputs.add(fmt::format("baseline of {} metrics written to {}\n", model::baseline_metric_count(doc), opts.write_baseline), "");
      outputs.commit();
      return 0;
    }
    if (opts.baseline.empty()) throw model::InputError("check: give --baseline FILE, or --write-baseline FILE --experiment FILE");
    const model::CheckRules rules = check_rules(opts);
    const std::string label = "--baseline " + opts.baseline;
    const auto doc = model::read_json_file(opts.baseline, label);
    // Files the baseline names are read beside it, whatever the working directory.
    const std::string base_dir = model::folder_of(opts.baseline);
    const auto plan = model::plan_compare_with_baseline(doc, label, kinds, rules, base_dir);
    if (mode == RunMode::parse_only) return 0;
    const auto checked = model::compare_with_baseline(plan);
    // The JUnit file and what is printed, both or neither: the summary is standard output's file.
    OutputFiles outputs;
    if (!opts.junit.empty()) outputs.add(report::junit_xml(checked, opts.baseline), opts.junit, "--junit");
    std::string summary;
    const auto bad = those(checked, model::failed);
    const auto improved = those(checked, [](model::Outcome o) { return o == model::Outcome::improved; });
    const auto limited = std::ranges::count(checked, model::Outcome::within_limit, &model::CheckedMetric::outcome);
    const std::string limits = limited == 0 ? "" : fmt::format(", {} within their limits", limited);
    if (bad.empty()) {
      summary = fmt::format("check: all {} metrics checked of {} within tolerance{}{}\n", checked.size(), opts.baseline, limits,
                            improved.empty() ? ""
                                             : fmt::format(" or improved ({} improved: record them with --write-baseline)",
                                                           improved.size()));
      if (!improved.empty()) summary += metrics_table(improved);
    } else {
      summary = fmt::format("check: {} of {} metrics checked got worse, went missing or broke a limit\n", bad.size(), checked.size());
      summary += metrics_table(bad);
      if (!improved.empty()) summary += fmt::format("\n{} more improved:\n", improved.size()) + metrics_table(improved);
    }
    outputs.add(std::move(summary), "");
    outputs.commit();
    return bad.empty() ? 0 : 1;
  };
}

}  // namespace stripesim::cli
