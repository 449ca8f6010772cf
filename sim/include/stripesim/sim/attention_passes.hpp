#pragma once
// One layer's attention under the plan's context parallelism (context_parallel.hpp): the work
// model's tiles priced by the kernel cost model, the ring simulated event by event, collectives
// in closed form on the topology; forward, backward or both, one after the other.
#include <cstdint>
#include <vector>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/sim/simulation.hpp"

namespace stripesim::sim {

enum class PassDetail {
  simulated,  // every transfer and collective on the topology, every wait
  bound,      // each device's compute alone, back to back: no pass can end sooner (plan's search bound);
              // its timelines hold the per-device summaries, no rounds
};

// `sim` is planned (its groups, routes and shapes set); `events` counts what was simulated;
// `most_partial_tiles`, when given, gets the most partial tiles one query tile of one call holds
// (one thread block's masked tiles: what the kernel's partial-tile cost prices).
[[nodiscard]] std::vector<RingTimeline> simulate_attention_passes(const Simulation& sim, const model::Layout& layout,
                                                                  const model::Mask& mask, const KernelTimeModel& kernel,
                                                                  std::uint64_t& events,
                                                                  PassDetail detail = PassDetail::simulated,
                                                                  Count* most_partial_tiles = nullptr);

}  // namespace stripesim::sim
