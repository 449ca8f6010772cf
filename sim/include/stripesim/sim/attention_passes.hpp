#pragma once
// One layer's attention under the plan's context parallelism (context_parallel.hpp): the work
// model's tiles priced by the kernel cost model, the ring simulated event by event, collectives
// in closed form on the topology; forward, backward or both, one after the other.
#include <cstdint>
#include <vector>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/sim/simulation.hpp"

namespace stripesim::sim {

enum class PassDetail {
  simulated,  // every transfer and collective on the topology, every wait
  bound,      // each device's compute alone, back to back: no pass can end sooner (plan's search bound);
              // its timelines hold the per-device summaries, no rounds
};

// The work whose calls the passes price, per query tile: the layout's (Ulysses: the whole sequence
// on one device, whose heads attend it in order; an all-gather: each device's queries against the
// whole K/V in one call). It depends on the layout, the mask, the tiling and how the algorithm
// slices its calls, not on the heads, the mesh or the topology: simulations that share those
// share it (plan's meshes that differ in -M and -D alone), see work_key.
[[nodiscard]] model::Work count_call_work(const Simulation& sim, const model::Layout& layout, const model::Mask& mask);
// What of `sim` count_call_work depends on besides the layout and the mask: equal keys over one
// layout and mask count equal work.
[[nodiscard]] int work_key(const Simulation& sim);

// `sim` is planned (its groups, routes and shapes set); `events` counts what was simulated;
// `most_partial_tiles`, when given, gets the most partial tiles one query tile of one call holds
// (one thread block's masked tiles: what the kernel's partial-tile cost prices).
[[nodiscard]] std::vector<RingTimeline> simulate_attention_passes(const Simulation& sim, const model::Layout& layout,
                                                                  const model::Mask& mask, const KernelTimeModel& kernel,
                                                                  std::uint64_t& events,
                                                                  PassDetail detail = PassDetail::simulated,
                                                                  Count* most_partial_tiles = nullptr);
// The same with the work counted already (count_call_work of `layout`): priced, then run.
[[nodiscard]] std::vector<RingTimeline> simulate_attention_passes(const Simulation& sim, const model::Layout& layout,
                                                                  const model::Work& work, const KernelTimeModel& kernel,
                                                                  std::uint64_t& events, PassDetail detail,
                                                                  Count* most_partial_tiles);

// A layer's attention calls priced from the counted work, pass by pass, before anything runs:
// what is dear (placing every distinct call's blocks) done once, so that a plan bounds a choice
// and later simulates it from the same prices.
struct PricedPass {
  RingPass pass = RingPass::forward;
  // Ring, hybrid: each (round, device)'s call with its merge, [round * devices + device]; an
  // all-gather: each device's one call; Ulysses: the one call every device makes.
  std::vector<Microseconds> call_us;
  // Ring, hybrid, where unread hops are skipped: RingSetup's.
  std::vector<bool> send_needed;
  std::vector<GradHop> grad_hops;
  std::vector<Route> grad_home;
};
struct PricedPasses {
  std::vector<PricedPass> passes;  // in the order they run
  Count most_partial_tiles = 0;    // the most partial tiles one query tile of one call holds
  [[nodiscard]] double bytes() const;  // about what holding them takes
};
[[nodiscard]] PricedPasses price_attention_passes(const Simulation& sim, const model::Layout& layout,
                                                  const model::Work& work, const KernelTimeModel& kernel);
// The passes run on the plan's topology (or, as a bound, each device's calls back to back).
[[nodiscard]] std::vector<RingTimeline> run_attention_passes(const Simulation& sim, const PricedPasses& priced,
                                                             std::uint64_t& events, PassDetail detail);

}  // namespace stripesim::sim
