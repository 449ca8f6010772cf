#include "stripesim/model/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stripesim::model {

Metrics compute_metrics(const WorkMatrix& work) {
  if (work.devices() < 1 || work.rounds() < 1) throw std::invalid_argument("compute_metrics: empty work matrix");
  Metrics m;
  const std::vector<Count> totals = work.device_totals();
  for (Count r = 0; r < work.rounds(); ++r) {
    Count round_max = 0;
    for (Count d = 0; d < work.devices(); ++d) round_max = std::max(round_max, work.at(r, d));
    m.lockstep += round_max;
  }
  for (const Count t : totals) m.total += t;
  const auto [min_it, max_it] = std::minmax_element(totals.begin(), totals.end());
  m.slowest_device = *max_it;
  // Every mask lets a query see itself, so total >= n > 0 and no ratio divides by zero.
  if (m.total == 0) throw std::invalid_argument("compute_metrics: no work at all");
  const double devices = static_cast<double>(work.devices());
  const double mean = static_cast<double>(m.total) / devices;
  double squares = 0;
  for (const Count t : totals) squares += (static_cast<double>(t) - mean) * (static_cast<double>(t) - mean);
  m.imbalance = static_cast<double>(m.slowest_device) / mean;
  m.spread = static_cast<double>(*max_it - *min_it) / mean;
  m.cv = std::sqrt(squares / devices) / mean;
  m.speedup = static_cast<double>(m.total) / static_cast<double>(m.slowest_device);
  m.lockstep_speedup = static_cast<double>(m.total) / static_cast<double>(m.lockstep);
  m.idle_fraction = 1.0 - static_cast<double>(m.total) / (devices * static_cast<double>(m.lockstep));
  return m;
}

}  // namespace stripesim::model
