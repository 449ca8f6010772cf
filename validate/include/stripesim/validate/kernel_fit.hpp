#pragma once
// Fitting a kernel profile's costs to measured calls, on the kernel time model's own features
// (sim/kernel_time.hpp): with the blocks placed, a call's time is linear in the costs, so the
// fit alternates a non-negative least-squares solve on relative residuals (reweighted for
// Huber's loss, so a disturbed measurement does not pull every cost) with placing the blocks
// again under the new costs, and keeps the best costs seen. A partial tile is fitted as
// a full tile plus a non-negative extra, so it never costs less than a full one. The fit also
// picks the kernel's structure that fits best: blocks per SM (1, 2, 3, 4, 6 or 8, no more than the
// SM's shared memory holds at the tile), block order, how much faster a lone block runs
// (BlockPlacement::lone_block_speedup) and whether the SM shares its throughput or only speeds up a
// lone block (BlockPlacement::sharing), and, where backward calls were timed alone, the
// backward's own placement. For a
// kernel that trims blocks (KernelProfile::trims_below_diagonal), each pass's trimmed_factor is
// fitted in the same alternation on the calls it slows, from their time at factor 1.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/validate/kernel_measurements.hpp"

namespace stripesim::validate {

// One measured call with what the model needs to price it.
struct MeasuredCall {
  size_t workload = 0;  // index into the workloads it came from
  Count round = 0;
  Count device = 0;
  model::QueryTileProfile rows;
  model::KeyTileProfile columns;  // the backward's view of the same tiles (model::Work::key_tile_profile)
  Count trimmed_length = 0;  // model::Work::trimmed_length of its (round, device) when the kernel trims, else 0
  sim::KernelCallShape shape;
  bool forward = true;
  bool backward = false;
  double measured_us = 0;
};

// Every call of every workload, its query and key tile profiles counted by the work model with the
// workload's tile (or the kernel's when the file has none). Throws model::InputError when a
// file's active_blocks disagree with the count (the file then lays out or masks differently).
[[nodiscard]] std::vector<MeasuredCall> measured_calls(const std::vector<MeasuredWorkload>& workloads,
                                                       const model::HardwareProfile& hardware,
                                                       const sim::KernelProfile& kernel);

// Whether stripesim counts an active tile in the call (a call without one need not run).
[[nodiscard]] bool has_work(const MeasuredCall& call);

// What decides a call's work: its shape, the passes it times, the length it runs trimmed at and
// the (full, partial) tiles of every query tile (and, when it times a backward, of every key
// tile). Calls with equal keys take equal time under any
// kernel profile.
[[nodiscard]] std::vector<double> work_key(const MeasuredCall& call);

// The model's time for one call under `kernel`.
[[nodiscard]] double predicted_us(const MeasuredCall& call, const sim::KernelProfile& kernel, Count sms);

struct KernelFit {
  sim::KernelProfile profile;  // `base` with costs, structure and the fit record filled in
  Count samples = 0;
  double median_abs_error = 0;  // relative, over the calls it was fitted on
  double max_abs_error = 0;
};

// What is known of the kernel, so that the fit need not choose it from the timings.
struct FitOptions {
  // The order the kernel launches its blocks in, read from its source: FlashAttention-2's forward
  // runs the query tiles of one head after another, fastest, so a causal call starts its shortest
  // blocks first. Unset: both orders are tried and the better fit kept.
  std::optional<sim::BlockOrder> block_order;
  // The backward's, where it differs: FlashAttention-2's backward runs a block per key tile in
  // grid order, and under a causal mask key tile 0 is read by every query tile: longest first.
  // Unset: the forward's.
  std::optional<sim::BlockOrder> backward_block_order;
  // Start from tile counts alone instead of the base profile's costs (kept for the passes no call
  // timed). The fit lands in the valley of equally good fits nearest its start, so a fit scored
  // on files it was not given (leave one out) must not start from costs fitted on those files.
  bool cold_start = false;
};

// `base` gives the name, tile, head size and precision; costs and structure are fitted, the
// empty-call flags are read off the data (a call with no work that took time was launched).
// Unless options.cold_start, the fit starts from the base's costs, returns none that fit the
// calls worse than the base does at its own placement, and refits from its own result until that
// fits no better: what it returns, given back as `base`, comes back unchanged.
[[nodiscard]] KernelFit fit_kernel(const std::vector<MeasuredCall>& calls, const sim::KernelProfile& base,
                                   const model::HardwareProfile& hardware, const FitOptions& options = {});

}  // namespace stripesim::validate
