#pragma once
// Which GPU sits at each ring position. Rank order by default; `auto` searches for the order
// whose slowest hop (uncontended latency + bytes / bottleneck bandwidth) is fastest, then the
// smallest total: exhaustively up to 9 GPUs, else nearest-neighbour and 2-opt.
#include <vector>

#include "stripesim/sim/topology.hpp"

namespace stripesim::sim {

[[nodiscard]] std::vector<Count> rank_ring_order(Count devices);

// A mesh of M (model parallel) x N (the ring, sequence parallel) x D (data parallel) placed on
// the topology's GPUs as launchers number ranks (Megatron, torchrun): a model-parallel group on
// consecutive GPUs (inside a node first, where its per-layer collectives are cheapest), the ring
// across groups, replicas last. A ring of M > 1 groups therefore strides over GPUs and may span
// nodes.
struct Mesh {
  Count model_parallel = 1;
  Count ring = 1;
  Count data_parallel = 1;

  [[nodiscard]] Count gpus() const { return model_parallel * ring * data_parallel; }
  [[nodiscard]] Count gpu(Count replica, Count position, Count rank) const {
    return (replica * ring + position) * model_parallel + rank;
  }
};

// The ring of replica 0, model-parallel rank 0: the one the simulation follows.
[[nodiscard]] std::vector<Count> mesh_ring_order(const Mesh& mesh);
// The model-parallel group of replica 0 at ring position 0.
[[nodiscard]] std::vector<Count> model_parallel_group(const Mesh& mesh);
// Every copy of model-parallel rank 0's weights: one per (replica, ring position); their
// gradients are summed over this group.
[[nodiscard]] std::vector<Count> gradient_group(const Mesh& mesh);
[[nodiscard]] std::vector<Count> auto_ring_order(const Topology& topology, Count devices, Bytes hop_bytes);

// The route of every hop: hops[p] goes from order[p] to order[(p + 1) % N].
[[nodiscard]] std::vector<Route> ring_routes(const Topology& topology, const std::vector<Count>& order);

}  // namespace stripesim::sim
