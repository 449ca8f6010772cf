// The `balanced` layout: pieces of the sequence dealt so that the ring's slowest device and its
// lockstep time (the per-round maximum summed over rounds) are as small as the tiles allow.
//
// Why it can price work exactly: cut the sequence into blocks of B = lcm(TQ, TK) tokens aligned
// where the kernel's tiling starts (the sequence's first token under fixed tiling, every
// document's first token under varlen). When every device holds whole blocks in sequence order,
// each of its local tiles is a tile of the sequence's own tiling, so a piece's work over all
// rounds (its query tiles times the key tiles they reach) does not depend on where the other
// pieces go, and no layout of whole blocks computes more tiles than the sequence has. The busiest
// device is then a number-partitioning problem over pieces, and the lockstep time depends only
// on which pieces that read each other's keys sit on different devices. When B does not divide
// n/N, the sequence's last N x (n/N mod B) tokens are one run per device, last in its local
// order: each run starts its own local tile, so that stays exact.
//
// The search. Documents heavier than a fraction of a device's share (none, any, 1/4, 1/2 or 1:
// each is a candidate; "any" spreads every document with a block per chunk, doc-zigzag on the
// tile grid) are spread zigzag over every device, which balances their cross-device work round
// by round. The rest is cut into pieces of at most S blocks (S from a device's share down to one
// block, halving: each a candidate) at every free boundary (where no tile crosses) and, in longer
// runs, where the fewest tiles cross; the pieces are dealt longest-processing-time first with
// every device holding n/N tokens, then pieces or end blocks of equal length are swapped off the
// busiest device while that lowers it. Each candidate is also tried with its devices renumbered
// in sequence order (neighbouring pieces on neighbouring devices), and where the tiling is the
// sequence's block grid (fixed tiling, or varlen with every document starting on it) PyTorch's
// round robin of the same blocks (ptrr_layout.hpp; packed documents and windows) and contiguous
// itself are candidates as well. A single sequence (causal, window) tries piece sizes down to a
// quarter share only.
// Scored exactly (busiest device, lockstep, and the ring without a barrier with free links,
// metrics.hpp), the candidates within kBusiestSlack of the least busy are kept, the best few with
// a lockstep to gain polished by swaps that lower the lockstep without raising the busiest device
// (where their graph of pieces is small enough) and then by renumbering their devices (which
// device meets which in each round) for the lockstep, and the lowest lockstep is the pick; the
// lowest lockstep among all candidates no slower than the pick without a barrier then wins (a
// little busier, it is faster however the ring runs). What users have already is the bar: the
// pick is within kBusiestSlack of PyTorch's round robin's busiest device and below its lockstep
// where that can be (the round robin polished, if nothing else is), and under varlen no busier
// and no slower in lockstep than doc-zigzag, both counted exactly (doc-zigzag itself otherwise).
// Deterministic: no randomness, ties broken by position.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <queue>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/document_layouts.hpp"
#include "stripesim/model/work/metrics.hpp"
#include "stripesim/model/work/ptrr_layout.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::model {
namespace {

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
  // two sides on different devices moves off round 0. Exact for documents; every boundary of a
  // causal or window mask is crossed alike, so there it is 0 (cut where asked).
  [[nodiscard]] Count crossing(Position x) const {
    if (mask_.kind() != MaskKind::documents) return 0;
    const Position start = mask_.document_start(x);
    if (start == x) return 0;
    const auto& starts = mask_.document_starts();
    const Position end = *std::upper_bound(starts.begin(), starts.end(), x);
    const Position o = origin(x);
    return ((x - 1 - o) / tile_.key - (start - o) / tile_.key + 1) * tiles_covering(end - x, tile_.query);
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
std::vector<Position> block_starts(const Pricing& pricing, Count block, Position end) {
  std::vector<Position> starts;
  const auto& segments = pricing.segments();
  for (size_t s = 0; s + 1 < segments.size() && segments[s] < end; ++s) {
    for (Position p = segments[s]; p < std::min(end, segments[s + 1]); p += block) starts.push_back(p);
  }
  return starts;
}

// Pieces of at most `chunk` blocks out of the blocks not `spread`: runs between free cuts (and
// spread blocks), the longer ones cut into near-equal parts at the boundary near each target
// that the fewest tiles cross.
std::vector<Piece> cut_pieces(const Pricing& pricing, const std::vector<Position>& blocks, const std::vector<bool>& spread,
                              Count n, Count chunk) {
  std::vector<Piece> pieces;
  const auto start = [&](size_t b) { return b < blocks.size() ? blocks[b] : n; };
  const auto add = [&](size_t from, size_t to) {  // blocks [from, to)
    pieces.push_back({blocks[from], start(to) - blocks[from], pricing.cost(blocks[from], start(to) - blocks[from])});
  };
  size_t run = 0;
  for (size_t b = 1; b <= blocks.size(); ++b) {
    if (b < blocks.size() && !pricing.free_cut(blocks[b]) && spread[b] == spread[b - 1]) continue;
    if (spread[run]) {
      run = b;
      continue;
    }
    // Blocks [run, b) form a run no tile leaves: ceil(length / chunk) parts.
    const auto length = static_cast<Count>(b - run);
    const Count parts = (length + chunk - 1) / chunk;
    size_t from = run;
    for (Count j = 1; j < parts; ++j) {
      const Count target = static_cast<Count>(run) + j * length / parts;
      const Count reach = chunk / 2;
      auto best = static_cast<size_t>(target);
      Count best_crossing = pricing.crossing(blocks[best]);
      for (Count t = std::max(static_cast<Count>(from) + 1, target - reach); t <= target + reach && t < static_cast<Count>(b); ++t) {
        const Count crossing = pricing.crossing(blocks[static_cast<size_t>(t)]);
        if (crossing < best_crossing ||
            (crossing == best_crossing && std::abs(t - target) < std::abs(static_cast<Count>(best) - target))) {
          best = static_cast<size_t>(t);
          best_crossing = crossing;
        }
      }
      if (best <= from) continue;
      add(from, best);
      from = best;
    }
    add(from, b);
    run = b;
  }
  return pieces;
}

// Pieces dealt to devices, every device holding exactly `capacity` tokens: `pinned` pieces (the
// chunks of spread documents) stay where they are, `owned` ones may be swapped.
struct Assignment {
  std::vector<std::vector<Piece>> owned;
  std::vector<std::vector<Piece>> pinned;
  std::vector<Count> load;

  explicit Assignment(Count devices)
      : owned(static_cast<size_t>(devices)), pinned(static_cast<size_t>(devices)), load(static_cast<size_t>(devices), 0) {}
  [[nodiscard]] Count busiest() const { return *std::max_element(load.begin(), load.end()); }
};

// Spreads the blocks [from, to) (one heavy document) over every device as zigzag does: 2N
// chunks of whole blocks (sizes differing by at most one block), chunks g and 2N - 1 - g on one
// device. Every round after the first then carries the same share of its work on every device.
// The zigzag is rotated (device (d + shift) mod N holds chunks d and 2N - 1 - d, which keeps
// that property) by the shift that leaves the busiest device least loaded, so that the uneven
// chunks of many documents do not pile onto the same devices, among the shifts that keep every
// device within its share of tokens (`capacity`); false, spreading nothing, when none does.
bool spread_zigzag(const Pricing& pricing, const std::vector<Position>& blocks, size_t from, size_t to, Count n,
                   Count capacity, Assignment& a) {
  const auto devices = static_cast<Count>(a.load.size());
  const auto count = static_cast<Count>(to - from);
  const auto start = [&](Count b) { return b < static_cast<Count>(blocks.size()) ? blocks[static_cast<size_t>(b)] : n; };
  std::vector<Piece> chunks;
  std::vector<Count> owner;  // before the shift
  for (Count g = 0, at = static_cast<Count>(from); g < 2 * devices; ++g) {
    const Count size = count / (2 * devices) + (g < count % (2 * devices) ? 1 : 0);
    const Position begin = start(at);
    at += size;
    if (size == 0) continue;
    chunks.push_back({begin, start(at) - begin, pricing.cost(begin, start(at) - begin)});
    owner.push_back(g < devices ? g : 2 * devices - 1 - g);
  }
  std::vector<Count> added(static_cast<size_t>(devices), 0);
  std::vector<Count> length(static_cast<size_t>(devices), 0);
  for (size_t i = 0; i < chunks.size(); ++i) {
    added[static_cast<size_t>(owner[i])] += chunks[i].cost;
    length[static_cast<size_t>(owner[i])] += chunks[i].length;
  }
  std::vector<Count> held(static_cast<size_t>(devices), 0);  // tokens pinned so far
  for (Count d = 0; d < devices; ++d) {
    for (const Piece& p : a.pinned[static_cast<size_t>(d)]) held[static_cast<size_t>(d)] += p.length;
  }
  Count best_shift = 0;
  Count best_peak = -1;
  for (Count shift = 0; shift < devices; ++shift) {
    Count peak = 0;
    bool fits = true;
    for (Count d = 0; d < devices; ++d) {
      const auto to_device = static_cast<size_t>((d + shift) % devices);
      peak = std::max(peak, a.load[to_device] + added[static_cast<size_t>(d)]);
      fits = fits && held[to_device] + length[static_cast<size_t>(d)] <= capacity;
    }
    if (fits && (best_peak < 0 || peak < best_peak)) {
      best_peak = peak;
      best_shift = shift;
    }
  }
  if (best_peak < 0) return false;  // no rotation fits every device's share: left to the pieces
  for (size_t i = 0; i < chunks.size(); ++i) {
    const auto device = static_cast<size_t>((owner[i] + best_shift) % devices);
    a.pinned[device].push_back(chunks[i]);
    a.load[device] += chunks[i].cost;
  }
  return true;
}

// Longest processing time first: each piece, heaviest first, to the least loaded device with
// room for it; a piece that fits nowhere whole fills the roomiest device with its head.
void deal(const Pricing& pricing, std::vector<Piece> pieces, Count capacity, Count block, Assignment& a) {
  const auto heavier = [](const Piece& x, const Piece& y) {
    if (x.cost != y.cost) return x.cost < y.cost;
    if (x.length != y.length) return x.length < y.length;
    return x.begin > y.begin;
  };
  std::priority_queue<Piece, std::vector<Piece>, decltype(heavier)> pending(heavier, std::move(pieces));
  std::vector<Count> room(a.load.size(), capacity);
  for (size_t d = 0; d < room.size(); ++d) {
    for (const Piece& p : a.pinned[d]) room[d] -= p.length;
  }
  while (!pending.empty()) {
    Piece piece = pending.top();
    pending.pop();
    size_t best = room.size();
    size_t roomiest = 0;
    for (size_t d = 0; d < room.size(); ++d) {
      if (room[d] >= piece.length && (best == room.size() || a.load[d] < a.load[best])) best = d;
      if (room[d] > room[roomiest]) roomiest = d;
    }
    if (best == room.size()) {
      // It fits nowhere whole: the roomiest device takes a head of it, cut at a block boundary
      // (whole blocks keep the pricing exact) where the fewest tiles cross, preferring the second
      // half of its room; the rest of the room goes to later, smaller pieces. Only a room
      // smaller than a block takes a head that ends inside one.
      const Count fits = room[roomiest];
      Count head = 0;
      Count cheapest = 0;
      for (Position x = piece.begin + fits; x > piece.begin; --x) {
        if ((x - pricing.origin(x)) % block != 0) continue;
        const Count crossing = pricing.crossing(x);
        const bool late = x - piece.begin > fits / 2;
        if (head == 0 || (late && crossing < cheapest)) {
          head = x - piece.begin;
          cheapest = crossing;
        }
        if (!late) break;
      }
      if (head == 0) head = fits;
      pending.push({piece.begin + head, piece.length - head, pricing.cost(piece.begin + head, piece.length - head)});
      piece = {piece.begin, head, pricing.cost(piece.begin, head)};
      best = roomiest;
    }
    a.owned[best].push_back(piece);
    a.load[best] += piece.cost;
    room[best] -= piece.length;
  }
}

// What one device can give in a swap: a whole piece, or the first or last k blocks of a longer
// one (k up to kMaxEndBlocks).
struct Offer {
  size_t piece = 0;
  int part = 0;  // 0 whole, -1 its head, +1 its tail
  Count length = 0;
  Count cost = 0;
  Count crossing = 0;  // tiles the new cut moves off round 0 (0 for a whole piece)
};
constexpr Count kMaxEndBlocks = 8;

// Heads and tails are offered only where cutting them off crosses at most `max_crossing` tiles:
// a cut through a long document would put its cross work on one device in one round.
std::vector<Offer> offers(const Pricing& pricing, const std::vector<Piece>& owned, Count block, Count max_crossing) {
  std::vector<Offer> out;
  for (size_t i = 0; i < owned.size(); ++i) {
    const Piece& p = owned[i];
    out.push_back({i, 0, p.length, p.cost, 0});
    const Position origin = pricing.origin(p.begin);
    const bool head_aligned = (p.begin - origin) % block == 0;
    const bool tail_aligned = (p.end() - origin) % block == 0;
    for (Count k = 1; k <= kMaxEndBlocks && k * block < p.length; ++k) {
      const Count length = k * block;
      if (const Count crossing = pricing.crossing(p.begin + length); head_aligned && crossing <= max_crossing) {
        out.push_back({i, -1, length, pricing.cost(p.begin, length), crossing});
      }
      if (const Count crossing = pricing.crossing(p.end() - length); tail_aligned && crossing <= max_crossing) {
        out.push_back({i, +1, length, pricing.cost(p.end() - length, length), crossing});
      }
    }
  }
  return out;
}

// Takes the offered part out of `owned` (splitting its piece) and returns it.
Piece take(const Pricing& pricing, std::vector<Piece>& owned, const Offer& offer) {
  Piece& p = owned[offer.piece];
  if (offer.part == 0) {
    Piece whole = p;
    owned.erase(owned.begin() + static_cast<std::ptrdiff_t>(offer.piece));
    return whole;
  }
  const Position begin = offer.part < 0 ? p.begin : p.end() - offer.length;
  const Piece part{begin, offer.length, offer.cost};
  if (offer.part < 0) p.begin += offer.length;
  p.length -= offer.length;
  p.cost = pricing.cost(p.begin, p.length);
  return part;
}

// Swaps of equal-length parts between the busiest device and another while the busiest drops;
// among equal gains the one whose cuts cross the fewest tiles.
void refine(const Pricing& pricing, Assignment& a, Count block) {
  const TileShape tile = pricing.tile();
  const Count max_crossing = 2 * tiles_covering(block, tile.query) * tiles_covering(block, tile.key);
  const auto devices = a.load.size();
  for (size_t iteration = 0; iteration < 64 * devices; ++iteration) {
    const auto busiest = static_cast<size_t>(std::max_element(a.load.begin(), a.load.end()) - a.load.begin());
    const Count top = a.load[busiest];
    const auto mine = offers(pricing, a.owned[busiest], block, max_crossing);
    // The busiest device's offers by (length, cost): for each other device, the best partner of
    // each of its offers is one lookup.
    struct Choice {
      Count peak;
      Count crossing;
      size_t device;
      Offer give, receive;
    };
    std::optional<Choice> best;
    std::multimap<std::pair<Count, Count>, const Offer*> by_shape;
    for (const Offer& x : mine) by_shape.emplace(std::make_pair(x.length, x.cost), &x);
    for (size_t e = 0; e < devices; ++e) {
      if (e == busiest || a.load[e] >= top) continue;
      const Count gap = top - a.load[e];
      for (const Offer& y : offers(pricing, a.owned[e], block, max_crossing)) {
        // Partner x on the busiest device: same length, cost in (y.cost, y.cost + gap); the peak
        // max(top - x + y, load_e + x - y) is smallest with x - y nearest gap / 2.
        const auto above = by_shape.lower_bound({y.length, y.cost + gap / 2});
        for (const auto probe : {above, above == by_shape.begin() ? by_shape.end() : std::prev(above)}) {
          if (probe == by_shape.end() || probe->first.first != y.length) continue;
          const Count x_cost = probe->first.second;
          if (x_cost <= y.cost || x_cost - y.cost >= gap) continue;
          const Count peak = std::max(top - x_cost + y.cost, a.load[e] + x_cost - y.cost);
          const Count crossing = probe->second->crossing + y.crossing;
          if (!best || peak < best->peak || (peak == best->peak && crossing < best->crossing)) {
            best = Choice{peak, crossing, e, *probe->second, y};
          }
        }
      }
    }
    if (!best) return;
    const Piece give = take(pricing, a.owned[busiest], best->give);
    const Piece receive = take(pricing, a.owned[best->device], best->receive);
    a.owned[busiest].push_back(receive);
    a.owned[best->device].push_back(give);
    a.load[busiest] += receive.cost - give.cost;
    a.load[best->device] += give.cost - receive.cost;
  }
}

// Every piece with its device (and whether it is pinned), in sequence order.
struct PlacedPiece {
  Piece piece;
  Count device;
  bool pinned;
};
std::vector<PlacedPiece> pieces_in_order(const Assignment& a) {
  std::vector<PlacedPiece> all;
  for (size_t d = 0; d < a.owned.size(); ++d) {
    for (const Piece& p : a.owned[d]) all.push_back({p, static_cast<Count>(d), false});
    for (const Piece& p : a.pinned[d]) all.push_back({p, static_cast<Count>(d), true});
  }
  std::sort(all.begin(), all.end(), [](const PlacedPiece& x, const PlacedPiece& y) { return x.piece.begin < y.piece.begin; });
  return all;
}

// Calls read(q, k, tiles) for every query tile of piece q and every piece k holding key tiles it
// reads (a key tile counted on the piece holding its first token, or the first key it reads).
template <typename Read>
void for_each_read(const Pricing& pricing, const std::vector<PlacedPiece>& pieces, Read read) {
  for (size_t q = 0; q < pieces.size(); ++q) {
    const Piece& piece = pieces[q].piece;
    for (Position qa = piece.begin; qa < piece.end();) {
      const Position qb = pricing.query_tile_end(qa, piece.end());
      const auto [lo, hi] = pricing.keys_read(qa, qb);
      auto k = static_cast<size_t>(std::upper_bound(pieces.begin(), pieces.end(), lo,
                                                    [](Position p, const PlacedPiece& x) { return p < x.piece.begin; }) -
                                   pieces.begin() - 1);
      for (; k < pieces.size() && pieces[k].piece.begin <= hi; ++k) {
        const Piece& keys = pieces[k].piece;
        if (const Count tiles = pricing.key_tiles_from(lo, hi, keys.begin, keys.end()); tiles > 0) read(q, k, tiles);
      }
      qa = qb;
    }
  }
}

// The devices' work on each other's pieces ([query device * N + key device], in tiles), and how
// many pieces the keys of each query tile span (at least the reads a RingGraph of them holds).
struct PairWork {
  std::vector<Count> work;
  Count reads = 0;
};

// The same sums as for_each_read's, without visiting every piece a query tile reads: the key tiles
// holding the keys [lo, hi] are the one holding lo and one for every tile start in (lo, hi] (each
// tiling cut on its own), so a device's share is whether it holds lo plus its tile starts in
// (lo, hi], kept per device while [lo, hi] slides along the sequence. A query tile costs O(N),
// not O(pieces it reads): a 128k window over 128-token pieces reads 1024 of them.
PairWork pair_work(const Pricing& pricing, const Assignment& a) {
  const auto pieces = pieces_in_order(a);
  const auto devices = a.load.size();
  PairWork pair{std::vector<Count>(devices * devices, 0), 0};
  if (pieces.empty()) return pair;
  const Position n = pieces.back().piece.end();
  // Every key tile start, in sequence order, with the device holding it.
  std::vector<Position> starts;
  std::vector<size_t> holder;
  size_t at = 0;
  for (Position start = 0; start < n;) {
    while (pieces[at].piece.end() <= start) ++at;
    starts.push_back(start);
    holder.push_back(static_cast<size_t>(pieces[at].device));
    const Position o = pricing.tile_origin(start);
    start = std::min(o + ((start - o) / pricing.tile().key + 1) * pricing.tile().key, pricing.tiling_end(start));
  }
  // Tile starts in (lo, hi] per device: those up to hi entered, those up to lo left. The window
  // only moves forward under these masks; backward steps are undone all the same.
  std::vector<Count> in_window(devices, 0);
  size_t entered = 0;
  size_t left = 0;
  const auto slide = [&](size_t& edge, Position bound, Count sign) {
    while (edge < starts.size() && starts[edge] <= bound) in_window[holder[edge++]] += sign;
    while (edge > 0 && starts[edge - 1] > bound) in_window[holder[--edge]] -= sign;
  };
  size_t lo_piece = 0;
  size_t hi_piece = 0;
  const auto piece_of = [&](size_t& index, Position p) {
    while (pieces[index].piece.end() <= p) ++index;
    while (pieces[index].piece.begin > p) --index;
  };
  for (const PlacedPiece& query : pieces) {
    Count* row = pair.work.data() + static_cast<size_t>(query.device) * devices;
    for (Position qa = query.piece.begin; qa < query.piece.end();) {
      const Position qb = pricing.query_tile_end(qa, query.piece.end());
      const auto [lo, hi] = pricing.keys_read(qa, qb);
      qa = qb;
      if (hi < lo) continue;
      slide(entered, hi, +1);
      slide(left, lo, -1);
      piece_of(lo_piece, lo);
      piece_of(hi_piece, hi);
      pair.reads += static_cast<Count>(hi_piece - lo_piece + 1);
      ++row[pieces[lo_piece].device];
      for (size_t d = 0; d < devices; ++d) row[d] += in_window[d];
    }
  }
  return pair;
}

// What the ring pays for one numbering of the devices: the busiest device, the lockstep time (sum
// over rounds of the busiest device) and the ring without a barrier, links free (metrics.hpp), in
// tiles (exact for whole blocks).
struct RingCost {
  Count busiest = 0;
  Count lockstep = 0;
  Count ring = 0;
};

// Number d (device order[d]) meets the pieces of number d - r in round r.
RingCost ring_cost(const WorkMatrix& work) {
  const Metrics m = compute_metrics(work);
  return {m.slowest_device, m.lockstep, free_link_ring_time(work)};
}

RingCost numbered_cost(const std::vector<Count>& pair, const std::vector<size_t>& order) {
  const auto devices = static_cast<Count>(order.size());
  WorkMatrix work(devices, devices);
  for (Count r = 0; r < devices; ++r) {
    for (Count d = 0; d < devices; ++d) {
      work.at(r, d) = pair[order[static_cast<size_t>(d)] * order.size() + order[static_cast<size_t>(kv_source(d, r, devices))]];
    }
  }
  return ring_cost(work);
}

// A layout's tiles counted by the work model: exact wherever the balancer's pricing is not (pieces
// off the block grid).
WorkMatrix exact_tiles(const Layout& layout, const Mask& mask, TileShape tile, Tiling tiling) {
  return count_work(layout, mask, tile, 1, WorkDetail::totals, tiling).active_tiles;
}

// TransformerEngine's split of packed documents (doc-zigzag), where the kernel tiles every
// document on its own and every document has its 2N chunks: what varlen users have already.
bool doc_zigzag_is_the_bar(const Mask& mask, Count devices, Tiling tiling) {
  if (!tiling_matters(tiling, mask.kind())) return false;
  const auto& starts = mask.document_starts();
  for (size_t j = 0; j + 1 < starts.size(); ++j) {
    if ((starts[j + 1] - starts[j]) % (2 * devices) != 0) return false;
  }
  return true;
}

RingCost cost_of(const PairWork& pair, Count devices) {
  std::vector<size_t> order(static_cast<size_t>(devices));
  std::iota(order.begin(), order.end(), size_t{0});
  return numbered_cost(pair.work, order);
}

RingCost cost_of(const Pricing& pricing, const Assignment& a) {
  return cost_of(pair_work(pricing, a), static_cast<Count>(a.load.size()));
}

// The ring's work as a graph of pieces: which piece's queries read which piece's keys, in tiles
// (every query tile's key tiles, each counted on the piece holding its first token), and the
// [round][device] work matrix that follows from where the pieces sit. Exact for whole blocks.
class RingGraph {
 public:
  RingGraph(const Pricing& pricing, const Assignment& a) : devices_(static_cast<Count>(a.load.size())), load_(a.load) {
    const auto pieces = pieces_in_order(a);
    for (const auto& [piece, device, pinned] : pieces) nodes_.push_back({piece, device, pinned});
    reads_.resize(nodes_.size());
    read_by_.resize(nodes_.size());
    for_each_read(pricing, pieces, [&](size_t q, size_t k, Count tiles) { reads_[q].emplace_back(k, tiles); });
    for (size_t q = 0; q < nodes_.size(); ++q) {
      std::sort(reads_[q].begin(), reads_[q].end());
      // Merge what several query tiles found on the same piece.
      size_t out = 0;
      for (size_t i = 0; i < reads_[q].size(); ++i) {
        if (out > 0 && reads_[q][out - 1].first == reads_[q][i].first) {
          reads_[q][out - 1].second += reads_[q][i].second;
        } else {
          reads_[q][out++] = reads_[q][i];
        }
      }
      reads_[q].resize(out);
      for (const auto& [k, tiles] : reads_[q]) read_by_[k].emplace_back(q, tiles);
    }
    work_.assign(static_cast<size_t>(devices_ * devices_), 0);
    for (size_t q = 0; q < nodes_.size(); ++q) {
      for (const auto& [k, tiles] : reads_[q]) cell(nodes_[q].device, nodes_[k].device) += tiles;
    }
    round_max_.resize(static_cast<size_t>(devices_));
    is_touched_.assign(static_cast<size_t>(devices_), 0);
    for (Count r = 0; r < devices_; ++r) round_max_[static_cast<size_t>(r)] = max_of_round(r);
  }

  // Sum over rounds of the busiest device.
  [[nodiscard]] Count lockstep() const { return std::accumulate(round_max_.begin(), round_max_.end(), Count{0}); }
  // The same work as pair_work() of assignment(): [query device * N + key device].
  [[nodiscard]] std::vector<Count> pair_work() const {
    std::vector<Count> out(work_.size());
    for (Count r = 0; r < devices_; ++r) {
      for (Count d = 0; d < devices_; ++d) {
        out[static_cast<size_t>(d * devices_ + kv_source(d, r, devices_))] = work_[static_cast<size_t>(r * devices_ + d)];
      }
    }
    return out;
  }

  // Swaps pieces of equal length between devices while the lockstep drops and no device grows
  // past today's busiest: first moving each piece with cross-device work (heaviest first) next to
  // the piece it reads or is read by most.
  void improve(Count budget) {
    const Count top = *std::max_element(load_.begin(), load_.end());
    std::vector<std::map<Count, std::vector<size_t>>> by_length(static_cast<size_t>(devices_));
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i].pinned) by_length[static_cast<size_t>(nodes_[i].device)][nodes_[i].piece.length].push_back(i);
    }
    std::vector<size_t> order;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i].pinned && cross_weight(i) > 0) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return cross_weight(x) > cross_weight(y); });
    for (const size_t x : order) {
      if (budget-- <= 0) break;
      const Count a = nodes_[x].device;
      const Count b = heaviest_partner_device(x);
      if (b < 0) continue;
      size_t best = x;
      Count best_lockstep = lockstep();
      const auto it = by_length[static_cast<size_t>(b)].find(nodes_[x].piece.length);
      if (it == by_length[static_cast<size_t>(b)].end()) continue;
      // The partners nearest in cost first (they move the loads least); a few of them.
      partners_ = it->second;
      const auto nearer = [&](size_t u, size_t v) {
        return std::abs(nodes_[u].piece.cost - nodes_[x].piece.cost) < std::abs(nodes_[v].piece.cost - nodes_[x].piece.cost);
      };
      if (partners_.size() > kPartnersTried) {
        std::nth_element(partners_.begin(), partners_.begin() + kPartnersTried, partners_.end(), nearer);
        partners_.resize(kPartnersTried);
      }
      for (const size_t y : partners_) {
        const Count delta = nodes_[x].piece.cost - nodes_[y].piece.cost;
        if (load_[static_cast<size_t>(a)] - delta > top || load_[static_cast<size_t>(b)] + delta > top) continue;
        swap(x, y);
        if (lockstep() < best_lockstep) {
          best_lockstep = lockstep();
          best = y;
        }
        swap(x, y);
      }
      if (best == x) continue;
      auto& from = by_length[static_cast<size_t>(a)][nodes_[x].piece.length];
      auto& to = it->second;
      from.erase(std::find(from.begin(), from.end(), x));
      to.erase(std::find(to.begin(), to.end(), best));
      from.push_back(best);
      to.push_back(x);
      const Count delta = nodes_[x].piece.cost - nodes_[best].piece.cost;
      load_[static_cast<size_t>(a)] -= delta;
      load_[static_cast<size_t>(b)] += delta;
      swap(x, best);
    }
  }

  // Back to pieces per device.
  [[nodiscard]] Assignment assignment() const {
    Assignment a(devices_);
    for (const Node& node : nodes_) {
      (node.pinned ? a.pinned : a.owned)[static_cast<size_t>(node.device)].push_back(node.piece);
    }
    a.load = load_;
    return a;
  }

 private:
  using Node = PlacedPiece;

  Count& cell(Count query_device, Count key_device) {
    return work_[static_cast<size_t>(round_of(query_device, key_device, devices_) * devices_ + query_device)];
  }
  [[nodiscard]] Count max_of_round(Count r) const {
    return *std::max_element(work_.begin() + r * devices_, work_.begin() + (r + 1) * devices_);
  }

  [[nodiscard]] Count cross_weight(size_t i) const {
    Count weight = 0;
    for (const auto* edges : {&reads_[i], &read_by_[i]}) {
      for (const auto& [j, tiles] : *edges) weight += nodes_[j].device != nodes_[i].device ? tiles : 0;
    }
    return weight;
  }

  [[nodiscard]] Count heaviest_partner_device(size_t i) const {
    std::map<Count, Count> weight;
    for (const auto* edges : {&reads_[i], &read_by_[i]}) {
      for (const auto& [j, tiles] : *edges) {
        if (nodes_[j].device != nodes_[i].device) weight[nodes_[j].device] += tiles;
      }
    }
    Count best = -1;
    Count heaviest = 0;
    for (const auto& [device, w] : weight) {
      if (w > heaviest) {
        best = device;
        heaviest = w;
      }
    }
    return best;
  }

  // Exchanges the devices of pieces x and y, updating the work matrix and the rounds it touches.
  void swap(size_t x, size_t y) {
    touched_.clear();
    const auto account = [&](size_t i, Count sign) {
      for (const auto& [k, tiles] : reads_[i]) {
        cell(nodes_[i].device, nodes_[k].device) += sign * tiles;
        touched_.push_back(round_of(nodes_[i].device, nodes_[k].device, devices_));
      }
      for (const auto& [q, tiles] : read_by_[i]) {
        if (q == x || q == y) continue;  // counted from the reader's side
        cell(nodes_[q].device, nodes_[i].device) += sign * tiles;
        touched_.push_back(round_of(nodes_[q].device, nodes_[i].device, devices_));
      }
    };
    account(x, -1);
    account(y, -1);
    std::swap(nodes_[x].device, nodes_[y].device);
    account(x, +1);
    account(y, +1);
    for (const Count r : touched_) {
      if (is_touched_[static_cast<size_t>(r)]) continue;
      is_touched_[static_cast<size_t>(r)] = 1;
      round_max_[static_cast<size_t>(r)] = max_of_round(r);
    }
    for (const Count r : touched_) is_touched_[static_cast<size_t>(r)] = 0;
  }

  Count devices_;
  std::vector<Count> load_;
  std::vector<Node> nodes_;
  std::vector<std::vector<std::pair<size_t, Count>>> reads_;
  std::vector<std::vector<std::pair<size_t, Count>>> read_by_;
  std::vector<Count> work_;  // [round][device]
  std::vector<Count> round_max_;
  std::vector<Count> touched_;
  std::vector<char> is_touched_;
  std::vector<size_t> partners_;
  static constexpr size_t kPartnersTried = 16;
};

// The most pieces any tiling segment (a document under varlen) is cut into: runs of consecutive
// positions on one device count once.
Count most_pieces_of_a_document(const Pricing& pricing, const Assignment& a) {
  const auto pieces = pieces_in_order(a);
  std::map<Position, Count> per_segment;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i].piece;
    const bool continues = i > 0 && pieces[i - 1].piece.end() == p.begin && pieces[i - 1].device == pieces[i].device &&
                           pricing.origin(p.begin) != p.begin;
    if (!continues) ++per_segment[pricing.origin(p.begin)];
  }
  Count most = 0;
  for (const auto& [segment, count] : per_segment) most = std::max(most, count);
  return most;
}

// `a` with device number i holding what device order[i] held.
Assignment renumbered(const Assignment& a, const std::vector<size_t>& order) {
  Assignment out(static_cast<Count>(order.size()));
  for (size_t rank = 0; rank < order.size(); ++rank) {
    out.owned[rank] = a.owned[order[rank]];
    out.pinned[rank] = a.pinned[order[rank]];
    out.load[rank] = a.load[order[rank]];
  }
  return out;
}

// The devices numbered in the order of their longest piece's position (order[number] = device):
// pieces next to each other in the sequence then sit on devices next to each other in the ring,
// so the tiles that cross their cut fall in round 1 (or N - 1) rather than anywhere.
std::vector<size_t> ring_order(const Assignment& a) {
  const auto devices = a.load.size();
  std::vector<Position> key(devices, 0);
  for (size_t d = 0; d < devices; ++d) {
    Count longest = -1;
    for (const auto* pieces : {&a.owned[d], &a.pinned[d]}) {
      for (const Piece& p : *pieces) {
        if (p.length > longest) {
          longest = p.length;
          key[d] = p.begin;
        }
      }
    }
  }
  std::vector<size_t> order(devices);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return key[x] < key[y]; });
  return order;
}

// Device d meets the pieces of device d - r in round r, so numbering the same devices differently
// moves work between rounds and leaves every device's load as it is. Swaps the numbers of two
// devices while that lowers sum_r max_d (first improvement, pairs in order: deterministic), within
// a budget of evaluations so that large rings stay fast. Returns order[number] = device.
//
// A swap of numbers x and y changes, in round r, only the cells of query numbers x, y, x + r and
// y + r; each round keeps its few largest cells, so the round's new maximum is the largest
// unchanged one or a changed one, without reading the round again.
std::vector<size_t> lockstep_numbering(const std::vector<Count>& work, size_t devices) {
  std::vector<size_t> order(devices);
  std::iota(order.begin(), order.end(), size_t{0});
  if (devices < 3) return order;  // two devices meet in the same rounds whatever their numbers
  const auto cell = [&](size_t d, size_t r) { return work[order[d] * devices + order[(d + devices - r) % devices]]; };
  constexpr size_t kKept = 5;  // more than the 4 cells a swap changes in a round
  struct Top {
    std::array<std::pair<Count, size_t>, kKept> cells{};  // (work, query number), largest first
    size_t size = 0;
  };
  std::vector<Top> top(devices);
  const auto rank_round = [&](size_t r) {
    Top t;
    for (size_t d = 0; d < devices; ++d) {
      const std::pair<Count, size_t> c{cell(d, r), d};
      size_t at = t.size < kKept ? t.size++ : kKept;
      while (at > 0 && t.cells[at - 1].first < c.first) {
        if (at < kKept) t.cells[at] = t.cells[at - 1];
        --at;
      }
      if (at < kKept) t.cells[at] = c;
    }
    top[r] = t;
  };
  for (size_t r = 0; r < devices; ++r) rank_round(r);
  const auto total = [&] {
    Count sum = 0;
    for (const Top& t : top) sum += t.cells[0].first;
    return sum;
  };
  Count best = total();
  constexpr Count kEvaluations = 200'000;  // swaps tried at most: N = 64 gives 100 passes
  Count tried = 0;
  for (bool improved = true; improved && tried < kEvaluations;) {
    improved = false;
    for (size_t x = 0; x < devices && tried < kEvaluations; ++x) {
      for (size_t y = x + 1; y < devices && tried < kEvaluations; ++y) {
        ++tried;
        std::swap(order[x], order[y]);
        Count sum = 0;
        for (size_t r = 0; r < devices && sum < best; ++r) {
          const std::array<size_t, 4> changed{x, y, (x + r) % devices, (y + r) % devices};
          Count most = 0;
          for (size_t i = 0; i < top[r].size; ++i) {
            if (std::find(changed.begin(), changed.end(), top[r].cells[i].second) == changed.end()) {
              most = top[r].cells[i].first;
              break;
            }
          }
          for (const size_t d : changed) most = std::max(most, cell(d, r));
          sum += most;
        }
        if (sum < best) {
          best = sum;
          improved = true;
          for (size_t r = 0; r < devices; ++r) rank_round(r);
        } else {
          std::swap(order[x], order[y]);
        }
      }
    }
  }
  return order;
}

// How much busier than the least busy candidate's busiest device a candidate may be and still
// win on lockstep: below what a kernel's timing resolves, far below what lockstep gains.
constexpr double kBusiestSlack = 0.005;
// How many candidates are polished for lockstep, and how many pieces each polish tries to move.
constexpr size_t kPolished = 2;
constexpr Count kMovesTried = 4096;
// The most reads a candidate's graph may hold to be polished by swaps (numbering its devices needs
// no graph). Packed documents' candidates hold up to about 300k; the round robin of blocks under a
// wide window holds millions (1M tokens in 128-token blocks, a 100k window: 4.7M), whose graph
// alone takes a second to build and whose polish takes seconds for under 0.1 % of lockstep.
constexpr Count kMostReadsPolished = Count{1} << 20;

}  // namespace

void check_balanced_layout(const Mask& mask, Count devices, Count chunk) {
  if (devices < 1) throw InputError(Input::devices, std::to_string(devices), "must be at least 1");
  require_seq_len_divisible(mask.seq_len(), devices, "balanced", "N");
  if (chunk < 0) throw InputError(Input::layouts, fmt::format("balanced:{}", chunk), "the chunk must be at least 1 token");
}

BalanceResult balanced_layout(const Mask& mask, Count devices, TileShape tile, Count chunk, Tiling tiling) {
  check_balanced_layout(mask, devices, chunk);
  const Count n = mask.seq_len();
  const Count c = n / devices;
  Pricing pricing(mask, tile, tiling);
  // Blocks of lcm(TQ, TK) keep query and key tiles whole; a block longer than a device's share
  // cannot be dealt, so the query tile serves then.
  const Count lcm = std::lcm(tile.query, tile.key);
  const Count block = lcm <= c ? lcm : std::min(tile.query, c);
  // When B does not divide n / N, the sequence's last N x (n / N mod B) tokens are cut into one
  // run per device, pinned there: last in every device's local order, each starts a local tile
  // (under varlen, each document's part of it does) and shifts no other tile. The rest (the body)
  // is dealt in whole blocks. Under varlen that needs the body to end on its document's block
  // grid (it does when every document is padded to a multiple of B, as --pad-documents does for
  // 2N >= B); otherwise there is no tail and a device's share may end inside a block. (A longer
  // tail that would end the body on the grid, tried, cut long documents into runs whose reads
  // crowd a few rounds: worse than the inexact cut.)
  const Position body = [&] {
    const Position cut = n - devices * (c % block);
    if (cut == n) return n;
    return (cut - pricing.origin(cut)) % block == 0 ? cut : n;
  }();
  const Count fragment = (n - body) / devices;
  pricing.set_tail(body, fragment);
  const std::vector<Position> blocks = block_starts(pricing, block, body);
  Assignment tail(devices);
  for (Count d = 0; fragment > 0 && d < devices; ++d) {
    const Piece run{body + d * fragment, fragment, pricing.cost(body + d * fragment, fragment)};
    tail.pinned[static_cast<size_t>(d)].push_back(run);
    tail.load[static_cast<size_t>(d)] += run.cost;
  }

  // Every document's blocks (those starting in it; a causal or window mask is one document) and
  // the tiles its queries compute.
  const std::vector<Position> whole{0, n};
  const auto& documents = mask.kind() == MaskKind::documents ? mask.document_starts() : whole;
  std::vector<size_t> first_block;
  for (const Position start : documents) {
    first_block.push_back(static_cast<size_t>(std::lower_bound(blocks.begin(), blocks.end(), start) - blocks.begin()));
  }
  std::vector<Count> cost_before{0};  // prefix sums of block costs
  for (size_t b = 0; b < blocks.size(); ++b) {
    const Position end = b + 1 < blocks.size() ? blocks[b + 1] : body;
    cost_before.push_back(cost_before.back() + pricing.cost(blocks[b], end - blocks[b]));
  }
  const double bound = static_cast<double>(cost_before.back()) / static_cast<double>(devices);

  // Piece sizes tried, in blocks: the one asked for, or halvings of a device's share down to one
  // block (a few large pieces keep documents whole; small ones balance finer). Documents heavier
  // than a fraction of a device's bound are spread zigzag over every device instead (when they
  // have a block for each of the 2N chunks): kept whole they would not fit, and cut into a few
  // pieces their cross-device work would fall on a few rounds of a few devices.
  std::vector<Count> sizes;
  if (chunk > 0) {
    sizes.push_back(std::max<Count>(1, chunk / block));
  } else {
    // One sequence (causal, window): every boundary is crossed alike, so small pieces only add
    // cross-device work; a device's share down to a quarter of it is enough.
    const Count whole_share = std::max<Count>(1, c / block);
    const Count smallest = mask.kind() == MaskKind::documents ? 1 : std::max<Count>(1, whole_share / 4);
    for (Count s = whole_share; s >= smallest; s /= 2) sizes.push_back(s);
  }
  struct Candidate {
    Assignment assignment;
    Count chunk_tokens;
    RingCost cost;
    Count reads = 0;  // pieces its query tiles' keys span: at least the size of its RingGraph
  };
  std::vector<Candidate> candidates;
  // A varlen kernel takes one cu_seqlens entry per piece of a document: candidates that cut a
  // document into more pieces than doc-zigzag's 2N (plus the tail's N runs where there is a tail)
  // are not proposed (unless nothing else is).
  const bool bounded_pieces = tiling_matters(tiling, mask.kind());
  const Count most_pieces = (fragment > 0 ? 3 : 2) * devices;
  std::vector<Candidate> unbounded;
  // Proposes a, and a with its devices renumbered; returns where a is among the candidates, if
  // it is proposed.
  const auto consider = [&](Assignment a, Count chunk_tokens) -> std::optional<size_t> {
    if (bounded_pieces && most_pieces_of_a_document(pricing, a) > most_pieces) {
      if (candidates.empty() && unbounded.empty()) {
        unbounded.push_back({std::move(a), chunk_tokens, {}});
      }
      return std::nullopt;
    }
    const size_t first = candidates.size();
    // And its devices numbered in sequence order, where that is another numbering.
    const std::vector<size_t> order = ring_order(a);
    std::optional<Assignment> ordered;
    if (!std::ranges::is_sorted(order)) ordered = renumbered(a, order);
    for (Assignment* each : {&a, ordered ? &*ordered : nullptr}) {
      if (each == nullptr) continue;
      const PairWork pair = pair_work(pricing, *each);
      candidates.push_back({std::move(*each), chunk_tokens, cost_of(pair, devices), pair.reads});
    }
    return first;
  };
  std::optional<RingCost> round_robin;  // PyTorch's balancer of the same blocks, where priced
  std::optional<size_t> round_robin_at;  // and where it is among the candidates, where proposed
  std::vector<std::vector<bool>> spreads_tried;
  // Which documents are spread: those costing more than `heavy` of a device's share (0: none;
  // 1e-9: every one that can be), with or without `head`: where a document may be cut into any
  // number of pieces, the blocks 2N chunks cannot share evenly, its first (the cheapest), can be
  // left to the pieces, so that the chunks are of one length and every device's pair of them
  // costs the same (the uneven chunks of one long document cost its devices up to a block of its
  // far end). Which is better depends on how the other pieces fill the rounds: both are tried.
  struct Spread {
    double heavy;
    bool head;
  };
  std::vector<Spread> spreads{{0.0, false}, {1e-9, false}, {0.25, false}, {0.5, false}, {1.0, false}};
  if (!bounded_pieces) {
    for (const double heavy : {1e-9, 0.25, 0.5, 1.0}) spreads.push_back({heavy, true});
  }
  for (const auto [heavy, leave_head] : spreads) {
    Assignment spread_only = tail;
    std::vector<bool> spread(blocks.size(), false);
    for (size_t j = 0; heavy > 0 && j + 1 < documents.size(); ++j) {
      const size_t from = first_block[j];
      const size_t to = first_block[j + 1];
      const double cost = static_cast<double>(cost_before[to] - cost_before[from]);
      if (cost <= heavy * bound || static_cast<Count>(to - from) < 2 * devices) continue;
      const size_t head = leave_head ? (to - from) % static_cast<size_t>(2 * devices) : 0;
      if (!spread_zigzag(pricing, blocks, from + head, to, body, c, spread_only)) continue;
      std::fill(spread.begin() + static_cast<std::ptrdiff_t>(from + head), spread.begin() + static_cast<std::ptrdiff_t>(to), true);
    }
    if (std::find(spreads_tried.begin(), spreads_tried.end(), spread) != spreads_tried.end()) continue;
    spreads_tried.push_back(spread);
    const bool all_spread = std::find(spread.begin(), spread.end(), false) == spread.end();
    for (const Count size : sizes) {
      if (all_spread && size != sizes.front()) break;  // nothing left to cut
      Assignment a = spread_only;
      deal(pricing, cut_pieces(pricing, blocks, spread, body, size), c, block, a);
      refine(pricing, a, block);
      consider(std::move(a), size * block);
    }
  }
  // Layouts cut on the sequence's block grid are priced exactly where that grid is the tiling's:
  // under fixed tiling, and under varlen when every document starts on it (documents padded to a
  // multiple of B). Two of them are candidates then.
  bool on_grid = true;
  for (size_t s = 0; s + 1 < pricing.segments().size(); ++s) on_grid = on_grid && pricing.segments()[s] % block == 0;
  // PyTorch's round robin of the same blocks (per document, or of the whole sequence under a
  // window): where it is the better start, the polish starts from it. Under a window it is often
  // the best there is (every device reads its neighbours' blocks alike, round after round). Under
  // a causal mask it is the zigzag of blocks the spread candidates already are.
  if (on_grid && (mask.kind() == MaskKind::documents || mask.kind() == MaskKind::window)) {
    const Layout ptrr = ptrr_layout(mask, devices, block);
    Assignment a(devices);
    for (Count d = 0; d < devices; ++d) {
      // Its runs of consecutive positions, cut where the tail starts.
      const auto add = [&](Position begin, Position end) {
        const bool in_tail = begin >= body;
        const Piece piece{begin, end - begin,
                          pricing.cost(begin, end - begin)};
        (in_tail ? a.pinned : a.owned)[static_cast<size_t>(d)].push_back(piece);
        a.load[static_cast<size_t>(d)] += piece.cost;
      };
      Position begin = ptrr.position(d, 0);
      for (Count l = 1; l <= c; ++l) {
        const Position p = l < c ? ptrr.position(d, l) : -1;
        if (p == ptrr.position(d, l - 1) + 1 && p != body) continue;
        add(begin, ptrr.position(d, l - 1) + 1);
        begin = p;
      }
    }
    round_robin = cost_of(pricing, a);  // the bar, whether or not it is proposed
    round_robin_at = consider(std::move(a), block);
  }

  // Contiguous itself (every device one run of the body, in sequence order): under a window, or
  // short documents, it keeps each block's readers on the next devices, round after round.
  if (on_grid) {
    Assignment a = tail;
    const Count share = body / devices;
    for (Count d = 0; d < devices; ++d) {
      const Piece run{d * share, share, pricing.cost(d * share, share)};
      a.owned[static_cast<size_t>(d)].push_back(run);
      a.load[static_cast<size_t>(d)] += run.cost;
    }
    consider(std::move(a), share);
  }

  if (candidates.empty()) {
    unbounded.front().cost = cost_of(pricing, unbounded.front().assignment);
    candidates.push_back(std::move(unbounded.front()));
  }
  // The busiest device first (a ring without a barrier waits for it): among the candidates within
  // kBusiestSlack of the least busiest, the lowest lockstep (then the first tried). The few best,
  // and the round robin (the bar, below), then trade pieces of equal length for a lower lockstep
  // and have their devices numbered for it.
  const auto within = [](Count x, Count reference) {
    return x <= reference + static_cast<Count>(static_cast<double>(reference) * kBusiestSlack);
  };
  Count least_busiest = candidates.front().cost.busiest;
  for (const Candidate& each : candidates) least_busiest = std::min(least_busiest, each.cost.busiest);
  std::vector<Candidate*> feasible;
  for (Candidate& each : candidates) {
    if (within(each.cost.busiest, least_busiest)) feasible.push_back(&each);
  }
  const auto lower_lockstep = [](const Candidate* x, const Candidate* y) { return x->cost.lockstep < y->cost.lockstep; };
  std::stable_sort(feasible.begin(), feasible.end(), lower_lockstep);
  // A candidate and its renumbering often cost the same: polishing both would polish one.
  const auto same_cost = [](const Candidate* x, const Candidate* y) {
    return x->cost.busiest == y->cost.busiest && x->cost.lockstep == y->cost.lockstep && x->cost.ring == y->cost.ring;
  };
  feasible.erase(std::unique(feasible.begin(), feasible.end(), same_cost), feasible.end());
  feasible.resize(std::min<size_t>(feasible.size(), kPolished));
  std::vector<size_t> identity(static_cast<size_t>(devices));
  std::iota(identity.begin(), identity.end(), size_t{0});
  std::vector<const Candidate*> polished;
  const auto polish = [&](Candidate* each) {
    if (std::ranges::find(polished, each) != polished.end()) return;
    polished.push_back(each);
    // The lockstep is at least the busiest device's work: a candidate there has nothing to gain.
    if (each->cost.lockstep <= each->cost.busiest) return;
    std::vector<Count> work;
    if (each->reads <= kMostReadsPolished) {
      RingGraph graph(pricing, each->assignment);
      graph.improve(kMovesTried);
      // The graph holds the candidate's work either way (it keeps a move only when the lockstep drops).
      work = graph.pair_work();
      if (graph.lockstep() < each->cost.lockstep) {
        each->assignment = graph.assignment();
        each->cost = numbered_cost(work, identity);
      }
    } else {
      work = pair_work(pricing, each->assignment).work;
    }
    // Then the devices are numbered for the lockstep: the same loads, other rounds.
    const std::vector<size_t> order = lockstep_numbering(work, identity.size());
    if (const RingCost numbered = numbered_cost(work, order); numbered.lockstep < each->cost.lockstep) {
      each->assignment = renumbered(each->assignment, order);
      each->cost = numbered;
    }
  };
  for (Candidate* each : feasible) polish(each);
  Candidate* best = *std::min_element(feasible.begin(), feasible.end(), lower_lockstep);
  // Then the lowest lockstep among the candidates no slower than that pick without a barrier
  // (free links; within kBusiestSlack) wins, a little busier or not: faster however the ring runs
  // (a window read by the next device only: contiguous is 0.8 % busier than the least busy
  // layouts, whose lockstep is 1.6x its own).
  const RingCost pick = best->cost;
  const auto no_busier_than_the_bar = [&](const Candidate& each) {
    return !round_robin || within(each.cost.busiest, round_robin->busiest);
  };
  const auto lower_lockstep_as_fast = [&](bool capped) {
    for (Candidate& each : candidates) {
      if ((!capped || no_busier_than_the_bar(each)) && within(each.cost.ring, pick.ring) &&
          each.cost.lockstep < best->cost.lockstep) {
        best = &each;
      }
    }
  };
  lower_lockstep_as_fast(true);
  // What users have already is the bar: PyTorch's round robin. Where it is a candidate (fixed
  // tiling, windows), the pick is never busier by more than kBusiestSlack, nor slower in lockstep
  // where that can be helped: a pick that misses either takes the lowest lockstep among the
  // candidates no busier than the bar, the round robin polished among them (only then: its many
  // small pieces make it the dearest to polish). A pick 1-2 % busier with a third less lockstep
  // (documents of 2000 tokens on 32-40 devices) gives way. Where it is not (varlen, whose calls
  // could not take its pieces), beating its lockstep comes first.
  if (round_robin_at && (!no_busier_than_the_bar(*best) || best->cost.lockstep >= round_robin->lockstep)) {
    polish(&candidates[*round_robin_at]);
    for (Candidate& each : candidates) {
      if (no_busier_than_the_bar(each) && (!no_busier_than_the_bar(*best) || each.cost.lockstep < best->cost.lockstep)) {
        best = &each;
      }
    }
  } else if (round_robin && !round_robin_at && best->cost.lockstep >= round_robin->lockstep) {
    lower_lockstep_as_fast(false);
  }

  // Each device holds its pieces in sequence order (long runs keep the work model fast).
  std::vector<std::vector<Position>> positions(static_cast<size_t>(devices));
  Count total = 0;
  for (Count d = 0; d < devices; ++d) {
    auto& mine = best->assignment.owned[static_cast<size_t>(d)];
    const auto& pinned = best->assignment.pinned[static_cast<size_t>(d)];
    mine.insert(mine.end(), pinned.begin(), pinned.end());
    std::sort(mine.begin(), mine.end(), [](const Piece& x, const Piece& y) { return x.begin < y.begin; });
    auto& out = positions[static_cast<size_t>(d)];
    out.reserve(static_cast<size_t>(c));
    for (const Piece& piece : mine) {
      for (Position p = piece.begin; p < piece.end(); ++p) out.push_back(p);
      total += piece.cost;
    }
  }
  const std::string name = chunk > 0 ? fmt::format("balanced:{}", chunk) : "balanced";
  BalanceResult result{Layout::from_blocks(positions, n, name, LayoutKind::balanced), best->chunk_tokens,
                       best->cost.busiest, static_cast<double>(total) / static_cast<double>(devices), best->cost.lockstep};
  // Under varlen doc-zigzag is the bar, both layouts counted exactly (the pick's pieces may be off
  // the grid where the tiling is the documents'): a pick busier or slower in lockstep gives way
  // to it (two long documents on 8 devices whose shares end inside a block: every candidate cut a
  // document into more pieces than a varlen call takes but the first, 1.9x doc-zigzag's busiest).
  if (doc_zigzag_is_the_bar(mask, devices, tiling)) {
    const Layout bar = doc_zigzag_layout(mask, devices);
    const WorkMatrix bar_tiles = exact_tiles(bar, mask, tile, tiling);
    const RingCost bar_cost = ring_cost(bar_tiles);
    const RingCost pick_cost = ring_cost(exact_tiles(result.layout, mask, tile, tiling));
    if (pick_cost.busiest > bar_cost.busiest || pick_cost.lockstep > bar_cost.lockstep) {
      for (Count d = 0; d < devices; ++d) {
        auto& out = positions[static_cast<size_t>(d)];
        for (Count l = 0; l < c; ++l) out[static_cast<size_t>(l)] = bar.position(d, l);
      }
      Count longest = 0;
      for (size_t j = 0; j + 1 < mask.document_starts().size(); ++j) {
        longest = std::max(longest, (mask.document_starts()[j + 1] - mask.document_starts()[j]) / (2 * devices));
      }
      result = BalanceResult{Layout::from_blocks(positions, n, name, LayoutKind::balanced), longest, bar_cost.busiest,
                             static_cast<double>(bar_tiles.total()) / static_cast<double>(devices), bar_cost.lockstep};
    }
  }
  return result;
}

}  // namespace stripesim::model
