#include "device_block.hpp"

#include <algorithm>

#include "stripesim/model/work/pair_count.hpp"

namespace stripesim::model::detail {

namespace {

Count total_length(const std::vector<Run>& runs) {
  Count size = 0;
  for (const Run& run : runs) size += run.length;
  return size;
}

// The tiles' smallest and largest positions, each sorted on its own, into `mins` and `maxes`;
// true when both already grow with the tile index (then no sort was needed).
bool sorted_bounds(const std::vector<TileSummary>& tiles, std::vector<Position>& mins, std::vector<Position>& maxes) {
  mins.reserve(tiles.size());
  maxes.reserve(tiles.size());
  bool monotone = true;
  for (size_t t = 0; t < tiles.size(); ++t) {
    mins.push_back(tiles[t].min);
    maxes.push_back(tiles[t].max);
    if (t > 0 && (tiles[t].min < tiles[t - 1].min || tiles[t].max < tiles[t - 1].max)) monotone = false;
  }
  if (!monotone) {
    std::sort(mins.begin(), mins.end());
    std::sort(maxes.begin(), maxes.end());
  }
  return monotone;
}

}  // namespace

DeviceBlock::DeviceBlock(const Layout& layout, DeviceId device, Count query_tile, Count key_tile)
    : DeviceBlock(layout.runs(device), query_tile, key_tile) {}

DeviceBlock::DeviceBlock(std::vector<Run> runs, Count query_tile, Count key_tile)
    : size_(total_length(runs)), runs_(std::move(runs)) {
  query_tiles_ = summarise_tiles(query_tile);
  query_tiles_monotone_ = sorted_bounds(query_tiles_, query_min_sorted_, query_max_sorted_);
  key_tiles_ = summarise_tiles(key_tile);
  key_tiles_monotone_ = sorted_bounds(key_tiles_, key_min_sorted_, key_max_sorted_);
  for (size_t r = 1; r < runs_.size(); ++r) {
    if (runs_[r].first <= runs_[r - 1].last()) positions_increasing_ = false;
  }
  constexpr size_t kManyRuns = 64;
  if (runs_.size() > kManyRuns) {
    std::vector<Position> all;
    (void)sorted_positions(0, size_, all);  // sorted_all_ is still empty, so this fills `all`
    sorted_all_ = std::move(all);
  }
}

std::vector<TileSummary> DeviceBlock::summarise_tiles(Count tile) const {
  std::vector<TileSummary> tiles;
  tiles.reserve(static_cast<size_t>((size_ + tile - 1) / tile));
  size_t run = 0;
  for (Count begin = 0; begin < size_; begin += tile) {
    const Count end = std::min(size_, begin + tile);
    TileSummary summary{kMaxSeqLen, -1, begin, end};
    while (runs_[run].local_begin + runs_[run].length <= begin) ++run;
    for (size_t r = run; r < runs_.size() && runs_[r].local_begin < end; ++r) {
      const Run& full = runs_[r];
      const Count from = std::max(begin, full.local_begin) - full.local_begin;
      const Count to = std::min(end, full.local_begin + full.length) - full.local_begin;
      summary.min = std::min(summary.min, full.at(from));  // stride > 0: a run slice's first is its min
      summary.max = std::max(summary.max, full.at(to - 1));
    }
    tiles.push_back(summary);
  }
  return tiles;
}

std::vector<DocumentShare> split_by_document(const std::vector<Run>& runs, const std::vector<Position>& starts) {
  std::vector<DocumentShare> shares;  // in order of first appearance, sorted at the end
  std::vector<size_t> share_of(starts.size(), starts.size());
  for (const Run& run : runs) {
    Count i = 0;
    while (i < run.length) {
      const Position p = run.at(i);
      const auto doc = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), p) - starts.begin() - 1);
      // Elements of the run before the document's end: first + j * stride < starts[doc + 1].
      const Count end = std::min(run.length, (starts[doc + 1] - run.first + run.stride - 1) / run.stride);
      if (share_of[doc] == starts.size()) {
        share_of[doc] = shares.size();
        shares.push_back({doc, {}});
      }
      auto& mine = shares[share_of[doc]].runs;
      const Count local = mine.empty() ? 0 : mine.back().local_begin + mine.back().length;
      mine.push_back(Run{p, run.stride, end - i, local});
      i = end;
    }
  }
  std::sort(shares.begin(), shares.end(), [](const DocumentShare& x, const DocumentShare& y) { return x.document < y.document; });
  return shares;
}

void DeviceBlock::clip_runs(Count begin, Count end, std::vector<Run>& out) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), begin,
                             [](Count local, const Run& run) { return local < run.local_begin; });
  for (--it; it != runs_.end() && it->local_begin < end; ++it) {
    const Count from = std::max(begin, it->local_begin);
    const Count to = std::min(end, it->local_begin + it->length);
    out.push_back(Run{it->at(from - it->local_begin), it->stride, to - from, from});
  }
}

std::span<const Position> DeviceBlock::sorted_positions(Count begin, Count end, std::vector<Position>& out) const {
  if (begin == 0 && end == size_ && !sorted_all_.empty()) return sorted_all_;
  if (positions_increasing_ && !sorted_all_.empty()) {
    return std::span<const Position>(sorted_all_).subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  }
  std::vector<Run> clipped;
  clip_runs(begin, end, clipped);
  out.clear();
  out.reserve(static_cast<size_t>(end - begin));
  for (const Run& run : clipped) {
    for (Count i = 0; i < run.length; ++i) out.push_back(run.at(i));
  }
  if (!positions_increasing_) std::sort(out.begin(), out.end());
  return out;
}

Count count_range_pairs(const DeviceBlock& queries, Count q_begin, Count q_end, const DeviceBlock& keys,
                        Count k_begin, Count k_end, const Mask& mask, PairScratch& scratch) {
  // Whole blocks use their runs as they are; tiles clip them.
  const auto runs_of = [](const DeviceBlock& block, Count begin, Count end, std::vector<Run>& buffer) -> const std::vector<Run>& {
    if (begin == 0 && end == block.size()) return block.runs();
    buffer.clear();
    block.clip_runs(begin, end, buffer);
    return buffer;
  };
  const std::vector<Run>& query_runs = runs_of(queries, q_begin, q_end, scratch.query_runs);
  const std::vector<Run>& key_runs = runs_of(keys, k_begin, k_end, scratch.key_runs);
  // A run pair costs a floor_sum (tens of operations); a merge about two per position.
  constexpr Count kRunPairCost = 16;
  const Count merge_cost = 2 * ((q_end - q_begin) + (k_end - k_begin));
  const auto key_count = static_cast<std::ptrdiff_t>(key_runs.size());
  // Query run i against the key runs [reach(i).first, reach(i).second).
  const auto sum_run_pairs = [&](const auto& reach) {
    Count pairs = 0;
    for (size_t i = 0; i < query_runs.size(); ++i) {
      const auto [from, to] = reach(i);
      for (auto k = from; k < to; ++k) pairs += count_run_pairs(query_runs[i], key_runs[static_cast<size_t>(k)], mask);
    }
    return pairs;
  };
  const auto run_pairs = static_cast<Count>(query_runs.size()) * key_count;
  if (run_pairs * kRunPairCost <= merge_cost) {
    return sum_run_pairs([&](size_t) { return std::pair<std::ptrdiff_t, std::ptrdiff_t>{0, key_count}; });
  }
  if (keys.positions_increasing()) {
    // A query run's keys lie in [lowest_key(first), highest_key(last)] (both ends never decrease
    // with q, mask.hpp): with the key runs in position order, the runs that reach that interval are
    // one index range, and every other pair holds nothing. Packed documents split into pieces
    // (doc-zigzag's 2N a document) meet a handful of pieces per query run, not every run. With
    // the query runs in position order too, both ends of the range only move forward (a sweep).
    const bool sweep = queries.positions_increasing();
    LowestKeyWalk lowest_key(mask);
    std::ptrdiff_t below = 0, reached = 0;  // the sweep's ends
    Count reachable = 0;
    scratch.reach.clear();
    for (const Run& q : query_runs) {
      const Position lo = sweep ? lowest_key(q.first) : mask.lowest_key(q.first);
      const Position hi = mask.highest_key(q.last());
      const auto below_lo = [&](const Run& k) { return k.last() < lo; };
      const auto up_to_hi = [&](const Run& k) { return k.first <= hi; };
      if (sweep) {
        while (below < key_count && below_lo(key_runs[static_cast<size_t>(below)])) ++below;
        while (reached < key_count && up_to_hi(key_runs[static_cast<size_t>(reached)])) ++reached;
      } else {
        below = std::ranges::partition_point(key_runs, below_lo) - key_runs.begin();
        reached = std::ranges::partition_point(key_runs, up_to_hi) - key_runs.begin();
      }
      const auto to = std::max(below, reached);
      scratch.reach.push_back({below, to});
      reachable += to - below;
    }
    if (reachable * kRunPairCost <= merge_cost) return sum_run_pairs([&](size_t i) { return scratch.reach[i]; });
  }
  return count_sorted_pairs(queries.sorted_positions(q_begin, q_end, scratch.query_positions),
                            keys.sorted_positions(k_begin, k_end, scratch.key_positions), mask);
}

}  // namespace stripesim::model::detail
