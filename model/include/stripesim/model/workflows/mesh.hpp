#pragma once
// A mesh of devices: M (model parallel) x N (the ring, sequence parallel) x D (data parallel).
// The paper writes its meshes as the tuple (M, N), "MxN" here. Placed on a topology's GPUs as
// launchers number ranks (Megatron, torchrun): a model-parallel group on consecutive GPUs
// (inside a node first, where its per-layer collectives are cheapest), the ring across groups,
// replicas last; a ring of M > 1 groups therefore strides over GPUs and may span nodes.
#include <string>
#include <string_view>

#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

struct Mesh {
  Count model_parallel = 1;
  Count devices = 1;  // the ring
  Count data_parallel = 1;

  [[nodiscard]] std::string to_string() const;  // "MxN" (and "xD" when D > 1)
  [[nodiscard]] Count gpus() const { return model_parallel * devices * data_parallel; }
  friend bool operator==(const Mesh&, const Mesh&) = default;
  [[nodiscard]] Count gpu(Count replica, Count position, Count rank) const {
    return (replica * devices + position) * model_parallel + rank;
  }
};

// "MxN"; `what` names the input in messages ("--meshes", an experiment file's field).
[[nodiscard]] Mesh parse_mesh(std::string_view text, std::string_view what);

}  // namespace stripesim::model
