#pragma once
// What the work model knows about one device's block of positions: its runs, and a summary of
// every query tile and key tile cut from it (smallest and largest position, size). Tile
// activity for the causal mask needs only those summaries; other masks fall back to exact
// counts on the few tiles the summaries cannot decide.
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"

namespace stripesim::model::detail {

struct TileSummary {
  Position min = 0;
  Position max = 0;
  Count begin = 0;  // local index range [begin, end)
  Count end = 0;
  [[nodiscard]] Count size() const { return end - begin; }
};

class DeviceBlock {
 public:
  DeviceBlock(const Layout& layout, DeviceId device, Count query_tile, Count key_tile);
  // A block made of `runs` (local_begin counting from 0 without gaps), tiled from its first one.
  DeviceBlock(std::vector<Run> runs, Count query_tile, Count key_tile);

  [[nodiscard]] Count size() const { return size_; }
  [[nodiscard]] const std::vector<Run>& runs() const { return runs_; }
  [[nodiscard]] const std::vector<TileSummary>& query_tiles() const { return query_tiles_; }
  [[nodiscard]] const std::vector<TileSummary>& key_tiles() const { return key_tiles_; }
  // Key tiles' min and max positions, each sorted on its own (for counting by binary search).
  [[nodiscard]] const std::vector<Position>& key_min_sorted() const { return key_min_sorted_; }
  [[nodiscard]] const std::vector<Position>& key_max_sorted() const { return key_max_sorted_; }
  // Query tiles' min and max positions, each sorted on its own (a key tile's query tiles, counted
  // by binary search: the backward's view of the block).
  [[nodiscard]] const std::vector<Position>& query_min_sorted() const { return query_min_sorted_; }
  [[nodiscard]] const std::vector<Position>& query_max_sorted() const { return query_max_sorted_; }
  // True when key tiles' min and max never decrease with the tile index (every structured
  // layout), so the tiles a query tile may touch form one index range.
  [[nodiscard]] bool key_tiles_monotone() const { return key_tiles_monotone_; }
  // The same for query tiles: then one merge-like sweep counts a whole block pair.
  [[nodiscard]] bool query_tiles_monotone() const { return query_tiles_monotone_; }

  // True when local order is position order: the runs (and any slice of them) are disjoint and
  // sorted by their first and by their last position alike.
  [[nodiscard]] bool positions_increasing() const { return positions_increasing_; }

  // The runs restricted to local indices [begin, end), appended to `out`.
  void clip_runs(Count begin, Count end, std::vector<Run>& out) const;
  // Sorted positions of local indices [begin, end): the cached whole block when that is what is
  // asked and the block has many runs, else written to `out`.
  [[nodiscard]] std::span<const Position> sorted_positions(Count begin, Count end, std::vector<Position>& out) const;

 private:
  [[nodiscard]] std::vector<TileSummary> summarise_tiles(Count tile) const;

  Count size_;
  std::vector<Run> runs_;
  std::vector<TileSummary> query_tiles_;
  std::vector<TileSummary> key_tiles_;
  std::vector<Position> key_min_sorted_;
  std::vector<Position> key_max_sorted_;
  std::vector<Position> query_min_sorted_;
  std::vector<Position> query_max_sorted_;
  bool key_tiles_monotone_ = true;
  bool query_tiles_monotone_ = true;
  bool positions_increasing_ = true;  // local order is position order: slices need no sort
  // Every position, sorted; kept only for blocks with many runs (permutations), which the work
  // model merges against every other block.
  std::vector<Position> sorted_all_;
};

// One document's share of a device's block, as a varlen kernel sees it: the runs of the block
// inside document `document`, in local order, renumbered from local index 0.
struct DocumentShare {
  size_t document = 0;
  std::vector<Run> runs;
};
// Every document the runs touch, ordered by document index (the runs split at document starts).
[[nodiscard]] std::vector<DocumentShare> split_by_document(const std::vector<Run>& runs,
                                                           const std::vector<Position>& starts);

// Allowed pairs between local ranges of two blocks, choosing run pairs or a sorted merge by cost.
// `scratch` buffers are reused across calls to avoid allocation in the hot loop.
struct PairScratch {
  std::vector<Run> query_runs;
  std::vector<Run> key_runs;
  std::vector<Position> query_positions;
  std::vector<Position> key_positions;
  std::vector<std::pair<std::ptrdiff_t, std::ptrdiff_t>> reach;  // each query run's key runs [from, to)
};

[[nodiscard]] Count count_range_pairs(const DeviceBlock& queries, Count q_begin, Count q_end, const DeviceBlock& keys,
                                      Count k_begin, Count k_end, const Mask& mask, PairScratch& scratch);

}  // namespace stripesim::model::detail
