#include "stripesim/sim/kernel_time.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/parallel_for.hpp"
#include "stripesim/sim/time_key.hpp"

namespace stripesim::sim {
namespace {

// The earliest of a fixed set of times, each with its index (a block scheduler's slot, an SM),
// as a tournament tree of (time, index): the leaves are the indices (padded to a power of two
// with ones that never come), each inner node the smaller of its two children, so the root is
// the earliest, the lowest index on a tie. Setting an index rewrites its leaf and the nodes
// above it. A binary heap's sift-down chooses where to go next from a comparison, so each level
// waits for the last one's load; here every sibling's address is known in advance and only the
// comparisons form a chain (the placement loops' hot path).
class TimeTournament {
 public:
  // Every index at `time`, or never (nullopt) until set.
  TimeTournament(Count size, std::optional<Microseconds> time) {
    while (leaves_ < static_cast<size_t>(size)) leaves_ *= 2;
    nodes_.assign(2 * leaves_, kNever);
    if (time) {
      for (size_t s = 0; s < static_cast<size_t>(size); ++s) nodes_[leaves_ + s] = time_key(*time, s);
      for (size_t i = leaves_ - 1; i >= 1; --i) nodes_[i] = std::min(nodes_[2 * i], nodes_[2 * i + 1]);
    }
  }
  [[nodiscard]] bool empty() const { return nodes_[1] == kNever; }
  [[nodiscard]] Microseconds first_time() const { return key_time(nodes_[1]); }
  [[nodiscard]] size_t first_index() const { return static_cast<size_t>(key_tie_break(nodes_[1])); }
  // Whether another index is set to a time no later than `until` (at or after the first's): the
  // nodes the first beat on its way up hold every other index's earliest, and their addresses are
  // known from the first's leaf, so the levels are compared side by side (the times' bits alone,
  // which order as the times do; an unset index's bits are above every time's).
  [[nodiscard]] bool first_is_tied(Microseconds until) const {
    const auto until_bits = static_cast<std::uint64_t>(time_key(until, 0) >> 64);
    bool tied = false;
    for (size_t at = leaves_ + first_index(); at > 1; at /= 2) tied |= static_cast<std::uint64_t>(nodes_[at ^ 1] >> 64) <= until_bits;
    return tied;
  }
  void set(size_t index, Microseconds time) { rewrite(index, time_key(time, index)); }
  void clear(size_t index) { rewrite(index, kNever); }

 private:
  static constexpr TimeKey kNever = ~TimeKey{0};
  void rewrite(size_t index, TimeKey value) {
    size_t at = leaves_ + index;
    nodes_[at] = value;
    for (; at > 1; at /= 2) {
      const TimeKey sibling = nodes_[at ^ 1];
      value = sibling < value ? sibling : value;
      nodes_[at / 2] = value;
    }
  }
  size_t leaves_ = 1;
  std::vector<TimeKey> nodes_;  // 1-based: node i's children are 2i and 2i + 1; 0 unused
};

// The last moment that is still `t`: blocks that end together in exact arithmetic reach their
// ends through different sums of block times (an SM's clock plus a block's work, divided by a
// rate) and land a few ulps apart. Taken as distinct moments, the SM whose sum rounded lower frees
// first and takes the next block alone, where a whole wave of equal blocks should spread over
// every SM that frees: a call's time would jump with rounding, and would not be linear in the
// costs the fit solves for. The window is 1e-9 of the time since the call began (a nanosecond in
// a second), far below any real difference between two blocks, which differ by whole tile costs
// of microseconds. (Filling each freeing SM to the full before the next, as
// rounding did now and then, was measured too and misses few-headed rings: README, "Blocks that
// end together".)
[[nodiscard]] Microseconds same_moment_until(Microseconds t) {
  constexpr double kSameMomentRelative = 1e-9;
  return t + t * kSameMomentRelative;
}

// The load of the SM that finishes last when `blocks` blocks, in launch order, each of
// work_of(i) (its time on a full SM), run on `sms` SMs that share their throughput
// (BlockPlacement::lone_block_speedup); add(f, i, share) charges share of block i's features to f.
// A template over the two callables: placing a packed-documents ring calls them for every block
// of a million distinct calls.
template <typename WorkOf, typename Add>
KernelFeatures shared_sm_load(Count sms, const BlockPlacement& placement, size_t blocks, const WorkOf& work_of, const Add& add) {
  // The block scheduler fills the SMs breadth first (block i to SM i mod sms) up to
  // blocks_per_sm each, then hands the next block to whichever SM frees a place. An SM holding
  // k blocks runs each at rate g(k) (BlockPlacement::block_rate: block time on a full SM per unit
  // of time), so all its blocks advance alike: each SM keeps one work clock.
  // An interval of an SM's time is charged to the blocks it ran, in proportion to the share of
  // each block's work done in it, so that the features' dot product with the costs is the time.
  const auto per_sm = static_cast<size_t>(placement.blocks_per_sm);
  std::vector<double> rate(per_sm + 1, 0.0);
  for (size_t k = 1; k <= per_sm; ++k) rate[k] = placement.block_rate(static_cast<Count>(k));
  struct Resident {
    Microseconds finish;  // on the SM's work clock
    size_t block;
  };
  struct Sm {
    Microseconds clock = 0, time = 0;
    size_t held = 0;  // residents, in the order they came, at resident[sm * per_sm ...]
    KernelFeatures load;
  };
  std::vector<Sm> sm(static_cast<size_t>(sms));
  std::vector<Resident> resident(static_cast<size_t>(sms) * per_sm);
  const auto residents_of = [&](size_t i) { return resident.begin() + static_cast<std::ptrdiff_t>(i * per_sm); };
  size_t next = 0;
  const auto take_next = [&](size_t i) {
    Sm& s = sm[i];
    residents_of(i)[static_cast<std::ptrdiff_t>(s.held++)] = {s.clock + work_of(next), next};
    ++next;
  };
  for (size_t place = 0; place < per_sm && next < blocks; ++place) {
    for (size_t i = 0; i < sm.size() && next < blocks; ++i) take_next(i);
  }
  const auto next_finish = [&](size_t i) {
    const auto first = residents_of(i);
    Microseconds earliest = first->finish;
    for (size_t j = 1; j < sm[i].held; ++j) earliest = std::min(earliest, first[static_cast<std::ptrdiff_t>(j)].finish);
    return earliest;
  };
  const auto event_at = [&](size_t i) { return sm[i].time + (next_finish(i) - sm[i].clock) / rate[sm[i].held]; };
  // Each SM holding blocks has one event, the moment its next block ends: the earliest first,
  // the lowest SM on a tie.
  TimeTournament events(sms, std::nullopt);
  for (size_t i = 0; i < sm.size(); ++i) {
    if (sm[i].held > 0) events.set(i, event_at(i));
  }
  std::vector<size_t> freeing;  // the SMs whose blocks finish at one moment, lowest first
  while (!events.empty()) {
    const Microseconds time = events.first_time();
    const Microseconds until = same_moment_until(time);
    freeing.clear();
    freeing.push_back(events.first_index());
    // Most moments free one SM, whose event is then set again in place; only a tie takes the
    // SMs out of the tournament one by one to find the next (in time order: then lowest first).
    if (events.first_is_tied(until)) {
      events.clear(freeing.back());
      while (!events.empty() && events.first_time() <= until) {
        freeing.push_back(events.first_index());
        events.clear(freeing.back());
      }
      std::sort(freeing.begin(), freeing.end());
    }
    for (const size_t i : freeing) {
      Sm& s = sm[i];
      const Microseconds reached = next_finish(i);
      const Microseconds reached_until = same_moment_until(reached);  // its blocks that end with the first
      const double k = static_cast<double>(s.held);
      const double g = rate[s.held];
      const auto first = residents_of(i);
      size_t kept = 0;
      for (size_t j = 0; j < s.held; ++j) {
        const Resident r = first[static_cast<std::ptrdiff_t>(j)];
        const Microseconds work = work_of(r.block);
        if (work > 0) add(s.load, r.block, (reached - s.clock) / (k * g * work));
        if (!(r.finish <= reached_until)) first[static_cast<std::ptrdiff_t>(kept++)] = r;  // the rest keep their order
      }
      s.held = kept;
      s.clock = reached;
      s.time = time;
    }
    // Places freed at one moment are filled as the first wave was, breadth first: one block to
    // each such SM in turn (equal blocks end together, and their successors spread over the SMs
    // instead of pairing up on the first ones, where a lone block would run no faster).
    for (bool placed = true; placed && next < blocks;) {
      placed = false;
      for (const size_t i : freeing) {
        if (next < blocks && sm[i].held < per_sm) {
          take_next(i);
          placed = true;
        }
      }
    }
    for (const size_t i : freeing) {
      if (sm[i].held > 0) {
        events.set(i, event_at(i));
      } else if (freeing.size() == 1) {
        events.clear(i);  // a lone SM was left in the tournament
      }
    }
  }
  const auto last = std::max_element(sm.begin(), sm.end(), [](const Sm& a, const Sm& b) { return a.time < b.time; });
  return last->load;
}

}  // namespace

Microseconds dot(const KernelFeatures& f, const PassCosts& c) {
  return f.launches * c.launch_us + f.blocks * c.block_us + f.full_tiles * c.full_tile_us +
         f.partial_tiles * c.partial_tile_us;
}

KernelTimeModel::KernelTimeModel(KernelProfile profile, Count sms, KernelCallShape shape)
    : profile_(at_tile(std::move(profile), shape.tile)), sms_(sms), shape_(shape) {
  if (sms_ < 1 || shape_.streams < 1 || profile_.slots.value_or(1) < 1) {
    throw std::invalid_argument("KernelTimeModel: needs an SM, a slot and a stream");
  }
  // A block's work is its queries' bytes in and out (TQ * head_dim), slower with a precision the
  // tensor cores run at a lower rate; a tile's is in tile_scale().
  const auto cut = [&](Count tile) { return shape_.block_tokens > 0 ? std::min(tile, shape_.block_tokens) : tile; };
  const double tq = static_cast<double>(cut(shape_.tile.query)) / static_cast<double>(profile_.tile.query);
  const double tk = static_cast<double>(cut(shape_.tile.key)) / static_cast<double>(profile_.tile.key);
  tile_area_ = tq * tk;
  block_scale_ = static_cast<double>(shape_.head_dim) / static_cast<double>(profile_.head_dim) * tq * shape_.precision_slowdown;
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

double KernelTimeModel::tile_scale(const PassCosts& costs) const {
  // A tile's matmuls (Q K^T and P V, FLOPs in TQ * TK * head_dim) grow with the head size; each
  // score's element-wise work (exponential, running max and sum, rescaling) does not, and costs
  // as much as score_head_dims head dims of matmul. 0: a tile scales by its FLOPs. Above the
  // largest head size that share was measured at, by FLOPs again from there. A precision the
  // tensor cores run at another rate scales the whole tile: published fp8 kernels gain up to the
  // peak ratio whatever their share at bf16 (cuDNN at head size 256: 1.96x).
  const double s = costs.score_head_dims;
  const double d = static_cast<double>(shape_.head_dim), d0 = static_cast<double>(profile_.head_dim);
  const double up_to = static_cast<double>(costs.score_head_dims_up_to.value_or(profile_.head_dim));
  const double shared = std::min(d, up_to);
  return tile_area_ * shape_.precision_slowdown * (s + shared) / (s + d0) * (d / shared);
}

bool KernelTimeModel::slowed_by_trim(Count trimmed_length) const {
  return profile_.trims_below_diagonal && trimmed_length > 0 &&
         (trimmed_length % shape_.tile.query != 0 || trimmed_length % shape_.tile.key != 0);
}

KernelFeatures KernelTimeModel::features(const model::QueryTileProfile& rows, KernelPass pass, const PassCosts& costs,
                                         Count trimmed_length) const {
  return features(rows, {}, pass, costs, trimmed_length);
}

KernelFeatures KernelTimeModel::features(const model::QueryTileProfile& rows, const model::KeyTileProfile& columns, KernelPass pass,
                                         const PassCosts& costs, Count trimmed_length) const {
  KernelFeatures f;
  if (pass == KernelPass::forward) {
    f = placed_features({{&rows}}, costs, profile_.placement);
  } else {
    // Without the key tiles' loads, the query tiles stand in for them (kernel_time.hpp).
    const BackwardBlocks grid = columns.empty() && !rows.empty() ? BackwardBlocks::query_tiles : profile_.backward_blocks;
    const double dq = profile_.backward_dq_share;
    switch (grid) {
      case BackwardBlocks::query_tiles: f = placed_features({{&rows, 1.0, backward_split_}}, costs, backward_placement(profile_)); break;
      case BackwardBlocks::key_tiles: f = placed_features({{&columns, 1.0, backward_split_}}, costs, backward_placement(profile_)); break;
      case BackwardBlocks::key_tiles_then_query_tiles:
        f = placed_features({{&columns, 1.0 - dq, backward_split_}, {&rows, dq, 1}}, costs, backward_placement(profile_));
        break;
    }
  }
  if (slowed_by_trim(trimmed_length)) {
    for (double* x : {&f.launches, &f.blocks, &f.full_tiles, &f.partial_tiles}) *x *= costs.trimmed_factor;
  }
  return f;
}

KernelFeatures KernelTimeModel::placed_features(const std::vector<BlockSet>& sets, const PassCosts& costs,
                                                const BlockPlacement& placement) const {
  const Count slots = profile_.slots.value_or(sms_ * placement.blocks_per_sm);
  Count active = 0;
  for (const auto& row : *sets.front().tiles) active += row.full + row.partial;
  KernelFeatures out;
  if (active == 0 && !profile_.empty_calls_launch) return out;  // the implementation skips the call
  out.launches = 1;

  // The blocks of one stream, in grid order; every stream (head, sequence) repeats them. A tile
  // split over several blocks gives each an equal share of its tiles; `tile_share` is the part
  // of each of its tiles' work a block does, in the profile's tile units.
  struct Block {
    Count full, partial;
    Microseconds us;
    double tile_share;
  };
  std::vector<Block> one_stream;
  for (const BlockSet& set : sets) {
    const double tile_share = tile_scale(costs) * set.share / static_cast<double>(set.split);
    for (const auto& row : *set.tiles) {
      if (row.full + row.partial == 0 && !profile_.empty_query_tiles_launch) continue;
      const double tiles_us = static_cast<double>(row.full) * costs.full_tile_us + static_cast<double>(row.partial) * costs.partial_tile_us;
      one_stream.insert(one_stream.end(), static_cast<size_t>(set.split),
                        Block{row.full, row.partial, block_scale_ * costs.block_us + tile_share * tiles_us, tile_share});
    }
  }
  if (one_stream.empty()) return out;
  const Count blocks = static_cast<Count>(one_stream.size()) * shape_.streams;

  auto add = [&](KernelFeatures& f, const Block& b, double share) {
    f.blocks += share * block_scale_;
    f.full_tiles += share * b.tile_share * static_cast<double>(b.full);
    f.partial_tiles += share * b.tile_share * static_cast<double>(b.partial);
  };
  // SMs that share their throughput (lone_block_speedup > 1) need SMs: fixed `slots` have none.
  const bool shares = placement.lone_block_speedup != 1 && !profile_.slots;
  const bool uniform = std::all_of(one_stream.begin(), one_stream.end(), [&](const Block& b) {
    return b.full == one_stream.front().full && b.partial == one_stream.front().partial && b.tile_share == one_stream.front().tile_share;
  });
  // Fixed slots only: SMs that share speed up a wave's tail, so their blocks are always placed.
  if (!shares && (uniform || blocks <= slots)) {
    // Equal blocks fill whole waves; with a slot for every block the longest one decides.
    const auto longest = std::max_element(one_stream.begin(), one_stream.end(),
                                          [](const Block& a, const Block& b) { return a.us < b.us; });
    const Count per_slot = uniform ? (blocks + slots - 1) / slots : 1;
    KernelFeatures slot;
    for (Count i = 0; i < per_slot; ++i) add(slot, *longest, 1.0);
    out.blocks = slot.blocks;
    out.full_tiles = slot.full_tiles;
    out.partial_tiles = slot.partial_tiles;
    return out;
  }

  // The grid's blocks in the order they are handed out, as indices into one_stream. The grid is
  // stream-major (block s * len + j is row j of stream s) and every stream repeats one_stream, so
  // ordering one stream orders them all: longest first, blocks of equal length keep grid order,
  // which puts the streams' copies of a group of equal blocks one stream after another.
  const size_t len = one_stream.size();
  std::vector<size_t> by_length(len);
  std::iota(by_length.begin(), by_length.end(), size_t{0});
  if (placement.order == BlockOrder::longest_first) {
    std::stable_sort(by_length.begin(), by_length.end(), [&](size_t a, size_t b) { return one_stream[a].us > one_stream[b].us; });
  }
  std::vector<size_t> order;
  order.reserve(static_cast<size_t>(blocks));
  for (size_t group = 0; group < len;) {
    size_t end = group + 1;
    // In launch order the whole stream is one group.
    while (end < len && (placement.order == BlockOrder::launch || one_stream[by_length[end]].us == one_stream[by_length[group]].us)) ++end;
    for (Count s = 0; s < shape_.streams; ++s) order.insert(order.end(), by_length.begin() + static_cast<std::ptrdiff_t>(group), by_length.begin() + static_cast<std::ptrdiff_t>(end));
    group = end;
  }
  const auto block_at = [&](size_t j) -> const Block& { return one_stream[j]; };
  KernelFeatures last;
  if (shares) {
    last = shared_sm_load(sms_, placement, order.size(), [&](size_t i) { return block_at(order[i]).us; },
                          [&](KernelFeatures& f, size_t i, double share) { add(f, block_at(order[i]), share); });
  } else {
    // Each block goes to the slot that frees first (ties: the lowest slot), as the block
    // scheduler hands a new block to whichever SM has room.
    TimeTournament free_at(slots, 0.0);
    std::vector<KernelFeatures> load(static_cast<size_t>(slots));
    std::vector<Microseconds> finish(static_cast<size_t>(slots), 0.0);
    for (const size_t i : order) {
      const Microseconds t = free_at.first_time();
      const size_t s = free_at.first_index();
      const Block& b = block_at(i);
      add(load[s], b, 1.0);
      finish[s] = t + b.us;
      free_at.set(s, t + b.us);
    }
    last = load[static_cast<size_t>(std::max_element(finish.begin(), finish.end()) - finish.begin())];
  }
  out.blocks = last.blocks;
  out.full_tiles = last.full_tiles;
  out.partial_tiles = last.partial_tiles;
  return out;
}

std::vector<Microseconds> KernelTimeModel::call_times(const model::Work& work, KernelPass pass) const {
  if (work.profiles.empty()) throw std::invalid_argument("KernelTimeModel::call_times: count the work with WorkDetail::query_tiles");
  const Count devices = work.query_tile_profile.devices();
  const Count rounds = work.query_tile_profile.rounds();
  const BackwardBlocks grid = pass == KernelPass::forward ? BackwardBlocks::query_tiles : profile_.backward_blocks;
  // A call's time follows from its query tile profile, its key tile profile, or (two sets of
  // backward blocks) both: each distinct one, or distinct pair, is placed once.
  struct Call {
    Count rows, columns;  // the profiles of the first (round, device) that makes it
  };
  std::vector<Call> calls;
  std::vector<size_t> call_at(static_cast<size_t>(rounds * devices));
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<size_t> by_profile(grid == BackwardBlocks::key_tiles_then_query_tiles ? 0 : work.profiles.size(), kNone);
  std::map<std::pair<Count, Count>, size_t> by_pair;
  for (Count r = 0; r < rounds; ++r) {
    for (Count d = 0; d < devices; ++d) {
      const Count rows = work.query_tile_profile.at(r, d);
      const Count columns = grid == BackwardBlocks::query_tiles ? -1 : work.key_tile_profile.at(r, d);
      size_t& at = grid == BackwardBlocks::key_tiles_then_query_tiles
                       ? by_pair.try_emplace({rows, columns}, kNone).first->second
                       : by_profile[static_cast<size_t>(grid == BackwardBlocks::query_tiles ? rows : columns)];
      if (at == kNone) {
        at = calls.size();
        calls.push_back({rows, columns});
      }
      call_at[static_cast<size_t>(r * devices + d)] = at;
    }
  }
  // Thousands of distinct calls (a large ring under packed documents) are placed on every core;
  // a handful (structured layouts) cost less than starting the threads.
  Count blocks = 0;
  for (const Call& call : calls) blocks += static_cast<Count>(work.profiles[static_cast<size_t>(call.rows)].size());
  constexpr Count kBlocksWorthThreads = Count{1} << 16;
  std::vector<Microseconds> call_us_of(calls.size());
  model::parallel_for(calls.size(), blocks * shape_.streams >= kBlocksWorthThreads ? 0 : 1, [&](size_t i) {
    const model::QueryTileProfile& rows = work.profiles[static_cast<size_t>(calls[i].rows)];
    call_us_of[i] = grid == BackwardBlocks::query_tiles
                        ? call_us(rows, pass)
                        : call_us(rows, work.profiles[static_cast<size_t>(calls[i].columns)], pass);
  });
  std::vector<Microseconds> out(static_cast<size_t>(rounds * devices));
  const double trimmed = costs(pass).trimmed_factor;
  for (Count r = 0; r < rounds; ++r) {
    for (Count d = 0; d < devices; ++d) {
      const auto at = static_cast<size_t>(r * devices + d);
      // Every feature scales by the factor, so the time does (features()).
      const bool slowed = work.trimmed_length.rounds() > 0 && slowed_by_trim(work.trimmed_length.at(r, d));
      out[at] = slowed ? call_us_of[call_at[at]] * trimmed : call_us_of[call_at[at]];
    }
  }
  return out;
}

}  // namespace stripesim::sim
