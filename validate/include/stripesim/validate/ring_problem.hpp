#pragma once
// The concrete problem every backend runs: random Q, K, V in original token order, and for every
// device the positions it holds (its layout shard) with each query's allowed key interval
// [lowest_key, highest_key] on original positions. Masks reduce to that interval for every mask
// the model knows, so kernels evaluate any layout and mask from two numbers per query and one
// position per key: position ids travel with the K/V block around the ring.
#include <vector>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/validate/ring_case.hpp"

namespace stripesim::validate {

struct DeviceShard {
  std::vector<Position> positions;    // [local] original position of each token the device holds
  std::vector<Position> lowest_key;   // [local] for the query at that local index
  std::vector<Position> highest_key;  // [local]
};

// A case with everything that can be wrong about it (sizes, the mask spec, the layout spec)
// checked, its mask built and its layout planned, none of the problem's data made: an InputError
// names the flag. A RingProblem is built from it.
struct RingPlan {
  RingCase ring_case;
  model::Mask mask;
  model::LayoutPlan layout;
};
[[nodiscard]] RingPlan plan_ring_problem(RingCase ring_case);

class RingProblem;
// Every device's positions, device 0's first: the order an all-gather leaves the blocks in.
[[nodiscard]] std::vector<Position> positions_in_rank_order(const RingProblem& problem);

class RingProblem {
 public:
  explicit RingProblem(const RingPlan& plan);
  // RingProblem(plan_ring_problem(ring_case)).
  explicit RingProblem(RingCase ring_case);

  [[nodiscard]] const RingCase& ring_case() const { return case_; }
  [[nodiscard]] const model::Layout& layout() const { return layout_; }
  [[nodiscard]] const model::Mask& mask() const { return mask_; }
  [[nodiscard]] Count block_size() const { return case_.seq_len / case_.devices; }
  [[nodiscard]] const DeviceShard& shard(Count device) const { return shards_[static_cast<size_t>(device)]; }

  // Inputs in ORIGINAL order, row-major: q[(p * heads + h) * head_dim + i], k and v with kv_heads.
  // Values are uniform in [-1, 1) from the case's seed (SplitMix64, platform-independent).
  [[nodiscard]] const std::vector<double>& q() const { return q_; }
  [[nodiscard]] const std::vector<double>& k() const { return k_; }
  [[nodiscard]] const std::vector<double>& v() const { return v_; }
  // The gradient of the loss with respect to the output, dO, in the output's order (a random
  // upstream gradient from the seed, as q): what the backward ring starts from. Empty unless the
  // case runs the backward.
  [[nodiscard]] const std::vector<double>& dout() const { return dout_; }

  // The host's skip decision for one (round, device): false when no query of `device` may see any
  // key of the block it holds at `round`. Implementations launch nothing then (the work model
  // prices such a round at zero).
  [[nodiscard]] bool block_active(Count round, Count device) const {
    return block_active_[static_cast<size_t>(round * case_.devices + device)] != 0;
  }

  // Softmax scale 1 / sqrt(head_dim).
  [[nodiscard]] double scale() const;

 private:
  RingCase case_;
  model::Mask mask_;  // before layout_: layouts built from documents need the mask
  model::Layout layout_;
  std::vector<DeviceShard> shards_;
  std::vector<double> q_, k_, v_, dout_;
  std::vector<char> block_active_;  // [round * devices + device]
};

}  // namespace stripesim::validate
