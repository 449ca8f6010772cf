#include "stripesim/sim/collectives.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include "stripesim/sim/ring_order.hpp"

namespace stripesim::sim {
namespace {

// The slowest hop of a ring step that every group of two or more takes at once, and the group
// it belongs to (an index into {group, beside...}; the first, were several as slow).
struct SlowestHop {
  Microseconds us = 0;
  size_t group = 0;
};

SlowestHop slowest_ring_hop(const Topology& topology, const std::vector<Count>& group, Bytes chunk, const Groups& beside) {
  std::vector<GpuPair> hops;
  std::vector<size_t> owner;  // per hop, its group
  const auto add = [&](const std::vector<Count>& g, size_t index) {
    if (g.size() < 2) return;
    std::ranges::copy(ring_hops(g), std::back_inserter(hops));
    owner.resize(hops.size(), index);
  };
  add(group, 0);
  for (size_t g = 0; g < beside.size(); ++g) add(beside[g], g + 1);
  // Two hops on one link, of one group or of two, halve it.
  const SharedRoutes routes = shared_routes(topology, hops, {});
  SlowestHop slowest;
  for (size_t p = 0; p < routes.hops.size(); ++p) {
    Route hop = routes.hops[p];
    hop.bandwidth = routes.at_once_bandwidth[p];
    const Microseconds us = hop.transfer_us(chunk);
    if (us > slowest.us) slowest = {us, owner[p]};
  }
  return slowest;
}

// An all-reduce's ring step moves a K-th of the bytes.
Bytes allreduce_chunk(const std::vector<Count>& group, Bytes bytes) {
  return bytes / std::max<Count>(static_cast<Count>(group.size()), 1);
}

}  // namespace

Microseconds ring_steps_us(const Topology& topology, const std::vector<Count>& group, Bytes chunk, Count steps,
                           const Groups& beside) {
  if (group.size() < 2 || steps < 1) return 0;
  // Every hop of every group's step sends at once: the slowest of them all sets the step's pace
  // (the phase ends when every group's collective has).
  return static_cast<double>(steps) * slowest_ring_hop(topology, group, chunk, beside).us;
}

size_t slowest_ring_group(const Topology& topology, const Groups& groups, Bytes chunk) {
  if (groups.empty()) return 0;
  return slowest_ring_hop(topology, groups.front(), chunk, Groups(groups.begin() + 1, groups.end())).group;
}

size_t slowest_allreduce_group(const Topology& topology, const Groups& groups, Bytes bytes) {
  return groups.empty() ? 0 : slowest_ring_group(topology, groups, allreduce_chunk(groups.front(), bytes));
}

Microseconds one_processor_collective_us(const Topology& topology, const std::vector<Count>& group, Count devices,
                                         Bytes bytes_per_part) {
  if (group.size() < 2) return 0;
  const auto parts = static_cast<Count>(group.size());
  // One copy at a time: each the slowest hop's hand-off of one part, alone on its links.
  Microseconds slowest = 0;
  for (const Route& hop : ring_routes(topology, group)) slowest = std::max(slowest, hop.transfer_us(bytes_per_part));
  return static_cast<double>(devices * parts) * slowest;
}

Microseconds allreduce_us(const Topology& topology, const std::vector<Count>& group, Bytes bytes, const Groups& beside) {
  const auto k = static_cast<Count>(group.size());
  return ring_steps_us(topology, group, allreduce_chunk(group, bytes), 2 * (k - 1), beside);
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
  // Each group's own links and longest route; every group's bytes on every link, since all send
  // at once. A group lasts its latency plus its busiest link's bytes, whoever's they are; the
  // collective, the slowest group.
  Groups groups{group};
  groups.insert(groups.end(), beside.begin(), beside.end());
  std::vector<std::map<std::uint32_t, Bytes>> own(groups.size());
  std::vector<Microseconds> latency(groups.size());
  std::map<std::uint32_t, Bytes> load;  // bytes per directed link, of every group
  for (size_t g = 0; g < groups.size(); ++g) {
    latency[g] = add_pairwise_load(topology, groups[g], bytes_per_pair, own[g]);
    for (const auto& [link, bytes] : own[g]) load[link] += bytes;
  }
  Microseconds slowest = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    Microseconds busiest = 0;
    for (const auto& [link, bytes] : own[g]) busiest = std::max(busiest, transfer_time_us(load.at(link), topology.link_of(link).bandwidth));
    if (!own[g].empty()) slowest = std::max(slowest, latency[g] + busiest);
  }
  return slowest;
}

}  // namespace stripesim::sim
