#pragma once
// A grid of analyze runs over sequence lengths, device counts, masks (document-length
// distributions, windows) and tiles: for every layout its imbalance and its distance from the
// best possible, one row per (point, layout). It answers "where does each layout stop being
// balanced?".
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/model/io/schemas.hpp"
#include "stripesim/model/workflows/analysis.hpp"
#include "stripesim/model/workflows/sweep.hpp"

namespace stripesim::model {

struct BalanceGroup {
  std::vector<Count> seq_lens;
  std::vector<Count> devices;
  std::vector<std::string> masks;
  std::vector<TileShape> tiles{TileShape{128, 128}};
  std::vector<std::string> layouts{"contiguous", "striped", "zigzag", "balanced"};
  bool pad_documents = false;
};

struct BalanceSweepSpec {
  std::string label;  // the file it was read from, as errors name it; empty: made in code
  std::string description;
  Tiling tiling = Tiling::fixed;  // every point's (tile_shape.hpp)
  std::vector<BalanceGroup> groups;
};

// {"kind": "balance", "description", "tiling", "groups": [{"seq_lens", "devices", "masks", "tiles",
// "layouts", "pad_documents"}]}. Per-document layouts and padding apply to documents masks only.
[[nodiscard]] BalanceSweepSpec balance_spec_from_json(const nlohmann::json& doc, const std::string& label);
[[nodiscard]] Count count_points(const BalanceSweepSpec& spec);

// Every point checked and its analysis planned (plan_analysis: the mask built, the layouts
// planned, nothing computed or counted); an error names the point's field of the file. Parse-only
// mode stops here.
struct BalanceSweepPlan {
  std::vector<AnalysisPlan> points;  // in grid order: groups, then seq_lens, devices, masks, tiles
};
[[nodiscard]] BalanceSweepPlan plan_balance_sweep(const BalanceSweepSpec& spec);

// One row per (point, layout). Columns: n_seq, devices, mask, tile, documents, padding_fraction,
// layout, imbalance, tiles_imbalance, lockstep_speedup, tiles_lockstep_speedup, tiles_vs_bound
// (the busiest device's tiles over the smallest total tile count of the point's layouts divided
// by N), tiles_lockstep_vs_bound.
[[nodiscard]] std::vector<nlohmann::ordered_json> run_balance_sweep(const BalanceSweepPlan& plan,
                                                                   const SweepProgress& progress = {},
                                                                   unsigned threads = 0);

}  // namespace stripesim::model
