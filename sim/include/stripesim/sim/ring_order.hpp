#pragma once
// Which GPU sits at each ring position. Rank order by default; `auto` searches for the order
// whose slowest hop is fastest, then the smallest total, every hop sending at once (latency +
// its busiest link's queue: the blocks of the hops crossing it over its bandwidth):
// exhaustively up to 9 GPUs, else nearest-neighbour and 2-opt.
#include <utility>
#include <vector>

#include "stripesim/model/workflows/mesh.hpp"
#include "stripesim/sim/topology.hpp"

namespace stripesim::sim {

[[nodiscard]] std::vector<Count> rank_ring_order(Count devices);

// A mesh placed on the topology (model/workflows/mesh.hpp says how). Its groups of each kind, all running at
// once on GPUs of their own, the one the simulation follows first:
//  - rings: one per (replica, model-parallel rank), its ring positions in order;
//  - model-parallel groups: one per (replica, ring position);
//  - gradient groups: one per model-parallel rank, every copy of that rank's weights (one per
//    replica and ring position), whose gradients are summed over it.
[[nodiscard]] std::vector<std::vector<Count>> mesh_ring_orders(const model::Mesh& mesh);
[[nodiscard]] std::vector<std::vector<Count>> model_parallel_groups(const model::Mesh& mesh);
[[nodiscard]] std::vector<std::vector<Count>> gradient_groups(const model::Mesh& mesh);
[[nodiscard]] std::vector<Count> auto_ring_order(const Topology& topology, Count devices, Bytes hop_bytes);

// The route of every hop: hops[p] goes from order[p] to order[(p + 1) % N].
[[nodiscard]] std::vector<Route> ring_routes(const Topology& topology, const std::vector<Count>& order);

// The same routes when `others` (rings of their own GPUs, as many positions each) run alongside
// at the same pace, every position sending when this ring's does: a directed link that o of the
// others' hops cross besides s of this ring's gives this ring s / (s + o) of its bandwidth (the
// simulator already queues this ring's own hops on a link one after another, so that moves each
// link's traffic in the time all of it takes). A route's bandwidth is the least share on it;
// `shared_by[p]` the most hops, this ring's and the others', on any link of hop p.
// `at_once_bandwidth[p]`: hop p's bandwidth where nothing queues the transfers, every one on a
// link moving at once (a collective's ring step, priced in closed form by collectives.hpp): the
// least of a link's bandwidth over all the hops that cross it, this ring's and the others'.
struct SharedRoutes {
  std::vector<Route> hops;
  std::vector<Count> shared_by;
  std::vector<GigabytesPerSecond> at_once_bandwidth;
};
[[nodiscard]] SharedRoutes shared_ring_routes(const Topology& topology, const std::vector<Count>& order,
                                              const std::vector<std::vector<Count>>& others);

// The same for any transfers sent at once, (from GPU, to GPU), beside others' sent at the same
// time: a ring's dK/dV hops home in one round, beside the other rings' hops home of that round.
using GpuPair = std::pair<Count, Count>;
// A ring's hops as transfers: position p to the next.
[[nodiscard]] std::vector<GpuPair> ring_hops(const std::vector<Count>& ring);
[[nodiscard]] SharedRoutes shared_routes(const Topology& topology, const std::vector<GpuPair>& transfers,
                                         const std::vector<std::vector<GpuPair>>& others);

}  // namespace stripesim::sim
