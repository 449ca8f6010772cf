#pragma once
// The time of one attention call, from the work model's per-query-tile profile (and, for a
// backward, its per-key-tile profile, as KernelProfile::backward_blocks says) and a kernel
// profile. The kernel runs one thread block per query tile per head (per sequence); a block
// lasts block_us plus its full and partial key tiles at their costs; the blocks are handed, in
// the kernel's order, to sms * blocks_per_sm slots, each block to the slot that frees first (the
// hardware block scheduler); the call lasts launch_us plus the last slot to finish. A profile
// whose SMs share their throughput (lone_block_speedup > 1) places the blocks on SMs instead,
// each block running faster while its SM holds fewer (a long block left alone at a call's end).
//
// Once the blocks are placed the time is linear in the costs: launch_us * 1 + block_us * blocks
// + full_tile_us * full tiles + partial_tile_us * partial tiles, counted on the slot (or SM,
// each of its intervals charged to the blocks it ran) that finishes last. Those four counts are
// the call's features: prediction takes their dot product with the costs, and the calibration
// fits the costs to measured times on the same features.
// A call the kernel runs trimmed to a length that ends inside a tile (kernel_profile.hpp) has
// every feature scaled by the pass's trimmed_factor.
#include <vector>

#include "stripesim/model/work/work_matrix.hpp"
#include "stripesim/sim/kernel_profile.hpp"

namespace stripesim::sim {

enum class KernelPass { forward, backward };

// What one call's time is made of on its critical slot, already scaled to the call's head size,
// tile and precision (so that time = dot(features, costs) with the profile's own costs).
struct KernelFeatures {
  double launches = 0;  // 1 when the call is made, 0 when it is skipped
  double blocks = 0;
  double full_tiles = 0;
  double partial_tiles = 0;
};

[[nodiscard]] Microseconds dot(const KernelFeatures& features, const PassCosts& costs);

// The shape of the calls one workload makes; every call of the workload shares it.
struct KernelCallShape {
  Count streams = 1;        // heads per device * sequences: copies of the query tile profile
  Count head_dim = 128;
  model::TileShape tile{128, 128};
  double precision_slowdown = 1;  // peak of the profile's precision / peak of the call's
  // The most tokens a call's queries or keys hold (a device's block; 0: no bound). A tile larger
  // than that is cut to it, as the work model counts it and as blockwise implementations cut
  // their chunks to the sequence: it is priced as the tokens it holds, not as the tile asked.
  Count block_tokens = 0;
};

class KernelTimeModel {
 public:
  // Priced with the profile's costs at the call's tile when it lists that shape (at_tile).
  KernelTimeModel(KernelProfile profile, Count sms, KernelCallShape shape);

  [[nodiscard]] const KernelProfile& profile() const { return profile_; }
  [[nodiscard]] const PassCosts& costs(KernelPass pass) const {
    return pass == KernelPass::forward ? profile_.forward : profile_.backward;
  }
  // The features of one call, its blocks placed with `costs` (the profile's by default).
  // `rows`: each query tile's key tiles (the forward's blocks); `columns`: each key tile's query
  // tiles (model::Work::key_tile_profile), which the backward's blocks work through as the
  // profile's backward_blocks says. Without `columns` the backward is priced on the query tiles
  // whatever the profile says: exact as a set of block lengths for a causal block of contiguous or
  // striped positions and for windows, whose masks look the same from the keys' side, a rectangle
  // transposed for a zigzag half block or documents.
  // `trimmed_length`: the call's length when the block is run trimmed (model::Work::trimmed_length).
  [[nodiscard]] KernelFeatures features(const model::QueryTileProfile& rows, KernelPass pass,
                                        Count trimmed_length = 0) const;
  [[nodiscard]] KernelFeatures features(const model::QueryTileProfile& rows, KernelPass pass, const PassCosts& costs,
                                        Count trimmed_length = 0) const;
  [[nodiscard]] KernelFeatures features(const model::QueryTileProfile& rows, const model::KeyTileProfile& columns, KernelPass pass,
                                        const PassCosts& costs, Count trimmed_length = 0) const;
  [[nodiscard]] Microseconds call_us(const model::QueryTileProfile& rows, KernelPass pass, Count trimmed_length = 0) const {
    return dot(features(rows, pass, trimmed_length), costs(pass));
  }
  [[nodiscard]] Microseconds call_us(const model::QueryTileProfile& rows, const model::KeyTileProfile& columns, KernelPass pass,
                                     Count trimmed_length = 0) const {
    return dot(features(rows, columns, pass, costs(pass), trimmed_length), costs(pass));
  }
  // Whether this kernel runs a block trimmed to `trimmed_length` down a path slower than its
  // tiles (a length that ends inside the call's tile), so the pass's trimmed_factor applies.
  [[nodiscard]] bool slowed_by_trim(Count trimmed_length) const;
  // The time of every (round, device) of a Work counted with WorkDetail::query_tiles (its key
  // tile profiles for the backward), computed once per distinct profile: [round * devices + device].
  [[nodiscard]] std::vector<Microseconds> call_times(const model::Work& work, KernelPass pass) const;
  // A tile's cost priced with `costs` (its score_head_dims) and a block's cost, relative to the
  // profile's (head size, tile, precision).
  [[nodiscard]] double tile_scale(const PassCosts& costs) const;
  [[nodiscard]] double tile_scale(KernelPass pass) const { return tile_scale(costs(pass)); }
  [[nodiscard]] double block_scale() const { return block_scale_; }
  // Thread blocks the backward runs per key tile and head: 1 (FlashAttention's and cuDNN's), or
  // the key tile over the profile's backward_block_keys, each block an equal share of its tiles.
  [[nodiscard]] Count backward_blocks_per_key_tile() const { return backward_split_; }

 private:
  KernelProfile profile_;
  Count sms_;
  KernelCallShape shape_;
  // One kind of block of a call: a block per tile of `tiles` (split into `split` equal blocks),
  // each doing `share` of its tiles' work.
  struct BlockSet {
    const model::QueryTileProfile* tiles;
    double share = 1;
    Count split = 1;
  };
  // The blocks of every set, one set after another within a stream (head), as one grid.
  [[nodiscard]] KernelFeatures placed_features(const std::vector<BlockSet>& sets, const PassCosts& costs,
                                               const BlockPlacement& placement) const;
  double tile_area_;  // the call's tile over the profile's
  double block_scale_;
  Count backward_split_ = 1;
};

}  // namespace stripesim::sim
