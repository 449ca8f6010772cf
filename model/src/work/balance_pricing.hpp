#pragma once
// How the balanced layout (balanced_layout.cpp) prices the sequence: pieces, what a run of queries
// costs in tiles under the tiling in force, where tiles start and which cuts no tile crosses, and
// the pieces a sequence is cut into. Internal to the work model.
#include <algorithm>
#include <utility>
#include <vector>

#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/types.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::model::balance {

// A run of the sequence that moves as a whole.
struct Piece {
  Position begin = 0;
  Count length = 0;
  Count cost = 0;  // tiles its queries compute over all rounds
  [[nodiscard]] Position end() const { return begin + length; }
};

// Where tiles start and what a run of queries costs, under the tiling in force.
class Pricing {
 public:
  Pricing(const Mask& mask, TileShape tile, Tiling tiling)
      : mask_(mask), tile_(tile), per_document_(tiling_matters(tiling, mask.kind())) {
    segments_ = per_document_ ? mask.document_starts() : std::vector<Position>{0, mask.seq_len()};
    body_ = mask.seq_len();
  }

  // Where every tiling segment starts, then n.
  [[nodiscard]] const std::vector<Position>& segments() const { return segments_; }
  // The first token of the tiling that covers p.
  [[nodiscard]] Position origin(Position p) const { return per_document_ ? mask_.document_start(p) : 0; }

  // The tail (see balanced_layout): runs of `run` tokens from `body` to n, one per device and last
  // in its local order, so that each starts a local tile (under varlen, each document's part of
  // it does). Without a tail, body is n.
  void set_tail(Position body, Count run) {
    body_ = body;
    run_ = run;
  }

  // The first token of the local tiling that covers p: its segment's, in the tail the later of
  // that and its run's.
  [[nodiscard]] Position tile_origin(Position p) const {
    const Position o = origin(p);
    return p < body_ ? o : std::max(o, body_ + (p - body_) / run_ * run_);
  }
  // Where that tiling ends: the next segment, the tail, or the end of p's run.
  [[nodiscard]] Position tiling_end(Position p) const {
    const Position segment_end = *std::upper_bound(segments_.begin(), segments_.end(), p);
    return std::min(segment_end, p < body_ ? body_ : body_ + ((p - body_) / run_ + 1) * run_);
  }
  // The end of the query tile that starts at qa, cut at `limit`.
  [[nodiscard]] Position query_tile_end(Position qa, Position limit) const {
    const Position o = tile_origin(qa);
    return std::min({limit, tiling_end(qa), o + ((qa - o) / tile_.query + 1) * tile_.query});
  }
  // The keys the query tile [qa, qb) reads, first and last.
  [[nodiscard]] std::pair<Position, Position> keys_read(Position qa, Position qb) const {
    return {std::max(mask_.lowest_key(qa), origin(qa)), mask_.highest_key(qb - 1)};
  }

  // Key tiles holding the keys [lo, hi], each tiling (segment, tail run) cut on its own.
  [[nodiscard]] Count key_tiles(Position lo, Position hi) const {
    Count tiles = 0;
    for (Position k = lo; k <= hi;) {
      const Position o = tile_origin(k);
      const Position end = std::min(hi + 1, tiling_end(k));
      tiles += (end - 1 - o) / tile_.key - (k - o) / tile_.key + 1;
      k = end;
    }
    return tiles;
  }
  // Of those, the ones whose first key read lies in [from, to): a key tile is counted on the piece
  // that holds its first token (or the first key read).
  [[nodiscard]] Count key_tiles_from(Position lo, Position hi, Position from, Position to) const {
    const auto before = [&](Position x) { return x > lo ? key_tiles(lo, std::min(hi, x - 1)) : 0; };
    return before(std::min(to, hi + 1)) - before(std::max(from, lo));
  }

  // Tiles the queries [begin, begin + length) compute: each local query tile times the key tiles
  // that hold its keys.
  [[nodiscard]] Count cost(Position begin, Count length) const {
    Count tiles = 0;
    for (Position qa = begin; qa < begin + length;) {
      const Position qb = query_tile_end(qa, begin + length);
      const auto [lo, hi] = keys_read(qa, qb);
      tiles += key_tiles(lo, hi);
      qa = qb;
    }
    return tiles;
  }

  // Tiles that cross a cut at x (queries at or after x reading keys before x): what putting the
  // two sides on different devices moves off round 0. Exact for documents (each query of the
  // document from x on reads all of it before x); with a window, the queries [x, x + W - 1) that
  // read a key before x times the key tiles query x reads there (the band's bounding rectangle).
  // Every boundary of a causal or window mask is crossed alike, so there it is 0 (cut where asked).
  [[nodiscard]] Count crossing(Position x) const {
    if (mask_.kind() != MaskKind::documents) return 0;
    const Position first_key = mask_.lowest_key(x);
    if (first_key >= x) return 0;
    const auto& starts = mask_.document_starts();
    Position end = *std::upper_bound(starts.begin(), starts.end(), x);
    if (mask_.windowed()) end = std::min(end, x + mask_.effective_window() - 1);
    const Position o = origin(x);
    return ((x - 1 - o) / tile_.key - (first_key - o) / tile_.key + 1) * tiles_covering(end - x, tile_.query);
  }

  // No tile crosses x: it starts a tiling segment or no query from x on reads a key before it.
  [[nodiscard]] bool free_cut(Position x) const { return origin(x) == x || mask_.lowest_key(x) >= x; }

  [[nodiscard]] TileShape tile() const { return tile_; }

 private:
  const Mask& mask_;
  TileShape tile_;
  bool per_document_;
  std::vector<Position> segments_;
  Position body_ = 0;
  Count run_ = 0;
};

// The blocks of B tokens of every tiling segment (a segment's last may be shorter) before `end`,
// by start.
[[nodiscard]] std::vector<Position> block_starts(const Pricing& pricing, Count block, Position end);

// Pieces of at most `chunk` blocks out of the blocks not `spread`: runs between free cuts (and
// spread blocks), the longer ones cut into near-equal parts at the boundary near each target
// that the fewest tiles cross.
[[nodiscard]] std::vector<Piece> cut_pieces(const Pricing& pricing, const std::vector<Position>& blocks,
                                            const std::vector<bool>& spread, Count n, Count chunk);

}  // namespace stripesim::model::balance
