#pragma once
// A small topology whose one shared link the tests can reason about: GPUs 0 and 1 behind bridge
// A, 2 and 3 behind bridge B, every GPU link 100 GB/s, A - B 10 GB/s, no latency.
#include <nlohmann/json.hpp>

#include "stripesim/sim/topology.hpp"

namespace stripesim::sim {

inline Topology two_bridges() {
  const auto doc = nlohmann::json::parse(R"({
    "name": "two-bridges",
    "nodes": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}, {"id": "g2", "kind": "gpu"},
              {"id": "g3", "kind": "gpu"}, {"id": "A", "kind": "bridge"}, {"id": "B", "kind": "bridge"}],
    "links": [{"a": "g0", "b": "A", "bandwidth_gbps": 100, "latency_us": 0},
              {"a": "g1", "b": "A", "bandwidth_gbps": 100, "latency_us": 0},
              {"a": "g2", "b": "B", "bandwidth_gbps": 100, "latency_us": 0},
              {"a": "g3", "b": "B", "bandwidth_gbps": 100, "latency_us": 0},
              {"a": "A", "b": "B", "bandwidth_gbps": 10, "latency_us": 0}]})");
  return Topology::from_json(doc, "two-bridges");
}

}  // namespace stripesim::sim
