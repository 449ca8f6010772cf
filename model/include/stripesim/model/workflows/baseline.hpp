#pragma once
// Regression baselines for CI: an experiment lists configurations of commands (analyze, tms,
// and whatever kinds a caller adds: the CLI adds simulate); the baseline records their headline
// numbers; a check re-runs every configuration and judges each number (baseline_rules.hpp).
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_origins.hpp"
#include "stripesim/model/io/schemas.hpp"
#include "stripesim/model/workflows/baseline_rules.hpp"

namespace stripesim::model {

// One entry's configuration planned: every input checked and every file read, nothing counted.
struct PlannedBaselineEntry {
  std::string configuration;       // a label, e.g. "analyze n=2048 N=8 tile=64x64 mask=causal"
  nlohmann::json recorded_config;  // the configuration as the baseline records it
  // Counts the configuration: metric name -> number.
  std::function<nlohmann::ordered_json()> measure;
};

// One kind of entry. `plan(written, resolved, where)`: `written` is the configuration as the file
// gives it (metric names and labels use it), `resolved` the same with its relative file paths read
// from the file's folder; `where` names it in errors.
struct BaselineEntryKind {
  std::string command;
  std::function<PlannedBaselineEntry(const nlohmann::json& written, const nlohmann::json& resolved, const std::string& where)>
      plan;
};

// analyze (the analyze experiment's fields) and tms ("model", "hardware", "devices",
// "model_parallel", "seq_len", "tile", "tiling", "convention"). Each entry's config records the
// tiling it was counted under (an entry without one, from an older baseline, is rechecked under
// fixed tiling, the only one there was).
[[nodiscard]] std::vector<BaselineEntryKind> model_baseline_kinds(const ConfigCatalog& catalog);

// `label` followed by " key=value" for each field of `written` it does not show (`shown`, the
// layouts, which the metric names carry, and a description): entries of one kind differ in their
// labels as their settings do (a step's zero stage, a kernel), and check's table and JUnit suites
// name them by it; entries that still share one (other layouts, a length spelled two ways) get
// their index added by plan_compare_with_baseline.
[[nodiscard]] std::string label_with_other_fields(std::string label, const nlohmann::json& written,
                                                  std::initializer_list<std::string_view> shown);

// Where an entry's inputs came from: an error about one (a length N does not divide, an unknown
// layout) names `where` and the field, as an --experiment file's do, not the flag.
[[nodiscard]] InputOrigins entry_origins(const nlohmann::json& written, const std::string& where);

// experiment: {"description", "<command>": [configurations], ...} for each kind. Relative file
// paths are read from the experiment's folder and recorded relative to the baseline's, so the
// baseline checks alike from any working directory.
struct BaselineWritePlan {
  struct Entry {
    std::string command;  // the kind's
    PlannedBaselineEntry planned;
  };
  std::string description;
  std::vector<Entry> entries;  // in the kinds' order, then the file's
};
// `experiment_dir`: where the experiment's relative files are read from; `baseline_dir`: where the
// baseline goes, relative to which its entries name them (check reads them from there).
[[nodiscard]] BaselineWritePlan plan_write_baseline(const nlohmann::json& experiment, const std::string& label,
                                                    const std::vector<BaselineEntryKind>& kinds, const std::string& experiment_dir,
                                                    const std::string& baseline_dir);
// Counts every entry: the baseline document.
[[nodiscard]] nlohmann::ordered_json write_baseline(const BaselineWritePlan& plan);

// One recorded number, judged.
struct CheckedMetric {
  std::string configuration;
  std::string metric;  // e.g. "zigzag.elements.imbalance"
  double baseline = 0;
  std::optional<double> now;  // empty when today's run no longer has it
  Outcome outcome = Outcome::within;
  std::string rule;  // "tolerance 1e-06", "imbalance<=1.1"
};

// A baseline read and every entry planned, with the rules that judge it. A pattern in `rules`
// that matches no metric of the baseline is an InputError (a typo must not pass as "nothing
// moved"); relative paths are read from `base_dir`, the baseline's folder.
struct BaselineComparePlan {
  struct Entry {
    PlannedBaselineEntry planned;
    nlohmann::json recorded;  // metric -> number, as the baseline holds them
  };
  std::vector<Entry> entries;
  CheckRules rules;
};
[[nodiscard]] BaselineComparePlan plan_compare_with_baseline(const nlohmann::json& baseline, const std::string& label,
                                                             const std::vector<BaselineEntryKind>& kinds,
                                                             const CheckRules& rules, const std::string& base_dir);
// The regression compare: re-runs every entry and judges every metric the rules select, in the
// file's order.
[[nodiscard]] std::vector<CheckedMetric> compare_with_baseline(const BaselineComparePlan& plan);

// The number of metrics a baseline holds.
[[nodiscard]] std::size_t baseline_metric_count(const nlohmann::json& baseline);

}  // namespace stripesim::model
