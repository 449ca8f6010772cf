#pragma once
// Ulysses on host cores, shared by the cpu backend (every device in one process) and the mpi
// backend (a process per device): how the simulator splits the heads over the devices, the whole
// sequence each device then attends, and the head slices its all-to-alls move.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "stripesim/validate/ring_problem.hpp"

namespace stripesim::validate {

struct UlyssesSplit {
  RingCase per_device;  // the attention one device runs: its heads and K/V heads over the whole sequence
  // The whole sequence in order, each query's allowed keys from the shard that holds it.
  DeviceShard whole;
  Count group = 1;              // query heads per K/V head
  std::int64_t pair_bytes = 0;  // Q, K, V each device sends each other one (the simulator's)
  [[nodiscard]] Count first_head(Count device) const { return device * per_device.heads; }
  // K/V heads are replicated when there are fewer than devices: neighbours may share one.
  [[nodiscard]] Count first_kv_head(Count device) const { return first_head(device) / group; }
};

// The simulator's split (sim::cp_shape, so the validator runs exactly what it predicts) for
// elements of `element_bytes`.
[[nodiscard]] UlyssesSplit ulysses_split(const RingProblem& problem, Count element_bytes);

// Heads [first, first + count) of every token of `values` ([token][all_heads][head_dim]), as T:
// what an all-to-all moves of those tokens to the device that owns the heads.
template <typename T, typename S>
std::vector<T> heads_of(const std::vector<S>& values, Count all_heads, Count first, Count count, Count head_dim) {
  const Count tokens = static_cast<Count>(values.size()) / (all_heads * head_dim);
  std::vector<T> out(static_cast<size_t>(tokens * count * head_dim));
  for (Count p = 0; p < tokens; ++p) {
    const auto* src = &values[static_cast<size_t>((p * all_heads + first) * head_dim)];
    std::transform(src, src + count * head_dim, out.begin() + static_cast<std::ptrdiff_t>(p * count * head_dim),
                   [](S x) { return static_cast<T>(x); });
  }
  return out;
}

}  // namespace stripesim::validate
