#pragma once
// Regression baselines for CI: an experiment lists analyze and TMS configurations; the baseline
// records their headline numbers; a check re-runs every configuration and reports each number
// that moved by more than a relative tolerance.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/model/config_catalog.hpp"

namespace stripesim::model {

inline constexpr const char* kBaselineSchema = "stripesim.baseline/1";

// experiment: {"description", "analyze": [analyze configs], "tms": [{"model", "hardware",
// "devices", "model_parallel", "seq_len", "tile", "tiling", "convention"}]}. Returns the baseline
// document; every entry's config records the tiling it was counted under (an entry without one,
// from an older baseline, is rechecked under fixed tiling, the only one there was).
[[nodiscard]] nlohmann::ordered_json write_baseline(const nlohmann::json& experiment, const std::string& label,
                                                    const ConfigCatalog& catalog);

struct MovedMetric {
  std::string configuration;  // e.g. "analyze n=2048 N=8 tile=64x64 mask=causal"
  std::string metric;         // e.g. "zigzag.elements.imbalance"
  double baseline = 0;
  double now = 0;             // NaN when the metric no longer exists
};

// Re-runs every entry of `baseline`; `tolerance` is relative (|now - baseline| > tolerance * |baseline|).
[[nodiscard]] std::vector<MovedMetric> check_baseline(const nlohmann::json& baseline, const std::string& label,
                                                      const ConfigCatalog& catalog, double tolerance);

// Every InputError write_baseline and check_baseline would throw, in the same order, without
// counting anything (each configuration planned, not run). For checking inputs only (stripesim's
// parse-only mode).
void check_baseline_experiment(const nlohmann::json& experiment, const std::string& label, const ConfigCatalog& catalog);
void check_baseline_document(const nlohmann::json& baseline, const std::string& label, const ConfigCatalog& catalog);

// The number of metrics a baseline holds (for the "all N metrics within tolerance" line).
[[nodiscard]] std::size_t baseline_metric_count(const nlohmann::json& baseline);

}  // namespace stripesim::model
