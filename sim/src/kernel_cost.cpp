#include "stripesim/sim/kernel_cost.hpp"

#include <algorithm>

namespace stripesim::sim {

KernelCost::KernelCost(const model::KernelProfile& profile, model::TeraflopsPerSecond attention_peak,
                       model::TileShape tile, Count head_dim, Count query_tiles, Count streams)
    : profile_(profile), query_tiles_(query_tiles), streams_(streams) {
  const double slots = static_cast<double>(profile.sms * profile.blocks_per_sm);
  const double tile_flops = 4.0 * static_cast<double>(tile.query) * static_cast<double>(tile.key) *
                            static_cast<double>(head_dim);
  const double flops_per_us_per_slot = attention_peak * 1e6 * profile.efficiency / slots;  // 1 TFLOP/s = 1e6 FLOP/us
  full_tile_us_ = tile_flops / flops_per_us_per_slot;
}

Microseconds KernelCost::kernel_us(const RoundTiles& tiles, bool backward) const {
  if (tiles.active == 0) return 0.0;
  const double multiplier = backward ? profile_.backward_tile_multiplier : 1.0;
  const double tile_us = full_tile_us_ * multiplier;
  const double streams = static_cast<double>(streams_);
  const double blocks = static_cast<double>(query_tiles_) * streams;
  const double slots = static_cast<double>(profile_.sms * profile_.blocks_per_sm);
  const double work_us =
      streams * (static_cast<double>(tiles.active) + static_cast<double>(tiles.partial) * profile_.partial_tile_extra) *
          tile_us +
      blocks * profile_.block_overhead_us;
  const double waves = std::ceil(blocks / slots);
  const double mean_block_us = work_us / blocks;
  const double longest_block_us = static_cast<double>(tiles.longest_query_tile) * tile_us + profile_.block_overhead_us;
  // Equal blocks take whole waves; a few long blocks on an otherwise idle GPU set the pace.
  return profile_.launch_overhead_us + std::max(waves * mean_block_us, longest_block_us);
}

}  // namespace stripesim::sim
