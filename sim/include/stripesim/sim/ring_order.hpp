#pragma once
// Which GPU sits at each ring position. Rank order by default; `auto` searches for the order
// whose slowest hop (uncontended latency + bytes / bottleneck bandwidth) is fastest, then the
// smallest total: exhaustively up to 9 GPUs, else nearest-neighbour and 2-opt.
#include <vector>

#include "stripesim/model/mesh.hpp"
#include "stripesim/sim/topology.hpp"

namespace stripesim::sim {

[[nodiscard]] std::vector<Count> rank_ring_order(Count devices);

// A mesh placed on the topology (model/mesh.hpp says how). The ring of replica 0,
// model-parallel rank 0: the one the simulation follows.
[[nodiscard]] std::vector<Count> mesh_ring_order(const model::Mesh& mesh);
// The model-parallel group of replica 0 at ring position 0.
[[nodiscard]] std::vector<Count> model_parallel_group(const model::Mesh& mesh);
// Every copy of model-parallel rank 0's weights: one per (replica, ring position); their
// gradients are summed over this group.
[[nodiscard]] std::vector<Count> gradient_group(const model::Mesh& mesh);
[[nodiscard]] std::vector<Count> auto_ring_order(const Topology& topology, Count devices, Bytes hop_bytes);

// The route of every hop: hops[p] goes from order[p] to order[(p + 1) % N].
[[nodiscard]] std::vector<Route> ring_routes(const Topology& topology, const std::vector<Count>& order);

}  // namespace stripesim::sim
