#pragma once
// Theoretical Maximum Speedup (Striped Attention paper, section 4): communication perfectly
// overlapped, non-matmul FLOPs negligible, attention FLOPs weighted by the hardware's
// attention_flop_weight. For a layout X,
//   time(X) = (c * F_token * m_matmul + w * F_pair * lockstep_pairs(X) * m_attention) / M
//   TMS(X)  = time(contiguous) / time(X)
// with lockstep_pairs the work model's exact sum over rounds of the busiest device's unmasked
// pairs. The tile-aware TMS replaces pairs by lockstep active tiles * TQ * TK: what a kernel
// that skips only whole tiles computes (the gap the paper blames for measured < TMS).
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "stripesim/model/flops/flop_model.hpp"
#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/flops/transformer_model.hpp"
#include "stripesim/model/io/schemas.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/metrics.hpp"
#include "stripesim/model/work/tile_shape.hpp"

namespace stripesim::model {

struct TmsRequest {
  TransformerModel model;
  HardwareProfile hardware;
  Count devices = 8;         // sequence-parallel degree N
  Count model_parallel = 1;  // M: divides every FLOP count, so it cancels in TMS
  Count seq_len = 262144;
  std::optional<TileShape> tile;  // default: the hardware's default tile
  Tiling tiling = Tiling::fixed;  // how the kernel cuts tiles (tile_shape.hpp); matters under a documents mask
  FlopConvention convention = FlopConvention::paper;
  TrainingPass pass = TrainingPass::forward_backward;
  bool recompute = false;
  std::optional<double> attention_flop_weight;  // overrides the hardware's
  std::vector<std::string> extra_layouts;       // beyond contiguous, striped, zigzag
  std::string mask = "causal";
};

struct LayoutTms {
  std::string layout;
  double tms = 0;        // contiguous time / this layout's time, from unmasked pairs
  double tms_tiles = 0;  // the same from active tiles
  Metrics elements;
  Metrics tiles;
  double time = 0;        // weighted FLOPs per device (FLOP-equivalents at the matmul rate)
  double time_tiles = 0;
};

struct TmsResult {
  TmsRequest request;
  TileShape tile;
  MaskKind mask_kind = MaskKind::causal;  // the request's mask as planned: printers need not parse it again
  double attention_flop_weight = 0;
  FlopCounts flops;
  TrainingMultipliers multipliers;
  double non_attention_per_device = 0;  // c * F_token * m_matmul / M
  std::vector<LayoutTms> layouts;       // contiguous, striped, zigzag, then the extras

  [[nodiscard]] const LayoutTms& layout(const std::string& name) const;
};

// The layouts a TMS result holds, in its order: contiguous (the reference), striped, zigzag,
// then the request's extra layouts.
[[nodiscard]] std::vector<std::string> tms_layouts(const TmsRequest& request);

// A request with every input checked (M against the heads, recomputation against the pass, the
// mask built, every layout planned at (n, N, tile)), nothing counted: what parse-only mode runs.
struct TmsPlan {
  TmsRequest request;
  TileShape tile;                   // the request's, or the hardware's default
  Mask mask;
  std::vector<LayoutPlan> layouts;  // tms_layouts(request)'s, in order
};
[[nodiscard]] TmsPlan plan_tms(const TmsRequest& request);

// Metrics of one layout's work, memoised across TMS points that share (layout, n, N, tile, tiling, mask):
// a sweep over models and model-parallel degrees reuses them. Thread-safe.
class WorkMetricsCache {
 public:
  // The metrics of plan.layouts[index], counted (its layout built) the first time they are asked for.
  std::pair<Metrics, Metrics> get(const TmsPlan& plan, size_t index);

 private:
  using Key = std::tuple<std::string, Count, Count, Count, Count, Tiling, std::string>;
  std::mutex mutex_;
  std::map<Key, std::pair<Metrics, Metrics>> entries_;
};

[[nodiscard]] TmsResult run_tms(const TmsPlan& plan, WorkMetricsCache* cache = nullptr);
// run_tms(plan_tms(request), cache).
[[nodiscard]] TmsResult compute_tms(const TmsRequest& request, WorkMetricsCache* cache = nullptr);

// Its printers (table, JSON, CSV): output/tms_printers.hpp.

}  // namespace stripesim::model
