#include "stripesim/sim/kernel_time.hpp"

#include <algorithm>
#include <numeric>
#include <queue>
#include <stdexcept>

#include <fmt/format.h>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::sim {

Microseconds dot(const KernelFeatures& f, const PassCosts& c) {
  return f.launches * c.launch_us + f.blocks * c.block_us + f.full_tiles * c.full_tile_us +
         f.partial_tiles * c.partial_tile_us;
}

KernelTimeModel::KernelTimeModel(KernelProfile profile, Count sms, KernelCallShape shape)
    : profile_(at_tile(std::move(profile), shape.tile)), slots_(profile_.slots.value_or(sms * profile_.blocks_per_sm)), shape_(shape) {
  if (slots_ < 1 || shape_.streams < 1) throw std::invalid_argument("KernelTimeModel: needs a slot and a stream");
  // A tile's work is its FLOPs (TQ * TK * head_dim); a block's is its queries' bytes in and out
  // (TQ * head_dim). Both slow down with a precision the tensor cores run at a lower rate.
  const double dim = static_cast<double>(shape_.head_dim) / static_cast<double>(profile_.head_dim);
  const double tq = static_cast<double>(shape_.tile.query) / static_cast<double>(profile_.tile.query);
  const double tk = static_cast<double>(shape_.tile.key) / static_cast<double>(profile_.tile.key);
  tile_scale_ = dim * tq * tk * shape_.precision_slowdown;
  block_scale_ = dim * tq * shape_.precision_slowdown;
  if (profile_.backward_block_keys) {
    backward_split_ = std::max<Count>(1, (shape_.tile.key + *profile_.backward_block_keys - 1) / *profile_.backward_block_keys);
    // Each block of a split key tile is placed on its own: a few per tile, as kernels launch.
    constexpr Count kMostBlocksPerKeyTile = 1024;
    if (backward_split_ > kMostBlocksPerKeyTile) {
      throw model::InputError(fmt::format("kernel profile {}: backward_block_keys {} splits a {}-key tile into {} blocks (at most {})",
                                          profile_.name, *profile_.backward_block_keys, shape_.tile.key, backward_split_,
                                          kMostBlocksPerKeyTile));
    }
  }
}

KernelFeatures KernelTimeModel::features(const model::QueryTileProfile& rows, KernelPass pass, Count trimmed_length) const {
  return features(rows, pass, costs(pass), trimmed_length);
}

bool KernelTimeModel::slowed_by_trim(Count trimmed_length) const {
  return profile_.trims_below_diagonal && trimmed_length > 0 &&
         (trimmed_length % shape_.tile.query != 0 || trimmed_length % shape_.tile.key != 0);
}

KernelFeatures KernelTimeModel::features(const model::QueryTileProfile& rows, KernelPass pass, const PassCosts& costs,
                                         Count trimmed_length) const {
  KernelFeatures f = placed_features(rows, costs, pass == KernelPass::backward ? backward_split_ : 1);
  if (slowed_by_trim(trimmed_length)) {
    for (double* x : {&f.launches, &f.blocks, &f.full_tiles, &f.partial_tiles}) *x *= costs.trimmed_factor;
  }
  return f;
}

KernelFeatures KernelTimeModel::placed_features(const model::QueryTileProfile& rows, const PassCosts& costs,
                                                Count blocks_per_row) const {
  Count active = 0;
  for (const auto& row : rows) active += row.full + row.partial;
  KernelFeatures out;
  if (active == 0 && !profile_.empty_calls_launch) return out;  // the implementation skips the call
  out.launches = 1;

  // The blocks of one stream, in grid order; every stream (head, sequence) repeats them. A row
  // split over several blocks gives each an equal share of its tiles.
  struct Block {
    Count full, partial;
    Microseconds us;
  };
  const double tile_share = tile_scale_ / static_cast<double>(blocks_per_row);
  std::vector<Block> one_stream;
  one_stream.reserve(rows.size() * static_cast<size_t>(blocks_per_row));
  for (const auto& row : rows) {
    if (row.full + row.partial == 0 && !profile_.empty_query_tiles_launch) continue;
    const double tiles_us = static_cast<double>(row.full) * costs.full_tile_us + static_cast<double>(row.partial) * costs.partial_tile_us;
    one_stream.insert(one_stream.end(), static_cast<size_t>(blocks_per_row),
                      Block{row.full, row.partial, block_scale_ * costs.block_us + tile_share * tiles_us});
  }
  if (one_stream.empty()) return out;
  const Count blocks = static_cast<Count>(one_stream.size()) * shape_.streams;

  auto add = [&](KernelFeatures& f, const Block& b) {
    f.blocks += block_scale_;
    f.full_tiles += tile_share * static_cast<double>(b.full);
    f.partial_tiles += tile_share * static_cast<double>(b.partial);
  };
  const bool uniform = std::all_of(one_stream.begin(), one_stream.end(), [&](const Block& b) {
    return b.full == one_stream.front().full && b.partial == one_stream.front().partial;
  });
  if (uniform || blocks <= slots_) {
    // Equal blocks fill whole waves; with a slot for every block the longest one decides.
    const auto longest = std::max_element(one_stream.begin(), one_stream.end(),
                                          [](const Block& a, const Block& b) { return a.us < b.us; });
    const Count per_slot = uniform ? (blocks + slots_ - 1) / slots_ : 1;
    KernelFeatures slot;
    for (Count i = 0; i < per_slot; ++i) add(slot, *longest);
    out.blocks = slot.blocks;
    out.full_tiles = slot.full_tiles;
    out.partial_tiles = slot.partial_tiles;
    return out;
  }

  std::vector<size_t> order(static_cast<size_t>(blocks));
  std::iota(order.begin(), order.end(), size_t{0});
  const auto block_at = [&](size_t i) -> const Block& { return one_stream[i % one_stream.size()]; };
  if (profile_.order == BlockOrder::longest_first) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return block_at(a).us > block_at(b).us; });
  }
  // Each block goes to the slot that frees first (ties: the lowest slot), as the block scheduler
  // hands a new block to whichever SM has room.
  using Slot = std::pair<Microseconds, Count>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_at;
  for (Count s = 0; s < slots_; ++s) free_at.push({0.0, s});
  std::vector<KernelFeatures> load(static_cast<size_t>(slots_));
  std::vector<Microseconds> finish(static_cast<size_t>(slots_), 0.0);
  for (const size_t i : order) {
    const auto [t, s] = free_at.top();
    free_at.pop();
    const Block& b = block_at(i);
    add(load[static_cast<size_t>(s)], b);
    finish[static_cast<size_t>(s)] = t + b.us;
    free_at.push({t + b.us, s});
  }
  const auto last = static_cast<size_t>(std::max_element(finish.begin(), finish.end()) - finish.begin());
  out.blocks = load[last].blocks;
  out.full_tiles = load[last].full_tiles;
  out.partial_tiles = load[last].partial_tiles;
  return out;
}

std::vector<Microseconds> KernelTimeModel::call_times(const model::Work& work, KernelPass pass) const {
  if (work.profiles.empty()) throw std::invalid_argument("KernelTimeModel::call_times: count the work with WorkDetail::query_tiles");
  std::vector<Microseconds> per_profile;
  per_profile.reserve(work.profiles.size());
  for (const auto& rows : work.profiles) per_profile.push_back(call_us(rows, pass));
  const Count devices = work.query_tile_profile.devices();
  std::vector<Microseconds> out(static_cast<size_t>(work.query_tile_profile.rounds() * devices));
  const double trimmed = costs(pass).trimmed_factor;
  for (Count r = 0; r < work.query_tile_profile.rounds(); ++r) {
    for (Count d = 0; d < devices; ++d) {
      const Microseconds us = per_profile[static_cast<size_t>(work.query_tile_profile.at(r, d))];
      // Every feature scales by the factor, so the time does (features()).
      const bool slowed = work.trimmed_length.rounds() > 0 && slowed_by_trim(work.trimmed_length.at(r, d));
      out[static_cast<size_t>(r * devices + d)] = slowed ? us * trimmed : us;
    }
  }
  return out;
}

}  // namespace stripesim::sim
