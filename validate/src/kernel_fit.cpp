#include "stripesim/validate/kernel_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/sim/golden_section.hpp"
#include "stripesim/sim/simulation.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/validate/calibration.hpp"
#include "stripesim/validate/measurement_stats.hpp"

namespace stripesim::validate {

using model::InputError;

std::vector<MeasuredCall> measured_calls(const std::vector<MeasuredWorkload>& workloads,
                                         const model::HardwareProfile& hardware, const sim::KernelProfile& kernel) {
  std::vector<MeasuredCall> calls;
  for (size_t i = 0; i < workloads.size(); ++i) {
    const MeasuredWorkload& w = workloads[i];
    const double slowdown = w.origins.run([&] { return sim::precision_slowdown(hardware, kernel, w.dtype); });
    const model::TileShape tile = w.tile.value_or(kernel.tile);
    // Counted as the measured kernel cuts its tiles.
    const model::Work work = w.origins.run([&] {
      sim::check_attention_shape(w.heads, w.kv_heads, w.head_dim, w.batch);  // before a fit counts its blocks
      const model::Mask mask = model::parse_mask(w.mask, w.seq_len);
      const model::Layout layout =
          model::parse_layout(w.layout, w.seq_len, w.devices, model::LayoutContext{&mask, tile, kernel.tiling});
      return model::count_work(layout, mask, tile, 0, model::WorkDetail::query_tiles, kernel.tiling, sim::call_slicing(kernel));
    });
    // A ring's calls hold one device's block of queries and of keys: a larger tile is cut to it,
    // as the simulator that predicts these calls cuts it (plan_simulation's call_shape).
    const sim::KernelCallShape shape{w.heads * w.batch, w.head_dim, tile, slowdown, w.seq_len / w.devices};
    for (Count r = 0; r < w.devices; ++r) {
      for (Count d = 0; d < w.devices; ++d) {
        const size_t cell = static_cast<size_t>(r * w.devices + d);
        if (w.active_blocks && (*w.active_blocks)[cell] != work.active_tiles.at(r, d)) {
          throw InputError(fmt::format("{}: round {} device {}: the file counts {} active blocks, stripesim {} for this "
                                       "layout, mask and tile (a different layout or mask convention?)",
                                       w.active_blocks_where, r, d, (*w.active_blocks)[cell], work.active_tiles.at(r, d)));
        }
        MeasuredCall call;
        call.workload = i;
        call.round = r;
        call.device = d;
        call.rows = work.profiles[static_cast<size_t>(work.query_tile_profile.at(r, d))];
        call.columns = work.profiles[static_cast<size_t>(work.key_tile_profile.at(r, d))];
        if (kernel.trims_below_diagonal) call.trimmed_length = work.trimmed_length.at(r, d);
        call.shape = shape;
        call.forward = w.pass != sim::PassSelection::backward;
        call.backward = w.pass != sim::PassSelection::forward;
        call.measured_us = w.us[cell];
        calls.push_back(std::move(call));
      }
    }
  }
  return calls;
}

std::vector<double> work_key(const MeasuredCall& c) {
  std::vector<double> key{static_cast<double>(c.shape.streams),    static_cast<double>(c.shape.head_dim),
                          static_cast<double>(c.shape.tile.query), static_cast<double>(c.shape.tile.key),
                          c.shape.precision_slowdown,              static_cast<double>(c.trimmed_length),
                          c.forward ? 1.0 : 0.0,                   c.backward ? 1.0 : 0.0};
  for (const auto& row : c.rows) key.insert(key.end(), {static_cast<double>(row.full), static_cast<double>(row.partial)});
  if (!c.backward) return key;  // the key tiles' loads price the backward alone
  key.push_back(-1);             // between the two profiles: no tile count is negative
  for (const auto& column : c.columns) key.insert(key.end(), {static_cast<double>(column.full), static_cast<double>(column.partial)});
  return key;
}

double predicted_us(const MeasuredCall& call, const sim::KernelProfile& kernel, Count sms) {
  const sim::KernelTimeModel model(kernel, sms, call.shape);
  double us = 0;
  if (call.forward) us += model.call_us(call.rows, sim::KernelPass::forward, call.trimmed_length);
  if (call.backward) us += model.call_us(call.rows, call.columns, sim::KernelPass::backward, call.trimmed_length);
  return us;
}

bool has_work(const MeasuredCall& call) {
  return std::any_of(call.rows.begin(), call.rows.end(), [](const model::QueryTileLoad& l) { return l.full + l.partial > 0; });
}

namespace {

struct Costs {
  sim::PassCosts forward, backward;
};

// Each call's forward and backward features placed with one set of costs. Calls of equal work
// (same shape, query tile profile, trimmed length and passes: a ring repeats a few kinds of call
// many times) are placed once, by the first of their kind.
struct PlacedCall {
  sim::KernelFeatures forward, backward;
};

std::vector<size_t> first_of_kind(const std::vector<MeasuredCall>& calls) {
  std::map<std::vector<double>, size_t> first;
  std::vector<size_t> out(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) out[i] = first.emplace(work_key(calls[i]), i).first->second;
  return out;
}

std::vector<PlacedCall> place_calls(const std::vector<MeasuredCall>& calls, const std::vector<size_t>& kind,
                                    const std::vector<sim::KernelTimeModel>& models, const Costs& costs) {
  std::vector<PlacedCall> out(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    if (kind[i] != i) {
      out[i] = out[kind[i]];
      continue;
    }
    const MeasuredCall& call = calls[i];
    const sim::KernelTimeModel& m = models[call.workload];
    if (call.forward) out[i].forward = m.features(call.rows, sim::KernelPass::forward, costs.forward, call.trimmed_length);
    if (call.backward) out[i].backward = m.features(call.rows, call.columns, sim::KernelPass::backward, costs.backward, call.trimmed_length);
  }
  return out;
}

// Relative errors of every timed call (measured > 0), placed with `costs` and priced with them.
std::vector<double> relative_errors(const std::vector<MeasuredCall>& calls, const std::vector<PlacedCall>& placed,
                                    const Costs& costs) {
  std::vector<double> errors;
  for (size_t i = 0; i < calls.size(); ++i) {
    const MeasuredCall& call = calls[i];
    if (call.measured_us <= 0) continue;
    const double us = sim::dot(placed[i].forward, costs.forward) + sim::dot(placed[i].backward, costs.backward);
    errors.push_back(relative_error(us, call.measured_us));
  }
  return errors;
}

// Timings carry outliers (a call disturbed by a clock change or a neighbour takes twice what
// identical calls beside it take), so the fit is robust: Huber's loss on relative errors,
// quadratic up to kHuber and linear beyond, solved by reweighting each call with
// min(1, kHuber / |error|). A typical repeat-to-repeat spread is a few percent.
constexpr double kHuber = 0.05;

double huber_weight(double error) { return std::abs(error) <= kHuber ? 1.0 : kHuber / std::abs(error); }

double robust_loss(const std::vector<double>& errors) {
  double s = 0;
  for (const double e : errors) s += std::abs(e) <= kHuber ? 0.5 * e * e : kHuber * (std::abs(e) - 0.5 * kHuber);
  return s;
}

// The trimmed factor of each pass, given the other costs: a trimmed call that ends inside a tile
// takes f_fwd * F + f_bwd * B, its forward and backward times at factor 1, a linear fit on the
// calls it applies to (weighted as the costs are). A pass with no such call keeps its factor, as
// does a pass not fitted (`fit_forward`, `fit_backward`) and a forward timed only within
// forward+backward sums, which cannot tell the two factors apart.
void fit_trimmed_factors(const std::vector<MeasuredCall>& calls, const std::vector<sim::KernelTimeModel>& models,
                         const std::vector<double>& errors, Costs& costs, bool fit_forward, bool fit_backward) {
  const Costs plain = [&] {
    Costs c = costs;
    c.forward.trimmed_factor = c.backward.trimmed_factor = 1;
    return c;
  }();
  struct Sample {
    double forward_us, backward_us, fixed_us, measured_us, weight;
  };
  std::vector<Sample> samples;
  bool forward = false, backward = false;
  size_t timed = 0;  // index into `errors`: one per timed call, in order
  for (const MeasuredCall& call : calls) {
    if (call.measured_us <= 0) continue;
    const double error = errors[timed++];
    const sim::KernelTimeModel& m = models[call.workload];
    if (!m.slowed_by_trim(call.trimmed_length)) continue;
    const double f = call.forward ? sim::dot(m.features(call.rows, sim::KernelPass::forward, plain.forward), plain.forward) : 0.0;
    const double b =
        call.backward ? sim::dot(m.features(call.rows, call.columns, sim::KernelPass::backward, plain.backward), plain.backward) : 0.0;
    forward = forward || (fit_forward && f > 0 && !call.backward);
    backward = backward || (fit_backward && b > 0);
    samples.push_back({f, b, 0, call.measured_us, std::sqrt(huber_weight(error)) / call.measured_us});
  }
  if (samples.empty() || (!forward && !backward)) return;
  // A pass whose factor is not fitted keeps its own: its time moves to the left side.
  for (Sample& s : samples) {
    if (!forward) s.fixed_us += s.forward_us * costs.forward.trimmed_factor;
    if (!backward) s.fixed_us += s.backward_us * costs.backward.trimmed_factor;
  }
  // Only the passes some call informs are columns; the others keep their factor.
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (const Sample& s : samples) {
    std::vector<double> row;
    if (forward) row.push_back(s.forward_us);
    if (backward) row.push_back(s.backward_us);
    rows.push_back(std::move(row));
    y.push_back(s.measured_us - s.fixed_us);
    w.push_back(s.weight);
  }
  const std::vector<double> factor = fit_non_negative(rows, y, w);
  if (forward && factor[0] > 0) costs.forward.trimmed_factor = factor[0];
  if (backward && factor[forward ? 1 : 0] > 0) costs.backward.trimmed_factor = factor[forward ? 1 : 0];
}

// A cold start's costs: every tile alike and nothing else, in tile units (a pass's head-size
// share is kept: it is fitted apart, on calls timed at several head sizes).
sim::PassCosts cold_start_costs(sim::PassCosts costs) {
  costs.launch_us = costs.block_us = 0;
  costs.full_tile_us = costs.partial_tile_us = 1;
  costs.trimmed_factor = 1;
  return costs;
}

struct StructureFit {
  sim::KernelProfile profile;
  std::vector<double> errors;
  double objective = 0;
};

// From `k`'s costs and placement; `cold`: its costs (tile units, cold_start_costs) only place the
// blocks for the first solve, which weighs every call alike, and are never the answer.
StructureFit fit_costs(const std::vector<MeasuredCall>& calls, sim::KernelProfile k, Count sms, bool fit_forward,
                       bool fit_backward, bool cold = false) {
  std::map<size_t, sim::KernelCallShape> shapes;
  for (const MeasuredCall& call : calls) shapes.emplace(call.workload, call.shape);
  std::vector<sim::KernelTimeModel> models;
  const size_t workloads = shapes.empty() ? 0 : shapes.rbegin()->first + 1;
  for (size_t w = 0; w < workloads; ++w) {
    models.emplace_back(k, sms, shapes.contains(w) ? shapes.at(w) : sim::KernelCallShape{});
  }
  Costs costs{k.forward, k.backward};
  Costs best = costs;
  const std::vector<size_t> kind = first_of_kind(calls);
  // The errors of the current costs weight the next solve; each set of costs is placed once.
  std::vector<PlacedCall> placed = place_calls(calls, kind, models, costs);
  std::vector<double> errors = relative_errors(calls, placed, costs);  // one per timed call, in order
  double best_objective = robust_loss(errors);
  std::vector<double> best_errors = errors;
  if (cold) {
    std::fill(errors.begin(), errors.end(), 0.0);
    best_objective = std::numeric_limits<double>::infinity();
  }
  // Columns: [launch, block, all tiles, partial extra] for each pass fitted.
  for (int iteration = 0, stale = 0; iteration < 60 && stale < 4; ++iteration) {
    std::vector<std::vector<double>> rows;
    std::vector<double> y, w;
    for (size_t i = 0; i < calls.size(); ++i) {
      const MeasuredCall& call = calls[i];
      if (call.measured_us <= 0) continue;
      std::vector<double> row;
      auto append = [&](bool fitted, const sim::KernelFeatures& f) {
        if (fitted) row.insert(row.end(), {f.launches, f.blocks, f.full_tiles + f.partial_tiles, f.partial_tiles});
      };
      append(fit_forward, placed[i].forward);
      append(fit_backward, placed[i].backward);
      // A pass that is not fitted but was timed keeps its costs: move its time to the left side.
      double fixed = 0;
      if (!fit_forward) fixed += sim::dot(placed[i].forward, costs.forward);
      if (!fit_backward) fixed += sim::dot(placed[i].backward, costs.backward);
      rows.push_back(std::move(row));
      y.push_back(call.measured_us - fixed);
      w.push_back(std::sqrt(huber_weight(errors[y.size() - 1])) / call.measured_us);
    }
    const std::vector<double> theta = fit_non_negative(rows, y, w);
    Costs next = costs;
    size_t at = 0;
    auto take = [&](bool fitted, sim::PassCosts& c) {
      if (!fitted) return;
      c.launch_us = theta[at];
      c.block_us = theta[at + 1];
      // A tile always costs something: a column with no signal keeps a token positive cost.
      c.full_tile_us = std::max(theta[at + 2], 1e-6);
      c.partial_tile_us = c.full_tile_us + theta[at + 3];
      at += 4;
    };
    take(fit_forward, next.forward);
    take(fit_backward, next.backward);
    fit_trimmed_factors(calls, models, errors, next, fit_forward, fit_backward);
    placed = place_calls(calls, kind, models, next);
    std::vector<double> next_errors = relative_errors(calls, placed, next);
    const double objective = robust_loss(next_errors);
    const bool moved = next.forward != costs.forward || next.backward != costs.backward;
    costs = next;
    errors = std::move(next_errors);
    if (objective < best_objective * (1 - 1e-9)) {
      best_objective = objective;
      best = costs;
      best_errors = errors;
      stale = 0;
    } else {
      ++stale;
    }
    if (!moved) break;
  }
  k.forward = best.forward;
  k.backward = best.backward;
  return {k, std::move(best_errors), best_objective};
}

// The blocks per SM a fit tries, up to what the SM's shared memory holds (most_blocks_per_sm).
// A 128x128 tile of head 128 leaves room for two; this project's 64x64 kernel (2 warps, 53 KB)
// runs four, and fitted with at most two its small calls missed by 20 % on an H200.
constexpr std::array<Count, 6> kBlocksPerSmTried{1, 2, 3, 4, 6, 8};
// How often a fit started from a profile refits from its own result at most (each refit must fit
// better than the last; two have been needed so far).
constexpr int kMostRefits = 8;

// The most blocks of `kernel` cut into `tile` an SM can hold: a flash-style block keeps at least
// its query tile and one key and one value tile (TQ + 2 TK rows of the head) in shared memory.
// No bound when the hardware profile does not say how much shared memory an SM has.
Count most_blocks_per_sm(const sim::KernelProfile& kernel, model::TileShape tile, const model::HardwareProfile& hardware) {
  if (!hardware.shared_memory_per_sm) return kBlocksPerSmTried.back();
  const Count block_bytes = (tile.query + 2 * tile.key) * kernel.head_dim * sim::dtype_bytes(kernel.dtype);
  return std::max<Count>(1, *hardware.shared_memory_per_sm / block_bytes);
}

// How much faster a lone block may run than one on a full SM (BlockPlacement::lone_block_speedup):
// fixed slots (1), a few steps between, and the SM's whole throughput (blocks_per_sm). A device
// run as fixed slots (`slots`) has no SMs to share.
std::vector<double> lone_block_speedups_tried(Count blocks_per_sm, const sim::KernelProfile& start) {
  std::vector<double> tried{1.0};
  if (start.slots) return tried;
  for (const double s : {1.5, 2.0}) {
    if (s < static_cast<double>(blocks_per_sm)) tried.push_back(s);
  }
  if (blocks_per_sm > 1) tried.push_back(static_cast<double>(blocks_per_sm));
  return tried;
}

// Every placement a fit tries, in the order it tries them: blocks per SM up to what shared memory
// holds, each block order, the lone block's speed-up rising (each fit starting from the costs of
// the one before: the costs move little from one speed-up to the next), first with the SM's
// throughput shared, then, above 2 blocks per SM (where the two differ), with only a lone block
// faster.
std::vector<sim::BlockPlacement> placements_tried(const sim::KernelProfile& start, const model::HardwareProfile& hardware,
                                                  const FitOptions& options) {
  const Count most = most_blocks_per_sm(start, start.tile, hardware);
  const std::vector<sim::BlockOrder> orders =
      options.block_order ? std::vector{*options.block_order}
                          : std::vector{sim::BlockOrder::launch, sim::BlockOrder::longest_first};
  std::vector<sim::BlockPlacement> out;
  for (const Count blocks_per_sm : kBlocksPerSmTried) {
    if (blocks_per_sm > most) break;
    for (const sim::BlockOrder order : orders) {
      for (const sim::SmSharing sharing : {sim::SmSharing::throughput, sim::SmSharing::lone_block}) {
        if (sharing == sim::SmSharing::lone_block && blocks_per_sm <= 2) continue;
        for (const double speedup : lone_block_speedups_tried(blocks_per_sm, start)) {
          if (sharing == sim::SmSharing::lone_block && speedup == 1) continue;  // fixed slots, tried above
          out.push_back({blocks_per_sm, order, speedup, sharing});
        }
      }
    }
  }
  return out;
}

// The costs and placements that fit `calls` best, from `start`. First one placement for both
// passes; then, when backward calls were timed alone, the backward's own placement (a backward kernel has
// its own occupancy: FlashAttention's runs fewer, larger blocks, this project's many of 32 keys),
// then the forward's again with the backward's fixed. `cold`: the fitted passes' costs in `start`
// are cold_start_costs, which only place the blocks of each chain's first fit and are no
// candidate themselves (a separate flag, not options.cold_start: the refits that follow the
// first, from fitted costs, are warm).
StructureFit fit_structure(const std::vector<MeasuredCall>& calls, const sim::KernelProfile& start,
                           const model::HardwareProfile& hardware, bool fit_forward, bool fit_backward,
                           const FitOptions& options, bool cold = false) {
  const Count sms = hardware.sms;
  const std::vector<sim::BlockPlacement> tried = placements_tried(start, hardware, options);
  std::optional<StructureFit> best;
  // Placements are tried simplest first; one that fits no better than an earlier one (calls
  // that cannot tell them apart: an SM sharing among B blocks and one running them in turn are
  // both work-conserving) does not replace it.
  const auto keep = [&](StructureFit fit) {
    if (!best || fit.objective < best->objective * (1 - 1e-6) - 1e-12) best = std::move(fit);
  };
  // The backward's placement for a tried one: the same, in the backward's own order when given.
  const auto for_backward = [&](sim::BlockPlacement p) {
    if (options.backward_block_order) p.order = *options.backward_block_order;
    return p;
  };
  sim::KernelProfile from = start;
  for (size_t i = 0; i < tried.size(); ++i) {
    const bool continues = i > 0 && tried[i].sharing == tried[i - 1].sharing &&
                           tried[i].lone_block_speedup > tried[i - 1].lone_block_speedup;
    sim::KernelProfile k = continues ? from : start;
    // A pass no call timed keeps its costs from `start`, and with them the placement they were
    // fitted on: a forward-only run refits the forward's occupancy, not the backward's.
    if (fit_forward) {
      k.placement = tried[i];
      k.backward_placement = fit_backward ? std::optional(for_backward(tried[i])) : std::optional(sim::backward_placement(start));
    } else {
      k.placement = start.placement;
      k.backward_placement = for_backward(tried[i]);
    }
    StructureFit fit = fit_costs(calls, k, sms, fit_forward, fit_backward, cold && !continues);
    from = fit.profile;
    keep(std::move(fit));
  }
  // The start itself where its placement is one tried, refined from its own costs: the fit lands
  // in the valley of equally good fits nearest where it starts, and a chain that reaches the
  // start's placement from another's costs can end worse than the start (refitting the shipped
  // H100 fa2 profile's own output made its loss 3 % worse), so no fit returns worse than its start.
  const bool start_tried =
      std::find(tried.begin(), tried.end(), start.placement) != tried.end() &&
      (!fit_backward || std::any_of(tried.begin(), tried.end(), [&](const sim::BlockPlacement& p) {
        return for_backward(p) == sim::backward_placement(start);
      }));
  if (!cold && start_tried) keep(fit_costs(calls, start, sms, fit_forward, fit_backward));
  // The backward's own placement is fitted only on backward calls timed alone (this project's
  // validator times each pass): seen only summed with the forward (PyTorch's fwdbwd files),
  // the two placements are not told apart, and held-out files come out worse for the freedom.
  const bool backward_alone = std::any_of(calls.begin(), calls.end(), [](const MeasuredCall& c) {
    return c.backward && !c.forward && c.measured_us > 0;
  });
  if (fit_forward && fit_backward && backward_alone) {
    const sim::KernelProfile joint = best->profile;
    for (const sim::BlockPlacement& p : tried) {
      sim::KernelProfile k = joint;
      k.backward_placement = for_backward(p);
      keep(fit_costs(calls, k, sms, fit_forward, fit_backward));
    }
    const sim::KernelProfile apart = best->profile;
    for (const sim::BlockPlacement& p : tried) {
      sim::KernelProfile k = apart;
      k.backward_placement = sim::backward_placement(apart);
      k.placement = p;
      keep(fit_costs(calls, k, sms, fit_forward, fit_backward));
    }
  }
  // A backward placed as the forward is written as one placement.
  if (best->profile.backward_placement == best->profile.placement) best->profile.backward_placement.reset();
  return std::move(*best);
}

// The head sizes at which `pass` was timed.
std::set<Count> head_dims_timed(const std::vector<MeasuredCall>& calls, bool MeasuredCall::*pass) {
  std::set<Count> out;
  for (const MeasuredCall& c : calls) {
    if (c.measured_us > 0 && c.*pass) out.insert(c.shape.head_dim);
  }
  return out;
}

// A pass timed at two head sizes or more tells a tile's element-wise work from its matmuls
// (PassCosts::score_head_dims): tried on this grid, then narrowed by golden section between the
// grid points beside the best, the costs refitted at each with the placement kept. Published
// kernels fall between 0 (Triton's forward on an H100) and about 100 (cuDNN's forward).
constexpr std::array<double, 16> kScoreHeadDimsTried{0, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};

StructureFit fit_score_head_dims(const std::vector<MeasuredCall>& calls, StructureFit best, Count sms, bool fit_forward,
                                 bool fit_backward, sim::PassCosts sim::KernelProfile::*pass, Count largest_head_dim) {
  const sim::KernelProfile from = best.profile;
  const auto try_at = [&](double s) {
    sim::KernelProfile k = from;
    (k.*pass).score_head_dims = s;
    // The share holds up to the largest head size timed, and at least to the profile's own,
    // whose costs these are (a share of 0 has no range).
    (k.*pass).score_head_dims_up_to.reset();
    if (s > 0 && largest_head_dim > k.head_dim) (k.*pass).score_head_dims_up_to = largest_head_dim;
    StructureFit fit = fit_costs(calls, k, sms, fit_forward, fit_backward);
    const double objective = fit.objective;
    if (objective < best.objective) best = std::move(fit);
    return objective;
  };
  std::vector<double> objective;
  for (const double s : kScoreHeadDimsTried) objective.push_back(try_at(s));
  const size_t at = static_cast<size_t>(std::min_element(objective.begin(), objective.end()) - objective.begin());
  const double lo = kScoreHeadDimsTried[at == 0 ? 0 : at - 1];
  const double hi = kScoreHeadDimsTried[std::min(at + 1, kScoreHeadDimsTried.size() - 1)];
  (void)sim::golden_section(try_at, lo, hi, 12);  // try_at keeps the best fit it meets
  return best;
}

// The fit record's words for the block order: tried, or given (and the backward's, where it differs).
std::string given_block_order(const FitOptions& options) {
  if (!options.block_order) return "(launch, longest_first)";
  std::string out = fmt::format("{} (given: --block-order, the kernel's own", sim::block_order_name(*options.block_order));
  if (options.backward_block_order) out += fmt::format("; the backward's {}", sim::block_order_name(*options.backward_block_order));
  return out + ")";
}

}  // namespace

KernelFit fit_kernel(const std::vector<MeasuredCall>& calls, const sim::KernelProfile& base, const model::HardwareProfile& hardware,
                     const FitOptions& options) {
  const Count sms = hardware.sms;
  bool fit_forward = false, fit_backward = false, empty_timed = false, empty_seen = false;
  std::set<size_t> workloads;
  Count forward_samples = 0, backward_samples = 0;
  for (const MeasuredCall& call : calls) {
    if (!has_work(call)) {
      empty_seen = true;
      empty_timed = empty_timed || call.measured_us > 0;
    }
    if (call.measured_us <= 0) continue;
    workloads.insert(call.workload);
    fit_forward = fit_forward || call.forward;
    fit_backward = fit_backward || call.backward;
    forward_samples += call.forward ? 1 : 0;
    backward_samples += call.backward ? 1 : 0;
  }
  if (!fit_forward && !fit_backward) throw InputError("kernel fit: no call with a measured time to fit");

  sim::KernelProfile start = base;
  if (empty_seen) start.empty_calls_launch = start.empty_query_tiles_launch = empty_timed;
  start.other_tiles.clear();  // refitted below from what was measured at each shape
  // Calls cut into several tile shapes: each shape measured is fitted on its own calls (a smaller
  // tile is not a FLOP-scaled larger one: it holds more blocks per SM and reuses less data).
  std::map<model::TileShape, std::vector<MeasuredCall>> by_tile;
  for (const MeasuredCall& call : calls) by_tile[call.shape.tile].push_back(call);
  // A pass is fitted on a group that timed it; otherwise it keeps the costs it starts from. A
  // forward+backward call times the sum of its passes: the forward is told apart only by calls
  // that time it alone (fitted on sums alone, the forward had come out at 1e-6 us a tile, the
  // backward taking all of it), and the backward then takes what the forward leaves.
  const auto timed = [](const std::vector<MeasuredCall>& group, bool MeasuredCall::*pass) {
    return std::any_of(group.begin(), group.end(), [&](const MeasuredCall& c) {
      return c.measured_us > 0 && c.*pass && (pass == &MeasuredCall::backward || !c.backward);
    });
  };
  const std::vector<MeasuredCall>& main_calls = by_tile.size() > 1 && by_tile.contains(start.tile) ? by_tile.at(start.tile) : calls;
  const bool forward_timed = timed(main_calls, &MeasuredCall::forward), backward_timed = timed(main_calls, &MeasuredCall::backward);
  // Cold: only the passes this fit solves for; another keeps the base's costs, as when warm.
  if (options.cold_start) {
    if (forward_timed) start.forward = cold_start_costs(start.forward);
    if (backward_timed) start.backward = cold_start_costs(start.backward);
  }
  // Timed at several head sizes: how each pass's tile cost follows the head size (kept only
  // where it fits better).
  nlohmann::json score_head_dims = nlohmann::json::object();
  bool searched = false;
  const auto fit_head_sizes = [&](StructureFit fit) {
    for (const auto& [name, timed_pass, costs] : {std::tuple{"forward", &MeasuredCall::forward, &sim::KernelProfile::forward},
                                                  std::tuple{"backward", &MeasuredCall::backward, &sim::KernelProfile::backward}}) {
      const std::set<Count> dims = head_dims_timed(main_calls, timed_pass);
      if (dims.size() < 2) {
        score_head_dims[name] = fmt::format("kept from the base profile: timed at {} head size{}", dims.size(), dims.size() == 1 ? "" : "s");
        continue;
      }
      fit = fit_score_head_dims(main_calls, std::move(fit), sms, forward_timed, backward_timed, costs, *dims.rbegin());
      score_head_dims[name] = fmt::format("fitted on head sizes {}", fmt::join(dims, ", "));
      searched = true;
    }
    return fit;
  };
  StructureFit best =
      fit_head_sizes(fit_structure(main_calls, start, hardware, forward_timed, backward_timed, options, options.cold_start));
  // Where the calls' blocks land depends on the costs being fitted, so the chain of placements
  // depends on where it starts: fitted again from its own output, a fit can find a better one
  // (the H100 sdpa files, their backward on key tiles: one block an SM, then two). A fit started
  // from a profile therefore refits from its result until that returns nothing better, so what it
  // writes comes back unchanged when fitted again from itself. A cold start (leave one out) refits
  // once, and only after a head-size search: looped as well, it scored no better held out on the
  // shipped files and took 2-3x as long (README, "Where a fit starts").
  const int refits = options.cold_start ? (searched ? 1 : 0) : kMostRefits;
  for (int i = 0; i < refits; ++i) {
    StructureFit again = fit_structure(main_calls, best.profile, hardware, forward_timed, backward_timed, options);
    if (!options.cold_start) again = fit_head_sizes(std::move(again));
    if (!(again.objective < best.objective)) break;
    best = std::move(again);
  }
  nlohmann::json tiles = nlohmann::json::array();
  std::vector<double> errors = best.errors;
  if (by_tile.size() > 1) {
    if (by_tile.contains(start.tile)) {
      tiles.push_back({{"tile", start.tile.to_string()}, {"samples", best.errors.size()},
                       {"median_abs_error", magnitude_spread(best.errors).median}});
    }
    for (const auto& [tile, group] : by_tile) {
      if (tile == start.tile) continue;
      // Started from the main costs scaled to the shape (as the time model scales them). A pass
      // none of the shape's calls timed keeps what the base profile says of the shape: its own
      // variant's costs (and, for the backward, the placement they were fitted on) where it lists
      // one, else those scaled costs.
      const sim::KernelTimeModel scale(best.profile, sms, sim::KernelCallShape{1, best.profile.head_dim, tile, 1.0});
      sim::KernelProfile at = best.profile;
      at.tile = tile;
      at.other_tiles.clear();
      for (sim::PassCosts* c : {&at.forward, &at.backward}) {
        c->block_us *= scale.block_scale();
        c->full_tile_us *= scale.tile_scale(*c);
        c->partial_tile_us *= scale.tile_scale(*c);
      }
      const bool forward = timed(group, &MeasuredCall::forward), backward = timed(group, &MeasuredCall::backward);
      if (!forward && !backward) continue;
      const sim::KernelProfile listed = sim::at_tile(base, tile);
      if (listed.tile == tile && !forward) at.forward = listed.forward;
      if (listed.tile == tile && !backward) {
        at.backward = listed.backward;
        at.backward_placement = sim::backward_placement(listed);
      }
      const StructureFit fit = fit_structure(group, at, hardware, forward, backward, options);
      best.profile.other_tiles.push_back(sim::main_variant(fit.profile));
      tiles.push_back({{"tile", tile.to_string()}, {"samples", fit.errors.size()}, {"median_abs_error", magnitude_spread(fit.errors).median}});
    }
    // Every call as the profile now prices it: at its own shape.
    errors.clear();
    for (const MeasuredCall& call : calls) {
      if (call.measured_us > 0) errors.push_back(relative_error(predicted_us(call, best.profile, sms), call.measured_us));
    }
  }
  KernelFit out;
  out.profile = std::move(best.profile);
  // Under causal-like masks every block holds at most its one diagonal tile, so a partial tile's
  // cost and a cost that each masked block pays move together: the fit splits them by the
  // structure it picked, not by what was measured, and a mask whose blocks carry several partial
  // tiles (a window's two edges, documents cut by fixed tiles) is priced on that split.
  Count trimmed = 0, most_partial = 0;
  for (const MeasuredCall& call : calls) {
    if (call.measured_us <= 0) continue;
    const sim::KernelTimeModel m(out.profile, sms, call.shape);
    trimmed += m.slowed_by_trim(call.trimmed_length) ? 1 : 0;
    most_partial = std::max(most_partial, model::most_partial_tiles(call.rows));
  }
  const std::string partial_tiles =
      most_partial >= 2
          ? fmt::format("identified: timed blocks carry up to {} partial tiles", most_partial)
          : fmt::format("{}: no timed block carries more than one partial tile, so its cost cannot be told from a "
                        "cost every masked block pays; windows and documents are priced on the split this fit chose "
                        "(time a window or documents file to fit it)",
                        sim::kPartialTilesNotIdentified);
  const Spread spread = magnitude_spread(errors);
  out.samples = static_cast<Count>(errors.size());
  out.median_abs_error = spread.median;
  out.max_abs_error = spread.max;
  out.profile.calibrated = true;
  out.profile.fit = {{"samples", out.samples},
                     {"forward_samples", forward_samples},
                     {"backward_samples", backward_samples},
                     {"workloads", workloads.size()},
                     {"median_abs_error", out.median_abs_error},
                     {"max_abs_error", out.max_abs_error},
                     {"empty_calls", empty_seen ? (empty_timed ? "measured > 0: the kernel launches them"
                                                               : "measured 0: the implementation skips them")
                                                : "not measured: kept from the base profile"},
                     {"backward", fit_backward ? "fitted" : "not measured: kept from the base profile"},
                     {"trimmed_calls", trimmed},
                     {"partial_tiles", partial_tiles},
                     {"structure", fmt::format("blocks per SM ({}, at most what the SM's shared memory holds), block order "
                                               "{} and a lone block's speed-up (1, 1.5, 2, blocks per SM; "
                                               "at most blocks per SM) with the SM's throughput shared or, above 2 "
                                               "blocks per SM, only a lone block faster, one placement for both passes and the backward's own "
                                               "where backward calls were timed alone: the best fit kept",
                                               fmt::join(kBlocksPerSmTried, ", "),
                                               given_block_order(options))}};
  // Only where the forward was timed inside forward+backward sums alone: the other records stay.
  if (fit_forward && !forward_timed) {
    out.profile.fit["forward"] = "timed only inside forward+backward sums, which do not tell it from the backward: kept from the base profile";
  }
  // Only where some pass was timed at several head sizes: the other fits' records stay as they were.
  if (searched) out.profile.fit["score_head_dims"] = score_head_dims;
  if (!tiles.empty()) out.profile.fit["tiles"] = tiles;  // each shape fitted on its own calls
  return out;
}

}  // namespace stripesim::validate
