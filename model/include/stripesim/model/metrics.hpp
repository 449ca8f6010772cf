#pragma once
// Load-balance metrics of one work matrix (DESIGN.md's definitions):
//   lockstep       sum_r max_d work[r][d]   (a barrier every round: the paper's latency model)
//   slowest_device max_d sum_r work[r][d]   (no barrier: the blog's model)
//   imbalance      slowest_device / mean device total
//   spread         (max - min) / mean over device totals;  cv  stddev / mean over device totals
//   speedup        total / slowest_device;  lockstep_speedup  total / lockstep
//   idle_fraction  1 - total / (N * lockstep)
#include "stripesim/model/work_matrix.hpp"

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

}  // namespace stripesim::model
