#pragma once
// Regression baselines for CI: an experiment lists configurations of commands (analyze, tms,
// and whatever kinds a caller adds: the CLI adds simulate); the baseline records their headline
// numbers; a check re-runs every configuration and judges each number (baseline_rules.hpp).
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/workflows/baseline_rules.hpp"

namespace stripesim::model {

inline constexpr const char* kBaselineSchema = "stripesim.baseline/1";

// What running one entry's configuration gives.
struct BaselineRun {
  std::string configuration;        // a label, e.g. "analyze n=2048 N=8 tile=64x64 mask=causal"
  nlohmann::json recorded_config;   // the configuration as the baseline records it
  nlohmann::ordered_json metrics;   // name -> number (empty when not measured)
};

// One kind of entry. `run(written, resolved, where, measure)`: `written` is the configuration as
// the file gives it (metric names and labels use it), `resolved` the same with its relative file
// paths read from the file's folder; `measure` false checks every input and counts nothing.
struct BaselineEntryKind {
  std::string command;
  std::function<BaselineRun(const nlohmann::json& written, const nlohmann::json& resolved, const std::string& where,
                            bool measure)>
      run;
};

// analyze (the analyze experiment's fields) and tms ("model", "hardware", "devices",
// "model_parallel", "seq_len", "tile", "tiling", "convention"). Each entry's config records the
// tiling it was counted under (an entry without one, from an older baseline, is rechecked under
// fixed tiling, the only one there was).
[[nodiscard]] std::vector<BaselineEntryKind> model_baseline_kinds(const ConfigCatalog& catalog);

// The configuration with each file it names (a documents:FILE mask, permutation:FILE layouts, a
// model, hardware, kernel or topology given as a JSON file) read from `base_dir` when relative.
[[nodiscard]] nlohmann::json with_files_from(nlohmann::json config, const std::string& base_dir);

// experiment: {"description", "<command>": [configurations], ...} for each kind. Relative file
// paths are read from `base_dir` (the experiment's folder) and recorded as written, so the
// baseline, kept beside them, checks alike from any working directory.
[[nodiscard]] nlohmann::ordered_json write_baseline(const nlohmann::json& experiment, const std::string& label,
                                                    const std::vector<BaselineEntryKind>& kinds,
                                                    const std::string& base_dir);

// One recorded number, judged.
struct CheckedMetric {
  std::string configuration;
  std::string metric;  // e.g. "zigzag.elements.imbalance"
  double baseline = 0;
  std::optional<double> now;  // empty when today's run no longer has it
  Outcome outcome = Outcome::within;
  std::string rule;  // "tolerance 1e-06", "imbalance<=1.1"
};

// Re-runs every entry of `baseline` (relative paths read from `base_dir`, the baseline's folder)
// and judges every metric `rules` select, in the file's order. A pattern in `rules` that matches
// no metric of the baseline is an InputError (a typo must not pass as "nothing moved").
[[nodiscard]] std::vector<CheckedMetric> compare_with_baseline(const nlohmann::json& baseline, const std::string& label,
                                                               const std::vector<BaselineEntryKind>& kinds,
                                                               const CheckRules& rules, const std::string& base_dir);

// Every InputError write_baseline and compare_with_baseline would throw, in the same order, without
// counting anything (each configuration planned, not run). For checking inputs only (stripesim's
// parse-only mode).
void check_baseline_experiment_inputs(const nlohmann::json& experiment, const std::string& label,
                                      const std::vector<BaselineEntryKind>& kinds, const std::string& base_dir);
void check_baseline_inputs(const nlohmann::json& baseline, const std::string& label,
                           const std::vector<BaselineEntryKind>& kinds, const CheckRules& rules,
                           const std::string& base_dir);

// The number of metrics a baseline holds.
[[nodiscard]] std::size_t baseline_metric_count(const nlohmann::json& baseline);

}  // namespace stripesim::model
