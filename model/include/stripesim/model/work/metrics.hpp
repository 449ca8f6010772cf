#pragma once
// Load-balance metrics of one work matrix (DESIGN.md's definitions):
//   lockstep       sum_r max_d work[r][d]   (a barrier every round: the paper's latency model)
//   slowest_device max_d sum_r work[r][d]   (no barrier: the blog's model)
//   imbalance      slowest_device / mean device total
//   spread         (max - min) / mean over device totals;  cv  stddev / mean over device totals
//   speedup        total / slowest_device;  lockstep_speedup  total / lockstep
//   idle_fraction  1 - total / (N * lockstep)
#include <algorithm>
#include <numeric>
#include <span>
#include <vector>

#include "stripesim/model/work/work_matrix.hpp"

namespace stripesim::model {

struct Metrics {
  Count total = 0;
  Count lockstep = 0;
  Count slowest_device = 0;
  double imbalance = 0;
  double spread = 0;
  double cv = 0;
  double speedup = 0;
  double lockstep_speedup = 0;
  double idle_fraction = 0;
};

[[nodiscard]] Metrics compute_metrics(const WorkMatrix& work);

// The slowest device's value in each round of a [round * devices + device] table, and their sum,
// the lockstep time: of counted work here, of predicted and measured call times in validate.
template <typename T>
[[nodiscard]] std::vector<T> round_maxima(std::span<const T> cells, Count devices) {
  std::vector<T> out;
  for (size_t start = 0; start < cells.size(); start += static_cast<size_t>(devices)) {
    out.push_back(*std::max_element(cells.begin() + static_cast<std::ptrdiff_t>(start),
                                    cells.begin() + static_cast<std::ptrdiff_t>(start + static_cast<size_t>(devices))));
  }
  return out;
}
template <typename T>
[[nodiscard]] T lockstep_total(std::span<const T> cells, Count devices) {
  const std::vector<T> rounds = round_maxima(cells, devices);
  return std::accumulate(rounds.begin(), rounds.end(), T{0});
}

// The ring without a barrier when links cost nothing, in the work's own unit: what a ring
// implementation that overlaps its sends (ring-flash-attention, TransformerEngine) waits for when
// compute decides. Device d computes round r once it holds that block and has finished round
// r - 1; it forwards the block to d + 1 once it holds it, has forwarded round r - 1, and d + 1
// has released (computed and forwarded) round r + 1 - kv_buffers. Between the busiest device
// (every device independent) and lockstep (a barrier every round). The simulator's async ring
// with free links gives the same number; this is its closed form for searches that price many
// layouts.
[[nodiscard]] Count free_link_ring_time(const WorkMatrix& work, Count kv_buffers = 2);

}  // namespace stripesim::model
