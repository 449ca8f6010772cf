#pragma once
// The `analyze` workflow as a library call: several layouts of one sequence under one mask and
// tile shape, their work matrices and metrics, and the JSON contract other tools parse.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/model/io/schemas.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/metrics.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/work_matrix.hpp"

namespace stripesim::model {

inline constexpr Count kMaxAnalyzeDevices = 2048;

// Defaults are the paper's A100 setting: n = 256k, N = 8, tiles 2048x4096, causal.
struct AnalyzeConfig {
  Count seq_len = 262144;
  Count devices = 8;
  TileShape tile{2048, 4096};
  Tiling tiling = Tiling::fixed;  // how the kernel cuts tiles (tile_shape.hpp); matters under a documents mask
  std::vector<std::string> layouts{"contiguous", "striped", "zigzag"};
  std::string mask = "causal";
  // Pad every document to a multiple of 2N (what doc-zigzag needs); the padding is waste.
  bool pad_documents = false;
};

// Reads an analyze config object (keys seq_len, devices, tile, tiling, layouts, mask,
// pad_documents; all optional, unknown keys rejected) on top of `base`. `label` names the source in errors.
[[nodiscard]] AnalyzeConfig analyze_config_from_json(const nlohmann::json& doc, AnalyzeConfig base,
                                                     const std::string& label);

struct LayoutResult {
  std::string layout;
  Work work;
  Metrics elements;
  Metrics tiles;
  // contiguous lockstep / this layout's lockstep: how much faster than plain Ring Attention.
  double elements_lockstep_speedup_vs_contiguous = 0;
  double tiles_lockstep_speedup_vs_contiguous = 0;
  // The busiest device's active tiles, and the lockstep tiles, over the analysis's tile bound:
  // unlike speedup and imbalance (relative to the layout's own total) every layout shares the
  // denominator, so these rank layouts whose totals differ (packed documents).
  double tiles_vs_bound = 0;
  double tiles_lockstep_vs_bound = 0;
  // Under varlen tiling with a documents mask: per device, the pieces of documents it holds
  // (the cu_seqlens entries a varlen call needs; document_layouts.hpp). Empty otherwise.
  std::vector<Count> document_pieces;
};

struct Analysis {
  AnalyzeConfig config;
  Mask mask;
  Count seq_len = 0;         // after padding
  Count padding_tokens = 0;  // added by pad_documents
  std::vector<LayoutResult> results;
  // The fewest active tiles any analysed layout needs, over N: no layout's busiest device can do
  // less unless some layout needs fewer tiles in all.
  double tile_bound = 0;
  // Index in results of the best layout: the lowest tiles_vs_bound, then the lowest
  // tiles_lockstep_vs_bound, then the first listed.
  size_t best = 0;
};

// What an analysis is built from once every input is checked: the mask (padded when asked) and
// the layouts planned (layout_spec.hpp), not one computed or counted yet.
struct AnalysisPlan {
  AnalyzeConfig config;
  Mask mask;
  Count seq_len = 0;         // after padding
  Count padding_tokens = 0;  // added by pad_documents
  std::vector<LayoutPlan> layouts;
};

// Validates everything (sizes, specs, files) and builds the mask; throws InputError. Up to
// kMaxAnalyzeDevices: the analysis keeps N x N matrices per layout.
[[nodiscard]] AnalysisPlan plan_analysis(const AnalyzeConfig& config);

// The same checks and plan without the analysis's device bound (a Layout's own holds): for what
// builds the layouts alone and keeps no matrices (`layout`'s export).
[[nodiscard]] AnalysisPlan plan_layouts(const AnalyzeConfig& config);

// Builds the plan's layouts and counts their work, one layout at a time; run_analysis(config) is
// run_analysis(plan_analysis(config)).
[[nodiscard]] Analysis run_analysis(const AnalysisPlan& plan, unsigned threads = 0);
[[nodiscard]] Analysis run_analysis(const AnalyzeConfig& config, unsigned threads = 0);

// Its printers (table, JSON, CSV): output/analysis_printers.hpp.
// The mask as every output describes it: {"spec", "kind"}, plus "window" for a window mask and
// "document_lengths" (as counted, so after any padding) for a documents mask.
[[nodiscard]] nlohmann::ordered_json mask_to_json(const Mask& mask, const std::string& spec);

}  // namespace stripesim::model
