#include "stripesim/validate/ulysses_split.hpp"

#include "stripesim/sim/context_parallel.hpp"

namespace stripesim::validate {

UlyssesSplit ulysses_split(const RingProblem& problem, Count element_bytes) {
  const RingCase& c = problem.ring_case();
  const Count n = c.seq_len;
  const sim::CpShape shape =
      sim::cp_shape(sim::parse_context_parallel("ulysses", c.devices),
                    sim::AttentionShape{n, c.devices, 1, c.heads, c.kv_heads, c.head_dim, element_bytes}, 2);
  UlyssesSplit split;
  split.per_device = c;
  split.per_device.heads = shape.streams;
  split.per_device.kv_heads = shape.kv_heads;
  split.group = c.heads / c.kv_heads;
  split.pair_bytes = shape.qkv_pair_bytes;
  split.whole = {std::vector<Position>(static_cast<size_t>(n)), std::vector<Position>(static_cast<size_t>(n)),
                 std::vector<Position>(static_cast<size_t>(n))};
  for (Count d = 0; d < c.devices; ++d) {
    const DeviceShard& shard = problem.shard(d);
    for (size_t l = 0; l < shard.positions.size(); ++l) {
      const auto p = static_cast<size_t>(shard.positions[l]);
      split.whole.positions[p] = shard.positions[l];
      split.whole.lowest_key[p] = shard.lowest_key[l];
      split.whole.highest_key[p] = shard.highest_key[l];
    }
  }
  return split;
}

}  // namespace stripesim::validate
