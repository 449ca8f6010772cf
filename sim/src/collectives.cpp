#include "stripesim/sim/collectives.hpp"

#include <algorithm>
#include <map>

#include "stripesim/sim/ring_order.hpp"

namespace stripesim::sim {
namespace {

// The slowest of the group's ring hops moving `chunk` each: all of them at once (a collective's
// step, where two of the group's own hops on one link halve it as surely as a hop of a group
// beside it does), or one at a time, each with its route to itself.
Microseconds slowest_hop_us(const Topology& topology, const std::vector<Count>& group, Bytes chunk, const Groups& beside,
                            bool at_once) {
  const SharedRoutes routes = shared_ring_routes(topology, group, beside);
  Microseconds slowest = 0;
  for (size_t p = 0; p < routes.hops.size(); ++p) {
    Route hop = routes.hops[p];
    if (at_once) hop.bandwidth = routes.at_once_bandwidth[p];
    slowest = std::max(slowest, hop.transfer_us(chunk));
  }
  return slowest;
}

}  // namespace

Microseconds ring_steps_us(const Topology& topology, const std::vector<Count>& group, Bytes chunk, Count steps,
                           const Groups& beside) {
  if (group.size() < 2 || steps < 1) return 0;
  return static_cast<double>(steps) * slowest_hop_us(topology, group, chunk, beside, true);
}

Microseconds one_processor_collective_us(const Topology& topology, const std::vector<Count>& group, Count devices,
                                         Bytes bytes_per_part) {
  if (group.size() < 2) return 0;
  const auto parts = static_cast<Count>(group.size());
  // One copy at a time: each the slowest hop's hand-off of one part, alone on its links.
  return static_cast<double>(devices * parts) * slowest_hop_us(topology, group, bytes_per_part, {}, false);
}

Microseconds allreduce_us(const Topology& topology, const std::vector<Count>& group, Bytes bytes, const Groups& beside) {
  const auto k = static_cast<Count>(group.size());
  return ring_steps_us(topology, group, bytes / std::max<Count>(k, 1), 2 * (k - 1), beside);
}

Microseconds allgather_us(const Topology& topology, const std::vector<Count>& group, Bytes bytes_per_member,
                          const Groups& beside) {
  return ring_steps_us(topology, group, bytes_per_member, static_cast<Count>(group.size()) - 1, beside);
}

namespace {

// Adds the bytes every pairwise send of `group` puts on each directed link; returns the longest
// route latency.
Microseconds add_pairwise_load(const Topology& topology, const std::vector<Count>& group, Bytes bytes_per_pair,
                               std::map<std::uint32_t, Bytes>& load) {
  Microseconds latency = 0;
  for (const Count from : group) {
    const std::vector<Route> routes = topology.routes_from(from, group);
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] == from || routes[i].links.empty()) continue;
      latency = std::max(latency, routes[i].latency_us);
      for (const auto link : routes[i].links) load[link] += bytes_per_pair;
    }
  }
  return latency;
}

}  // namespace

Microseconds alltoall_us(const Topology& topology, const std::vector<Count>& group, Bytes bytes_per_pair,
                         const Groups& beside) {
  if (group.size() < 2 || bytes_per_pair <= 0) return 0;
  std::map<std::uint32_t, Bytes> load;  // bytes per directed link
  const Microseconds latency = add_pairwise_load(topology, group, bytes_per_pair, load);
  // The groups beside send at the same time: their bytes on this group's links wait there too.
  std::map<std::uint32_t, Bytes> theirs;
  for (const auto& other : beside) add_pairwise_load(topology, other, bytes_per_pair, theirs);
  for (auto& [link, bytes] : load) {
    if (const auto it = theirs.find(link); it != theirs.end()) bytes += it->second;
  }
  Microseconds busiest = 0;
  for (const auto& [link, bytes] : load) {
    busiest = std::max(busiest, transfer_time_us(bytes, topology.link_of(link).bandwidth));
  }
  return load.empty() ? 0.0 : latency + busiest;
}

}  // namespace stripesim::sim
