#include "stripesim/model/work/work_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "block_pair_memo.hpp"
#include "device_block.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/parallel_for.hpp"

namespace stripesim::model {
namespace {

using detail::DeviceBlock;
using detail::PairOutcome;
using detail::PairScratch;
using detail::ProfileHash;
using detail::TileSummary;

struct TileCounts {
  Count active = 0;
  Count partial = 0;
};

Count count_at_or_below(const std::vector<Position>& sorted, Position x) {
  return std::upper_bound(sorted.begin(), sorted.end(), x) - sorted.begin();
}

// Causal: a tile is active iff its smallest key <= its largest query, and fully allowed iff its
// largest key <= its smallest query. Both are exact, whatever the layout. `columns`, when given,
// is the keys' side of the same tiles: each key tile's full and partial query tiles, added to.
TileCounts count_causal_tiles(const DeviceBlock& queries, const DeviceBlock& keys, QueryTileProfile* rows,
                              QueryTileLoad* columns) {
  TileCounts counts;
  const auto& key_min = keys.key_min_sorted();
  const auto& key_max = keys.key_max_sorted();
  if (columns) {
    // A key tile's query tiles: those whose largest query reaches its smallest key (active), and
    // those whose smallest query reaches its largest key (full).
    const auto& query_max = queries.query_max_sorted();
    const auto& query_min = queries.query_min_sorted();
    const auto query_tiles = static_cast<Count>(query_max.size());
    const auto& key_tiles = keys.key_tiles();
    for (size_t k = 0; k < key_tiles.size(); ++k) {
      const Count active = query_tiles - (std::lower_bound(query_max.begin(), query_max.end(), key_tiles[k].min) - query_max.begin());
      const Count full = query_tiles - (std::lower_bound(query_min.begin(), query_min.end(), key_tiles[k].max) - query_min.begin());
      columns[k].full += full;
      columns[k].partial += active - full;
    }
  }
  if (queries.query_tiles_monotone()) {
    // Query tiles' bounds only grow: both counts are pointers that only move forward.
    size_t active = 0;
    size_t full = 0;
    for (const TileSummary& qt : queries.query_tiles()) {
      while (active < key_min.size() && key_min[active] <= qt.max) ++active;
      while (full < key_max.size() && key_max[full] <= qt.min) ++full;
      counts.active += static_cast<Count>(active);
      counts.partial += static_cast<Count>(active - full);
      if (rows) rows->push_back({static_cast<Count>(full), static_cast<Count>(active - full)});
    }
    return counts;
  }
  for (const TileSummary& qt : queries.query_tiles()) {
    const Count active = count_at_or_below(keys.key_min_sorted(), qt.max);
    const Count full = count_at_or_below(keys.key_max_sorted(), qt.min);
    counts.active += active;
    counts.partial += active - full;
    if (rows) rows->push_back({full, active - full});
  }
  return counts;
}

// Window, prefix and documents masks: bounds from the tile summaries decide most tiles (surely empty,
// surely fully allowed); the rest are counted exactly, because a sparse tile (striped, say) can
// fall between the window's edges without holding a single allowed pair.
class IntervalTileCounter {
 public:
  IntervalTileCounter(const DeviceBlock& queries, const DeviceBlock& keys, const Mask& mask, PairScratch& scratch)
      : queries_(queries), keys_(keys), mask_(mask), scratch_(scratch) {}

  // `columns`, when given, receives each key tile's full and partial query tiles (added to).
  TileCounts count(QueryTileProfile* rows, QueryTileLoad* columns) {
    const auto& key_tiles = keys_.key_tiles();
    columns_ = columns;
    // Full key tiles come as index ranges: a difference array, summed once at the end.
    if (columns_) full_starts_.assign(key_tiles.size() + 1, 0);
    // Query tiles whose bounds never decrease give key intervals whose ends never decrease either
    // (mask.hpp): each end of the candidate and full ranges then only moves forward.
    if (queries_.query_tiles_monotone()) sweep_.emplace(mask_);
    for (const TileSummary& qt : queries_.query_tiles()) {
      const Count active_before = counts_.active;
      const Count partial_before = counts_.partial;
      count_query_tile(qt, key_tiles);
      const Count active = counts_.active - active_before;
      const Count partial = counts_.partial - partial_before;
      if (rows) rows->push_back({active - partial, partial});
    }
    if (columns_) {
      Count running = 0;
      for (size_t k = 0; k < key_tiles.size(); ++k) columns_[k].full += running += full_starts_[k];
    }
    return counts_;
  }

 private:
  void count_query_tile(const TileSummary& qt, const std::vector<TileSummary>& key_tiles) {
    const Bounds b = bounds(qt);
    if (keys_.key_tiles_monotone()) {
      // Candidates: kmax >= lo_min and kmin <= hi_max, an index range; fully allowed: kmin >=
      // lo_max and kmax <= hi_min, a sub-range of the candidates. Each end is where a predicate
      // that holds for a prefix of the key tiles stops holding.
      const auto ends_too_early = [&](const TileSummary& kt) { return kt.max < b.lo_min; };
      const auto starts_in_time = [&](const TileSummary& kt) { return kt.min <= b.hi_max; };
      const auto starts_before_full = [&](const TileSummary& kt) { return kt.min < b.lo_max; };
      const auto ends_within_full = [&](const TileSummary& kt) { return kt.max <= b.hi_min; };
      const auto end_of = [&](size_t Sweep::*end, const auto& holds) {
        if (!sweep_) return std::ranges::partition_point(key_tiles, holds);
        size_t& at = (*sweep_).*end;
        while (at < key_tiles.size() && holds(key_tiles[at])) ++at;
        return key_tiles.begin() + static_cast<std::ptrdiff_t>(at);
      };
      const auto first = end_of(&Sweep::first, ends_too_early);
      const auto last = end_of(&Sweep::last, starts_in_time);
      if (first >= last) return;  // a sweep's full ends catch up at the next tile: they only grow
      auto full_first = end_of(&Sweep::full_first, starts_before_full);
      auto full_last = end_of(&Sweep::full_last, ends_within_full);
      full_first = std::clamp(full_first, first, last);
      full_last = std::clamp(full_last, full_first, last);
      counts_.active += full_last - full_first;
      if (columns_) {
        ++full_starts_[static_cast<size_t>(full_first - key_tiles.begin())];
        --full_starts_[static_cast<size_t>(full_last - key_tiles.begin())];
      }
      for (auto kt = first; kt != full_first; ++kt) count_exactly(qt, *kt, static_cast<size_t>(kt - key_tiles.begin()), b);
      for (auto kt = full_last; kt != last; ++kt) count_exactly(qt, *kt, static_cast<size_t>(kt - key_tiles.begin()), b);
    } else {
      for (size_t k = 0; k < key_tiles.size(); ++k) {
        const TileSummary& kt = key_tiles[k];
        if (kt.max < b.lo_min || kt.min > b.hi_max) continue;
        if (kt.min >= b.lo_max && kt.max <= b.hi_min) {
          ++counts_.active;
          if (columns_) ++columns_[k].full;
        } else {
          count_exactly(qt, kt, k, b);
        }
      }
    }
  }

  struct Bounds {
    Position lo_min, lo_max, hi_min, hi_max;  // key interval ends at the tile's smallest/largest query
  };
  // A sweep over monotone query tiles: where the last tile's candidate and full key-tile ranges
  // ended, and the lowest keys at the tiles' smallest and at their largest queries.
  struct Sweep {
    explicit Sweep(const Mask& mask) : lowest_at_min(mask), lowest_at_max(mask) {}
    size_t first = 0, last = 0, full_first = 0, full_last = 0;
    LowestKeyWalk lowest_at_min, lowest_at_max;
  };

  [[nodiscard]] Bounds bounds(const TileSummary& qt) {
    if (sweep_) {
      return {sweep_->lowest_at_min(qt.min), sweep_->lowest_at_max(qt.max), mask_.highest_key(qt.min), mask_.highest_key(qt.max)};
    }
    return {mask_.lowest_key(qt.min), mask_.lowest_key(qt.max), mask_.highest_key(qt.min), mask_.highest_key(qt.max)};
  }

  // Key tile `k` of the keys (`kt`) against query tile `qt` (whose key intervals `b` are): its
  // corners first, pair by pair only when they agree. Each corner is a real (query, key) pair of
  // the two tiles, so one allowed corner makes the tile active and one masked corner partial.
  void count_exactly(const TileSummary& qt, const TileSummary& kt, size_t k, const Bounds& b) {
    const auto seen_by_first = [&](Position key) { return b.lo_min <= key && key <= b.hi_min; };
    const auto seen_by_last = [&](Position key) { return b.lo_max <= key && key <= b.hi_max; };
    const int allowed_corners = seen_by_first(kt.min) + seen_by_first(kt.max) + seen_by_last(kt.min) + seen_by_last(kt.max);
    bool partial = true;
    if (allowed_corners == 0 || allowed_corners == 4) {
      const Count pairs = detail::count_range_pairs(queries_, qt.begin, qt.end, keys_, kt.begin, kt.end, mask_, scratch_);
      if (pairs == 0) return;
      partial = pairs < qt.size() * kt.size();
    }
    ++counts_.active;
    if (partial) ++counts_.partial;
    if (columns_) ++(partial ? columns_[k].partial : columns_[k].full);
  }

  const DeviceBlock& queries_;
  const DeviceBlock& keys_;
  const Mask& mask_;
  PairScratch& scratch_;
  TileCounts counts_;
  QueryTileLoad* columns_ = nullptr;
  std::vector<Count> full_starts_;
  std::optional<Sweep> sweep_;  // set when the query tiles are monotone
};

// `rows`, when given, receives each query tile's full and partial key tiles in local order;
// `columns`, when given, points at the keys' key tiles (in local order) and has each one's full
// and partial query tiles added to it.
TileCounts count_tiles(const DeviceBlock& queries, const DeviceBlock& keys, const Mask& mask, PairScratch& scratch,
                       QueryTileProfile* rows, QueryTileLoad* columns) {
  switch (mask.kind()) {
    case MaskKind::bidirectional: {
      const auto key_tiles = static_cast<Count>(keys.key_tiles().size());
      const auto query_tiles = static_cast<Count>(queries.query_tiles().size());
      if (rows) rows->assign(static_cast<size_t>(query_tiles), QueryTileLoad{key_tiles, 0});
      if (columns) std::for_each(columns, columns + key_tiles, [&](QueryTileLoad& load) { load.full += query_tiles; });
      return {query_tiles * key_tiles, 0};
    }
    case MaskKind::causal: return count_causal_tiles(queries, keys, rows, columns);
    case MaskKind::window:
    case MaskKind::prefix:
    case MaskKind::documents: return IntervalTileCounter(queries, keys, mask, scratch).count(rows, columns);
  }
  return {};
}

// A document's local runs without its padding (V+P: the positions from padding_start on), their
// local indices renumbered: a varlen kernel given the actual and the padded lengths apart
// (TransformerEngine's THD with cu_seqlens and cu_seqlens_padded) tiles the actual tokens only,
// so a tile reaching into the padding is a short full tile there, not a masked one. Runs ascend
// (positive strides), so the padding is each run's tail.
std::vector<Run> without_padding(std::vector<Run> runs, Position padding_start) {
  std::vector<Run> kept;
  Count local = 0;
  for (Run run : runs) {
    const Count before = run.first >= padding_start ? 0 : (padding_start - run.first + run.stride - 1) / run.stride;
    run.length = std::min(run.length, before);
    if (run.length == 0) continue;
    run.local_begin = local;
    local += run.length;
    kept.push_back(run);
  }
  return kept;
}

// A documents mask under varlen tiling: each document's local queries against the same document's
// local keys, tiled on their own (no tile mixes documents), summed over the documents both hold.
class VarlenTileCounter {
 public:
  VarlenTileCounter(const Layout& layout, const Mask& mask, TileShape tile, Count devices) {
    shares_.resize(static_cast<size_t>(devices));
    key_tiles_.resize(static_cast<size_t>(devices), 0);
    query_tiles_.resize(static_cast<size_t>(devices), 0);
    for (Count d = 0; d < devices; ++d) {
      size_t& key_tiles = key_tiles_[static_cast<size_t>(d)];
      for (auto& share : detail::split_by_document(layout.runs(d), mask.document_starts())) {
        if (mask.document_padding()[share.document] > 0) {
          share.runs = without_padding(std::move(share.runs), mask.padding_start(share.document));
          if (share.runs.empty()) continue;  // all padding here: the kernel gets no token of it
        }
        DeviceBlock block(std::move(share.runs), tile.query, tile.key);
        const size_t first_key_tile = key_tiles;
        key_tiles += block.key_tiles().size();
        query_tiles_[static_cast<size_t>(d)] += block.query_tiles().size();
        shares_[static_cast<size_t>(d)].push_back({share.document, std::move(block), first_key_tile});
      }
    }
  }

  // `columns`: the key device's key tiles, every document's in turn, as count_tiles fills them.
  TileCounts count(DeviceId query_device, DeviceId key_device, const Mask& mask, PairScratch& scratch,
                   QueryTileProfile* rows, QueryTileProfile* columns) const {
    const auto& queries = shares_[static_cast<size_t>(query_device)];
    const auto& keys = shares_[static_cast<size_t>(key_device)];
    if (columns) columns->assign(key_tiles_[static_cast<size_t>(key_device)], QueryTileLoad{});
    TileCounts counts;
    auto key = keys.begin();
    for (const Share& query : queries) {  // both ordered by document: a merge
      while (key != keys.end() && key->document < query.document) ++key;
      if (key == keys.end() || key->document != query.document) {
        if (rows) rows->insert(rows->end(), query.block.query_tiles().size(), QueryTileLoad{});
        continue;
      }
      QueryTileLoad* share_columns = columns ? columns->data() + key->first_key_tile : nullptr;
      // Inside one document without padding, a window no shorter than it cuts nothing: the mask
      // is causal there, counted by the causal sweep (a striped ring meets every document on
      // every pair of devices).
      const TileCounts mine = mask.causal_inside(query.document)
                                  ? count_causal_tiles(query.block, key->block, rows, share_columns)
                                  : count_tiles(query.block, key->block, mask, scratch, rows, share_columns);
      counts.active += mine.active;
      counts.partial += mine.partial;
    }
    return counts;
  }

  // A device's query tiles and key tiles, every document's together: the rows and columns that
  // count() fills for it.
  [[nodiscard]] size_t query_tiles(DeviceId device) const { return query_tiles_[static_cast<size_t>(device)]; }
  [[nodiscard]] size_t key_tiles(DeviceId device) const { return key_tiles_[static_cast<size_t>(device)]; }

 private:
  struct Share {
    size_t document;
    DeviceBlock block;
    size_t first_key_tile;  // where its key tiles start among the device's
  };
  std::vector<std::vector<Share>> shares_;
  std::vector<size_t> key_tiles_;    // per device: its key tiles, every document's together
  std::vector<size_t> query_tiles_;  // and its query tiles
};

// Under a causal mask with fixed tiles, whether every (query, key) pair of two blocks is allowed
// (true: the latest key is no later than the earliest query) or none is (false: the earliest key
// comes after the latest query); empty when it is neither, or another mask or tiling.
std::optional<bool> causal_block_pair(const DeviceBlock& queries, const DeviceBlock& keys, const Mask& mask, bool varlen) {
  if (!mask.is_causal() || varlen || queries.size() == 0 || keys.size() == 0) return std::nullopt;
  // Every block lists its positions' tile bounds sorted: the block's first and last position.
  const Position query_first = queries.key_min_sorted().front();
  const Position query_last = queries.key_max_sorted().back();
  if (keys.key_max_sorted().back() <= query_first) return true;
  if (keys.key_min_sorted().front() > query_last) return false;
  return std::nullopt;
}

// Floor division for a positive divisor.
Position floor_div(Position a, Position b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// A device's positions as one progression, when they are one (contiguous, striped).
std::optional<Run> single_run(const Layout& layout, DeviceId device) {
  std::vector<Run> runs = layout.runs(device);
  if (runs.size() != 1) return std::nullopt;
  return runs.front();
}

// When both blocks are progressions of one stride S and length L, query i sees key j under a
// causal mask iff first_k + j S <= first_q + i S, i.e. iff j <= i + offset with
// offset = floor((first_q - first_k) / S). An offset in (-L, 0) is a causal block whose diagonal
// is masked: kernels whose causal mask keeps it run q[-offset:] x k[:L + offset], a call of
// L + offset. 0: the block runs as it is (empty, full, causal on the diagonal, other layouts).
Count trimmed_call_length(const std::optional<Run>& queries, const std::optional<Run>& keys) {
  if (!queries || !keys || queries->stride != keys->stride || queries->length != keys->length) return 0;
  const Position offset = floor_div(queries->first - keys->first, queries->stride);
  return offset < 0 && offset > -queries->length ? queries->length + offset : 0;
}

// Whether a kernel whose causal mask keeps the diagonal runs the calls under this mask with it, so
// that a block whose diagonal is masked is trimmed: a mask allowing causal's pairs, a window
// (FlashAttention's and cuDNN's windows are bands on the same diagonal), and a prefix (no such
// kernel takes one: the ring runs unmasked calls inside it and causal ones after it, priced as one
// call of the block's tiles). Not several documents: several sequences in one call, each with its
// own diagonal. One document without padding is one sequence, its window (if any) a band on the
// diagonal: window:W's calls (documents:64k:window=2k at 64k tokens is window:2k, and was priced
// apart).
bool calls_run_causal(const Mask& mask) {
  const bool one_sequence =
      mask.kind() == MaskKind::documents && mask.document_lengths().size() == 1 && mask.document_padding().front() == 0;
  return mask.is_causal() || one_sequence || mask.kind() == MaskKind::window || mask.kind() == MaskKind::prefix;
}

// A local span [begin, end) of a block's runs, and the allowed pairs its runs hold.
struct RunSpan {
  Count begin = 0;
  Count end = 0;
  Count pairs = 0;
};

// The span of `block`'s runs that have an allowed pair with all of `other` (queries against keys
// when `block_is_queries`, else keys against queries): from the first such run to the last, and
// the pairs of every run (the pair's whole count: the runs cut the block). {0, 0, 0} when none has.
RunSpan span_with_work(const DeviceBlock& block, const DeviceBlock& other, bool block_is_queries, const Mask& mask,
                       PairScratch& scratch) {
  RunSpan span;
  for (const Run& run : block.runs()) {
    const Count from = run.local_begin, to = run.local_begin + run.length;
    const Count pairs = block_is_queries ? detail::count_range_pairs(block, from, to, other, 0, other.size(), mask, scratch)
                                         : detail::count_range_pairs(other, 0, other.size(), block, from, to, mask, scratch);
    if (pairs == 0) continue;
    if (span.pairs == 0) span.begin = from;
    span.end = to;
    span.pairs += pairs;
  }
  return span;
}

// `block`'s local range [begin, end) as a block of its own, tiled from `begin`.
DeviceBlock slice_block(const DeviceBlock& block, Count begin, Count end, TileShape tile) {
  std::vector<Run> runs;
  block.clip_runs(begin, end, runs);
  for (Run& run : runs) run.local_begin -= begin;
  return DeviceBlock(std::move(runs), tile.query, tile.key);
}

// One (round, device)'s work: `varlen`, when given, tiles each document on its own; `slicing`
// runs says the call holds only the runs with work (tile_shape.hpp).
void count_pair(const DeviceBlock& queries, const DeviceBlock& keys, const Mask& mask, const VarlenTileCounter* varlen,
                CallSlicing slicing, TileShape tile, DeviceId query_device, DeviceId key_device, PairScratch& scratch,
                bool profiles, PairOutcome& out) {
  out.rows.clear();
  out.columns.clear();
  out.call_queries = 0;
  QueryTileProfile* row_sink = profiles ? &out.rows : nullptr;
  TileCounts tiles;
  if (const auto whole = causal_block_pair(queries, keys, mask, varlen != nullptr)) {
    // Every pair allowed, or none (contiguous blocks, most of a ring): no need to look inside.
    const auto query_tiles = static_cast<Count>(queries.query_tiles().size());
    const auto key_tiles = static_cast<Count>(keys.key_tiles().size());
    out.elements = *whole ? queries.size() * keys.size() : 0;
    tiles = {*whole ? query_tiles * key_tiles : 0, 0};
    if (profiles) {
      out.rows.assign(static_cast<size_t>(query_tiles), QueryTileLoad{*whole ? key_tiles : 0, 0});
      out.columns.assign(static_cast<size_t>(key_tiles), QueryTileLoad{*whole ? query_tiles : 0, 0});
    }
  } else {
    const bool sliceable = slicing == CallSlicing::runs && !varlen && (queries.runs().size() > 1 || keys.runs().size() > 1) &&
                           queries.runs().size() <= kMaxSlicedRuns && keys.runs().size() <= kMaxSlicedRuns;
    // Sliceable, the query runs' spans count the pairs on the way.
    const RunSpan query_span =
        sliceable ? span_with_work(queries, keys, true, mask, scratch)
                  : RunSpan{0, queries.size(), detail::count_range_pairs(queries, 0, queries.size(), keys, 0, keys.size(), mask, scratch)};
    out.elements = query_span.pairs;
    // A pair with no work keeps its blocks whole (no call is made of it).
    const bool sliced = sliceable && out.elements > 0;
    const RunSpan key_span = sliced ? span_with_work(keys, queries, false, mask, scratch) : RunSpan{0, keys.size(), out.elements};
    if (out.elements == 0) {
      // No allowed pair, no active tile (packed documents: most pairs of a large ring): every
      // query tile's row and key tile's column empty, without looking at a tile.
      tiles = {0, 0};
      if (profiles) {
        out.rows.assign(varlen ? varlen->query_tiles(query_device) : queries.query_tiles().size(), QueryTileLoad{});
        out.columns.assign(varlen ? varlen->key_tiles(key_device) : keys.key_tiles().size(), QueryTileLoad{});
      }
    } else if (varlen) {
      tiles = varlen->count(query_device, key_device, mask, scratch, row_sink, profiles ? &out.columns : nullptr);
    } else {
      // The call's blocks: the sliced spans where they are not the whole blocks.
      std::optional<DeviceBlock> sliced_queries, sliced_keys;
      if (sliced && (query_span.begin > 0 || query_span.end < queries.size())) {
        sliced_queries.emplace(slice_block(queries, query_span.begin, query_span.end, tile));
        out.call_queries = query_span.end - query_span.begin;
      }
      if (sliced && (key_span.begin > 0 || key_span.end < keys.size())) {
        sliced_keys.emplace(slice_block(keys, key_span.begin, key_span.end, tile));
      }
      const DeviceBlock& call_queries = sliced_queries ? *sliced_queries : queries;
      const DeviceBlock& call_keys = sliced_keys ? *sliced_keys : keys;
      if (profiles) out.columns.assign(call_keys.key_tiles().size(), QueryTileLoad{});
      tiles = count_tiles(call_queries, call_keys, mask, scratch, row_sink, profiles ? out.columns.data() : nullptr);
    }
  }
  out.active = tiles.active;
  out.partial = tiles.partial;
}

// One device column's distinct profiles (query and key tiles alike), in the order first seen:
// the column numbers its rounds' profiles on its own (the matrices hold those numbers until every
// column is counted, then the numbers of the whole Work).
struct ColumnProfiles {
  std::vector<QueryTileProfile> distinct;
  Count last_index = 0, last_key_index = 0;  // the round before's, in `distinct`
};

// Profiles numbered by content in the order they come, each held once, in `held`: the set holds
// the numbers, keeps each one's hash beside it and compares through `held`, so a profile is
// looked up as it is (C++20's heterogeneous lookup), not copied into a key, and hashed once. A
// thousand devices' columns of packed documents are a million profiles.
class ProfileNumbering {
 public:
  explicit ProfileNumbering(std::vector<QueryTileProfile>& held)
      : held_(held), numbers_(0, Hash{&hashes_}, Equal{&held}) {}
  // The set's hash points at hashes_, a member: the numbering stays where it was made.
  ProfileNumbering(const ProfileNumbering&) = delete;
  ProfileNumbering& operator=(const ProfileNumbering&) = delete;

  // The number of `profile`, copied (or moved) to the end of `held` when new. Hashed once: the
  // set takes a held profile's hash from `hashes_`.
  template <typename Profile>
  Count number(Profile&& profile) {
    const Lookup lookup{&profile, ProfileHash{}(profile)};
    if (const auto it = numbers_.find(lookup); it != numbers_.end()) return *it;
    held_.push_back(std::forward<Profile>(profile));
    hashes_.resize(held_.size());  // others may add to `held` (a column's memo profiles): never looked up here
    hashes_.back() = lookup.hash;
    const auto added = static_cast<Count>(held_.size() - 1);
    numbers_.insert(added);
    return added;
  }

 private:
  struct Lookup {
    const QueryTileProfile* profile;
    size_t hash;
  };
  struct Hash {
    using is_transparent = void;
    const std::vector<size_t>* hashes;
    size_t operator()(const Lookup& l) const { return l.hash; }
    size_t operator()(Count i) const { return (*hashes)[static_cast<size_t>(i)]; }
  };
  struct Equal {
    using is_transparent = void;
    const std::vector<QueryTileProfile>* held;
    const QueryTileProfile& of(const Lookup& l) const { return *l.profile; }
    const QueryTileProfile& of(Count i) const { return (*held)[static_cast<size_t>(i)]; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return of(a) == of(b); }
  };
  std::vector<QueryTileProfile>& held_;
  std::vector<size_t> hashes_;  // hashes_[i]: the hash of held_[i], where this numbering added it
  std::unordered_set<Count, Hash, Equal> numbers_;
};

// The number of a memo's profile among `column`'s, added when new: the memo holds one address per
// distinct profile, so numbering by address is numbering by content.
Count number_memo_profile(ColumnProfiles& column, const QueryTileProfile& profile,
                          std::unordered_map<const QueryTileProfile*, Count>& numbered) {
  const auto [it, added] = numbered.try_emplace(&profile, static_cast<Count>(column.distinct.size()));
  if (added) column.distinct.push_back(profile);
  return it->second;
}

}  // namespace

// Any other mask is one document: varlen tiles it as fixed does.
bool tiling_matters(Tiling tiling, MaskKind mask) { return tiling == Tiling::varlen && mask == MaskKind::documents; }

Work count_work(const Layout& layout, const Mask& mask, TileShape tile, unsigned threads, WorkDetail detail,
                Tiling tiling, CallSlicing slicing) {
  if (mask.seq_len() != layout.seq_len()) throw std::invalid_argument("count_work: mask and layout disagree on n");
  if (tile.query < 1 || tile.key < 1) throw std::invalid_argument("count_work: tile sides must be positive");
  const Count devices = layout.devices();
  // Each tile of a device's queries and keys is summarised (about 120 bytes with the per-tile
  // profiles): past 2^26 tiles a side (8 GB) a machine runs out of memory before the counts
  // finish, so the sizes are refused up front, not by the kernel's OOM killer.
  constexpr Count kMaxTilesASide = Count{1} << 26;
  const Count smaller_side = std::min(tile.query, tile.key);
  const Count tiles = devices * tiles_covering(layout.seq_len() / devices, smaller_side);
  if (tiles > kMaxTilesASide) {
    throw InputError(Input::tile, tile.to_string(),
                     fmt::format("{} tokens make {} tiles of {} a side, more than the {} (2^26, about 8 GB of counts) stripesim "
                                 "holds; give a larger tile",
                                 layout.seq_len(), tiles, smaller_side, kMaxTilesASide));
  }

  std::vector<std::optional<DeviceBlock>> blocks(static_cast<size_t>(devices));
  parallel_for(static_cast<size_t>(devices), threads, [&](size_t d) { blocks[d].emplace(layout, static_cast<Count>(d), tile.query, tile.key); });
  std::optional<VarlenTileCounter> varlen;
  if (tiling_matters(tiling, mask.kind())) varlen.emplace(layout, mask, tile, devices);

  const bool profiles = detail != WorkDetail::totals;
  const bool pair_totals = detail != WorkDetail::calls;
  Work work;
  work.active_tiles = WorkMatrix(devices, devices);
  if (pair_totals) {
    work.unmasked_elements = WorkMatrix(devices, devices);
    work.partial_tiles = WorkMatrix(devices, devices);
  }
  if (profiles) {
    work.call_queries = WorkMatrix(devices, devices);
    work.query_tile_profile = WorkMatrix(devices, devices);
    work.key_tile_profile = WorkMatrix(devices, devices);
  }
  std::vector<ColumnProfiles> columns(profiles ? static_cast<size_t>(devices) : 0);
  detail::BlockPairMemo memo(layout, mask, varlen.has_value());
  // Each device's column is written by one thread only, so the result never depends on threads.
  // What a thread keeps across the columns it counts.
  struct Worker {
    PairScratch scratch;
    PairOutcome counted;  // the pairs the memo does not hold
    detail::BlockPairMemo::ThreadCache met;
    detail::BlockPairMemo::Key key;
  };
  const auto make_worker = [] { return Worker{}; };
  parallel_for_each_with(static_cast<size_t>(devices), threads, make_worker, [&](size_t column, Worker& worker) {
    const auto d = static_cast<Count>(column);
    PairScratch& scratch = worker.scratch;
    PairOutcome& counted = worker.counted;
    std::optional<ProfileNumbering> seen;  // the profiles counted apart, by content
    if (profiles) seen.emplace(columns[column].distinct);
    std::unordered_map<const QueryTileProfile*, Count> seen_in_memo;
    const QueryTileProfile* previous_rows = nullptr;  // the last round's memo profiles, null when counted apart
    const KeyTileProfile* previous_columns = nullptr;
    const DeviceBlock& queries = *blocks[static_cast<size_t>(d)];
    for (Count r = 0; r < devices; ++r) {
      const DeviceId source = kv_source(d, r, devices);
      const auto count = [&](PairOutcome& out) {
        count_pair(queries, *blocks[static_cast<size_t>(source)], mask, varlen ? &*varlen : nullptr, slicing, tile, d,
                   source, scratch, profiles, out);
      };
      const PairOutcome* outcome =
          memo.key(d, source, worker.key) ? memo.find_or_count(worker.key, worker.met, count) : nullptr;
      const bool memoised = outcome != nullptr;
      if (!memoised) {
        count(counted);
        outcome = &counted;
      }
      work.active_tiles.at(r, d) = outcome->active;
      if (pair_totals) {
        work.unmasked_elements.at(r, d) = outcome->elements;
        work.partial_tiles.at(r, d) = outcome->partial;
      }
      if (profiles) {
        work.call_queries.at(r, d) = outcome->call_queries;
        ColumnProfiles& column = columns[static_cast<size_t>(d)];
        if (memoised && r > 0 && outcome->distinct_rows == previous_rows && outcome->distinct_columns == previous_columns) {
          // Both profiles as the last round's (every earlier block all full to a causal device,
          // every later one empty; striped's classes differ by offset, their profiles hardly):
          // known by the memo's addresses, no lookup.
        } else if (memoised) {
          column.last_index = number_memo_profile(column, outcome->profile(), seen_in_memo);
          column.last_key_index = number_memo_profile(column, outcome->key_profile(), seen_in_memo);
        } else {
          column.last_index = seen->number(outcome->rows);
          column.last_key_index = seen->number(outcome->columns);
        }
        work.query_tile_profile.at(r, d) = column.last_index;
        work.key_tile_profile.at(r, d) = column.last_key_index;
        previous_rows = memoised ? outcome->distinct_rows : nullptr;
        previous_columns = memoised ? outcome->distinct_columns : nullptr;
      }
    }
  });
  if (profiles) work.trimmed_length = WorkMatrix(devices, devices);  // no trims but where calls run causal
  if (profiles && calls_run_causal(mask)) {
    std::vector<std::optional<Run>> runs;
    for (Count d = 0; d < devices; ++d) runs.push_back(single_run(layout, d));
    for (Count r = 0; r < devices; ++r) {
      for (Count d = 0; d < devices; ++d) {
        const std::optional<Run>& queries = runs[static_cast<size_t>(d)];
        // Queries all inside a prefix make an unmasked call: nothing causal to trim.
        if (queries && queries->first + (queries->length - 1) * queries->stride < mask.prefix_length()) continue;
        work.trimmed_length.at(r, d) = trimmed_call_length(queries, runs[static_cast<size_t>(kv_source(d, r, devices))]);
      }
    }
  }
  if (profiles) {
    // Merge the columns in device order, so the numbering is the same on any thread count.
    ProfileNumbering global(work.profiles);
    std::vector<std::vector<Count>> global_id(static_cast<size_t>(devices));
    for (Count d = 0; d < devices; ++d) {
      ColumnProfiles& column = columns[static_cast<size_t>(d)];
      for (QueryTileProfile& profile : column.distinct) global_id[static_cast<size_t>(d)].push_back(global.number(std::move(profile)));
      column.distinct = {};
    }
    // Each column's numbers into the Work's, a band of rounds at a time: the band's rows stay in
    // the cache while every column rewrites its cells (a column whole touches a row per round).
    constexpr Count kBand = 64;
    for (Count band = 0; band < devices; band += kBand) {
      const Count end = std::min(devices, band + kBand);
      for (Count d = 0; d < devices; ++d) {
        const std::vector<Count>& ids = global_id[static_cast<size_t>(d)];
        for (Count r = band; r < end; ++r) {
          Count& index = work.query_tile_profile.at(r, d);
          Count& key_index = work.key_tile_profile.at(r, d);
          index = ids[static_cast<size_t>(index)];
          key_index = ids[static_cast<size_t>(key_index)];
        }
      }
    }
  }
  return work;
}

}  // namespace stripesim::model
