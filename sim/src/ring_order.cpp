#include "stripesim/sim/ring_order.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "stripesim/model/work/parallel_for.hpp"

namespace stripesim::sim {
namespace {

// Below this many shortest-path trees to compute, threads cost more than they save.
constexpr size_t kRoutesWorthThreads = 256;

// Cost of a ring: (slowest hop, total) compared lexicographically.
struct RingCost {
  Microseconds slowest = 0;
  Microseconds total = 0;
  friend bool operator<(const RingCost& a, const RingCost& b) {
    return a.slowest != b.slowest ? a.slowest < b.slowest : a.total < b.total;
  }
};

// A ring's hops all send at once, so an order is priced as the simulator runs it: the k hops
// that cross a link direction queue on it, the last done after k blocks' time there, and a hop
// lasts its route's latency plus its most loaded link's queue. Pricing each hop alone would
// prefer an order whose fast hops share one slow link (two hops over one trunk take twice as
// long as either alone).
class RingPricer {
 public:
  RingPricer(const Topology& topology, Bytes hop_bytes)
      : topology_(topology), bytes_(hop_bytes), load_(topology.directed_link_count(), 0) {}

  // hops[p]: the route from ring position p to the next.
  [[nodiscard]] RingCost operator()(const std::vector<const Route*>& hops) {
    for (const Route* hop : hops) {
      for (const auto link : hop->links) ++load_[link];
    }
    RingCost cost;
    for (const Route* hop : hops) {
      if (hop->links.empty()) continue;
      Microseconds queue = 0;
      for (const auto link : hop->links) {
        queue = std::max(queue, static_cast<double>(load_[link]) * transfer_time_us(bytes_, topology_.link_of(link).bandwidth));
      }
      cost.slowest = std::max(cost.slowest, hop->latency_us + queue);
      cost.total += hop->latency_us + queue;
    }
    for (const Route* hop : hops) {
      for (const auto link : hop->links) load_[link] = 0;
    }
    return cost;
  }

 private:
  const Topology& topology_;
  Bytes bytes_;
  std::vector<Count> load_;  // by directed link: this ring's hops on it (zero between calls)
};

}  // namespace

std::vector<Count> rank_ring_order(Count devices) {
  std::vector<Count> order(static_cast<size_t>(devices));
  std::iota(order.begin(), order.end(), Count{0});
  return order;
}

namespace {

// The mesh's GPUs grouped by `key` of their (replica, position, rank), groups in the order first
// met and members in GPU order (replica, then position, then rank).
template <typename Key>
std::vector<std::vector<Count>> group_by(const model::Mesh& mesh, Key key) {
  std::vector<std::vector<Count>> groups;
  std::map<Count, size_t> index;
  for (Count r = 0; r < mesh.data_parallel; ++r) {
    for (Count p = 0; p < mesh.devices; ++p) {
      for (Count m = 0; m < mesh.model_parallel; ++m) {
        const auto [it, added] = index.emplace(key(r, p, m), groups.size());
        if (added) groups.emplace_back();
        groups[it->second].push_back(mesh.gpu(r, p, m));
      }
    }
  }
  return groups;
}

}  // namespace

std::vector<std::vector<Count>> mesh_ring_orders(const model::Mesh& mesh) {
  return group_by(mesh, [&](Count r, Count, Count m) { return r * mesh.model_parallel + m; });
}

std::vector<std::vector<Count>> model_parallel_groups(const model::Mesh& mesh) {
  return group_by(mesh, [&](Count r, Count p, Count) { return r * mesh.devices + p; });
}

std::vector<std::vector<Count>> gradient_groups(const model::Mesh& mesh) {
  return group_by(mesh, [](Count, Count, Count m) { return m; });
}

namespace {

// The routes of every transfer of every group: routes[i][k] from groups[i][k].first to .second.
// Each routes from a GPU of its own, one shortest-path tree each (the cost of placing a large
// mesh): on every core when there are enough of them to pay for the threads.
std::vector<std::vector<Route>> pairs_routes(const Topology& topology, const std::vector<std::vector<GpuPair>>& groups) {
  std::vector<std::vector<Route>> routes;
  std::vector<std::pair<size_t, size_t>> all;  // (group, index) of every transfer
  for (size_t i = 0; i < groups.size(); ++i) {
    routes.emplace_back(groups[i].size());
    for (size_t k = 0; k < groups[i].size(); ++k) all.emplace_back(i, k);
  }
  model::parallel_for(all.size(), all.size() >= kRoutesWorthThreads ? 0 : 1, [&](size_t h) {
    const auto [i, k] = all[h];
    routes[i][k] = topology.route(groups[i][k].first, groups[i][k].second);
  });
  return routes;
}

}  // namespace

std::vector<GpuPair> ring_hops(const std::vector<Count>& ring) {
  std::vector<GpuPair> hops;
  for (size_t p = 0; p < ring.size(); ++p) hops.emplace_back(ring[p], ring[(p + 1) % ring.size()]);
  return hops;
}

std::vector<Route> ring_routes(const Topology& topology, const std::vector<Count>& order) {
  return std::move(pairs_routes(topology, {ring_hops(order)}).front());
}

SharedRoutes shared_routes(const Topology& topology, const std::vector<GpuPair>& transfers,
                           const std::vector<std::vector<GpuPair>>& others) {
  std::vector<std::vector<GpuPair>> groups{transfers};
  groups.insert(groups.end(), others.begin(), others.end());
  std::vector<std::vector<Route>> routes = pairs_routes(topology, groups);
  SharedRoutes out{std::move(routes.front()), std::vector<Count>(transfers.size(), 1), {}};
  for (const Route& hop : out.hops) out.at_once_bandwidth.push_back(hop.bandwidth);
  // Transfers crossing each directed link, by link (a flat count: a plan places hundreds of meshes).
  std::vector<Count> own(topology.directed_link_count(), 0), foreign(topology.directed_link_count(), 0);
  for (const Route& hop : out.hops) {
    for (const auto link : hop.links) ++own[link];
  }
  for (size_t i = 1; i < routes.size(); ++i) {
    for (const Route& hop : routes[i]) {
      for (const auto link : hop.links) {
        if (own[link] != 0) ++foreign[link];
      }
    }
  }
  for (size_t p = 0; p < out.hops.size(); ++p) {
    Route& hop = out.hops[p];
    for (const auto link : hop.links) {
      const Count mine = own[link];
      const Count theirs = foreign[link];
      const GigabytesPerSecond bandwidth = topology.link_of(link).bandwidth;
      hop.bandwidth = std::min(hop.bandwidth, bandwidth * static_cast<double>(mine) / static_cast<double>(mine + theirs));
      out.at_once_bandwidth[p] = std::min(out.at_once_bandwidth[p], bandwidth / static_cast<double>(mine + theirs));
      out.shared_by[p] = std::max(out.shared_by[p], mine + theirs);
    }
  }
  return out;
}

SharedRoutes shared_ring_routes(const Topology& topology, const std::vector<Count>& order,
                                const std::vector<std::vector<Count>>& others) {
  std::vector<std::vector<GpuPair>> beside;
  for (const auto& ring : others) beside.push_back(ring_hops(ring));
  return shared_routes(topology, ring_hops(order), beside);
}

std::vector<Count> auto_ring_order(const Topology& topology, Count devices, Bytes hop_bytes) {
  std::vector<Count> order = rank_ring_order(devices);
  if (devices <= 2) return order;
  const auto n = static_cast<size_t>(devices);
  // 2-opt re-prices the ring for every candidate, O(N^3) a pass: kept for rings up to 128, whose
  // every route between two GPUs is kept to price them (above, a ring's own hops are routed).
  constexpr size_t kMaxTwoOptDevices = 128;
  const bool search = n <= kMaxTwoOptDevices;
  // Every GPU's routes to every other, one shortest-path tree each: on every core when there are
  // enough GPUs to pay for the threads (the same threshold as routing a ring's hops). The nearest
  // neighbour's step looks at one hop at a time, each alone on its links.
  std::vector<std::vector<Route>> routes(search ? n : 0);
  std::vector<std::vector<Microseconds>> hop(n, std::vector<Microseconds>(n, 0));
  model::parallel_for(n, n >= kRoutesWorthThreads ? 0 : 1, [&](size_t a) {
    std::vector<Route> from = topology.routes_from(static_cast<Count>(a), order);
    for (size_t b = 0; b < n; ++b) hop[a][b] = from[b].transfer_us(hop_bytes);
    if (search) routes[a] = std::move(from);
  });
  RingPricer pricer(topology, hop_bytes);
  std::vector<const Route*> hops(n);
  const auto ring_cost = [&](const std::vector<Count>& ring) {
    std::vector<Route> own;
    if (!search) own = ring_routes(topology, ring);
    for (size_t p = 0; p < n; ++p) {
      hops[p] = search ? &routes[static_cast<size_t>(ring[p])][static_cast<size_t>(ring[(p + 1) % n])] : &own[p];
    }
    return pricer(hops);
  };
  RingCost best_cost = ring_cost(order);
  if (devices <= 9) {
    // Position 0 stays GPU 0 (a rotation of a ring is the same ring).
    std::vector<Count> candidate = order;
    while (std::next_permutation(candidate.begin() + 1, candidate.end())) {
      const RingCost cost = ring_cost(candidate);
      if (cost < best_cost) {
        best_cost = cost;
        order = candidate;
      }
    }
    return order;
  }
  // Nearest neighbour from GPU 0, then 2-opt (reverse a segment) while it improves.
  std::vector<Count> greedy{0};
  std::vector<bool> used(n, false);
  used[0] = true;
  for (size_t step = 1; step < n; ++step) {
    const auto from = static_cast<size_t>(greedy.back());
    size_t next = n;
    for (size_t b = 0; b < n; ++b) {
      if (!used[b] && (next == n || hop[from][b] < hop[from][next])) next = b;
    }
    used[next] = true;
    greedy.push_back(static_cast<Count>(next));
  }
  if (const RingCost cost = ring_cost(greedy); cost < best_cost) {
    order = greedy;
    best_cost = cost;
  }
  if (!search) return order;
  constexpr int kMaxPasses = 8;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    bool improved = false;
    for (size_t i = 1; i + 1 < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        std::reverse(order.begin() + static_cast<long>(i), order.begin() + static_cast<long>(j) + 1);
        const RingCost cost = ring_cost(order);
        if (cost < best_cost) {
          best_cost = cost;
          improved = true;
        } else {
          std::reverse(order.begin() + static_cast<long>(i), order.begin() + static_cast<long>(j) + 1);
        }
      }
    }
    if (!improved) break;
  }
  return order;
}

}  // namespace stripesim::sim
