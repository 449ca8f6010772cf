#include "stripesim/model/work/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace stripesim::model {

Metrics compute_metrics(const WorkMatrix& work) {
  if (work.devices() < 1 || work.rounds() < 1) throw std::invalid_argument("compute_metrics: empty work matrix");
  Metrics m;
  const std::vector<Count> totals = work.device_totals();
  m.lockstep = lockstep_total(std::span<const Count>(work.cells()), work.devices());
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

Count free_link_ring_time(const WorkMatrix& work, Count kv_buffers) {
  if (kv_buffers < 2) throw std::invalid_argument("free_link_ring_time: at least 2 K/V buffers");
  const Count n = work.devices();
  const Count rounds = work.rounds();
  // Per (round, device): when the block is there, computed, and forwarded (the last round is not).
  // A round reads back no further than round r + 1 - kv_buffers, so only that many rounds are
  // kept, a row each, reused in turn: searches price thousands of large rings, where N x N of each
  // would cost more to allocate and zero than to compute.
  const Count kept = std::max<Count>(2, std::min(kv_buffers, rounds));
  const auto at = [n, kept](Count round, Count device) { return static_cast<size_t>((round % kept) * n + device); };
  const auto held_at = [n](Count round, Count device) { return static_cast<size_t>((round % 2) * n + device); };
  std::vector<Count> held(static_cast<size_t>(2 * n), 0);
  std::vector<Count> done(static_cast<size_t>(kept * n), 0);
  std::vector<Count> sent(done.size(), 0);
  const auto released = [&](Count round, Count device) {
    return round + 1 < rounds ? std::max(done[at(round, device)], sent[at(round, device)]) : done[at(round, device)];
  };
  for (Count r = 0; r < rounds; ++r) {
    for (Count d = 0; d < n; ++d) {
      done[at(r, d)] = std::max(held[held_at(r, d)], r > 0 ? done[at(r - 1, d)] : 0) + work.at(r, d);
    }
    if (r + 1 == rounds) break;
    for (Count d = 0; d < n; ++d) {
      const Count next = (d + 1) % n;
      Count send = held[held_at(r, d)];
      if (r > 0) send = std::max(send, sent[at(r - 1, d)]);
      if (const Count freed = r + 1 - kv_buffers; freed >= 0) send = std::max(send, released(freed, next));
      sent[at(r, d)] = send;
      held[held_at(r + 1, next)] = send;
    }
  }
  Count finish = 0;
  for (Count d = 0; d < n; ++d) finish = std::max(finish, done[at(rounds - 1, d)]);
  return finish;
}

}  // namespace stripesim::model
