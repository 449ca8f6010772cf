#pragma once
// Which node each GPU of a job sits on, the way a cluster launcher places one process per GPU:
// from an Open MPI hostfile (ranks fill each host's slots in file order, mpirun's default
// mapping), from cluster:NxG (G consecutive GPUs per node), or from the host names the ranks of
// a running MPI job report. Hops between GPUs of one node cross NVLink; the others, the network.
#include <string>
#include <vector>

#include "stripesim/model/work/types.hpp"

namespace stripesim::sim {

using model::Count;

// The most GPUs a topology holds, generated (cluster:NxG, nvswitch:G, a hostfile's slots) or read
// from a file: well past any ring stripesim simulates, and a graph whose routes are found in moments.
inline constexpr Count kMaxTopologyGpus = 65536;

struct NodePlacement {
  std::vector<std::string> hosts;  // node names, in the order of their first GPU
  std::vector<Count> node_of_gpu;  // an index into `hosts` for every GPU, in GPU (rank) order

  [[nodiscard]] Count gpus() const { return static_cast<Count>(node_of_gpu.size()); }
  [[nodiscard]] Count nodes() const { return static_cast<Count>(hosts.size()); }
  [[nodiscard]] bool same_node(Count a, Count b) const {
    return node_of_gpu[static_cast<size_t>(a)] == node_of_gpu[static_cast<size_t>(b)];
  }
  // The first `gpus` GPUs only (a ring of N devices on a larger machine uses GPUs 0 .. N-1).
  [[nodiscard]] NodePlacement first(Count gpus) const;
  // "node0: 0-3, node1: 4-7": each node's GPUs, consecutive runs joined.
  [[nodiscard]] std::string describe() const;
};

// GPU g on host_of_gpu[g]; ranks naming the same host share a node.
[[nodiscard]] NodePlacement placement_from_hosts(const std::vector<std::string>& host_of_gpu);
// `nodes` nodes named node0, node1, ... of `gpus_per_node` consecutive GPUs each.
[[nodiscard]] NodePlacement uniform_placement(Count nodes, Count gpus_per_node);
// An Open MPI hostfile: one "HOST slots=N" per line (optionally "max_slots=M", which bounds
// oversubscription and does not move ranks), '#' comments, blank lines. Host h's N slots take the
// next N ranks. `label` names the input in errors ("--topology hostfile:hosts").
[[nodiscard]] NodePlacement read_hostfile(const std::string& path, const std::string& label);
// True when both put the same GPUs together (node names aside).
[[nodiscard]] bool same_grouping(const NodePlacement& a, const NodePlacement& b);

}  // namespace stripesim::sim
