#pragma once
// Which GPU sits at each ring position. Rank order by default; `auto` searches for the order
// whose slowest hop (uncontended latency + bytes / bottleneck bandwidth) is fastest, then the
// smallest total: exhaustively up to 9 GPUs, else nearest-neighbour and 2-opt.
#include <vector>

#include "stripesim/sim/topology.hpp"

namespace stripesim::sim {

[[nodiscard]] std::vector<Count> rank_ring_order(Count devices);
[[nodiscard]] std::vector<Count> auto_ring_order(const Topology& topology, Count devices, Bytes hop_bytes);

// The route of every hop: hops[p] goes from order[p] to order[(p + 1) % N].
[[nodiscard]] std::vector<Route> ring_routes(const Topology& topology, const std::vector<Count>& order);

}  // namespace stripesim::sim
