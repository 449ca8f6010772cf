#include "balance_assignment.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <queue>

namespace stripesim::model::balance {
namespace {

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

}  // namespace

std::vector<PlacedPiece> pieces_in_order(const Assignment& a) {
  std::vector<PlacedPiece> all;
  for (size_t d = 0; d < a.owned.size(); ++d) {
    for (const Piece& p : a.owned[d]) all.push_back({p, static_cast<Count>(d), false});
    for (const Piece& p : a.pinned[d]) all.push_back({p, static_cast<Count>(d), true});
  }
  std::sort(all.begin(), all.end(), [](const PlacedPiece& x, const PlacedPiece& y) { return x.piece.begin < y.piece.begin; });
  return all;
}

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

void refine(const Pricing& pricing, Assignment& a, Count block) {
  const TileShape tile = pricing.tile();
  const Count max_crossing = 2 * tiles_covering(block, tile.query) * tiles_covering(block, tile.key);
  const auto devices = a.load.size();
  // Each device's offers, priced once and again only when a swap changes its pieces: a swap
  // touches two devices, so repricing all N every iteration made refining O(N^2) pricings.
  std::vector<std::optional<std::vector<Offer>>> offered(devices);
  const auto offers_of = [&](size_t d) -> const std::vector<Offer>& {
    if (!offered[d]) offered[d] = offers(pricing, a.owned[d], block, max_crossing);
    return *offered[d];
  };
  for (size_t iteration = 0; iteration < 64 * devices; ++iteration) {
    const auto busiest = static_cast<size_t>(std::max_element(a.load.begin(), a.load.end()) - a.load.begin());
    const Count top = a.load[busiest];
    const std::vector<Offer>& mine = offers_of(busiest);
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
      for (const Offer& y : offers_of(e)) {
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
    offered[busiest].reset();
    offered[best->device].reset();
    a.load[busiest] += receive.cost - give.cost;
    a.load[best->device] += give.cost - receive.cost;
  }
}

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

Assignment renumbered(const Assignment& a, const std::vector<size_t>& order) {
  Assignment out(static_cast<Count>(order.size()));
  for (size_t rank = 0; rank < order.size(); ++rank) {
    out.owned[rank] = a.owned[order[rank]];
    out.pinned[rank] = a.pinned[order[rank]];
    out.load[rank] = a.load[order[rank]];
  }
  return out;
}

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

}  // namespace stripesim::model::balance
