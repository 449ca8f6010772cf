#pragma once
// The duration of one round's attention kernel on one device, from the work model's tile
// counts. The kernel launches one thread block per query tile per head per sequence; a block
// loops over its active key tiles. Blocks run on sms * blocks_per_sm slots in waves; a full
// tile costs its FLOPs (4 * TQ * TK * head_dim) at `efficiency` of the attention peak shared
// by the slots, a tile that applies the mask (1 + partial_tile_extra) times that.
#include "stripesim/model/hardware_profile.hpp"
#include "stripesim/sim/units.hpp"

namespace stripesim::sim {

using model::Count;

struct RoundTiles {
  Count active = 0;
  Count partial = 0;
  Count longest_query_tile = 0;  // active key tiles of the busiest query tile
};

class KernelCost {
 public:
  // `streams` = heads per device * sequences in the batch (each gets its own blocks).
  KernelCost(const model::KernelProfile& profile, model::TeraflopsPerSecond attention_peak, model::TileShape tile,
             Count head_dim, Count query_tiles, Count streams);

  // Time of one full tile on one slot.
  [[nodiscard]] Microseconds full_tile_us() const { return full_tile_us_; }
  // 0 when no tile is active: implementations skip the call for a fully masked block.
  [[nodiscard]] Microseconds kernel_us(const RoundTiles& tiles, bool backward) const;

 private:
  model::KernelProfile profile_;
  Microseconds full_tile_us_;
  Count query_tiles_;
  Count streams_;
};

}  // namespace stripesim::sim
