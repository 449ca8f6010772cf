#include "balance_ring_cost.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

#include "stripesim/model/work/metrics.hpp"

namespace stripesim::model::balance {

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

WorkMatrix exact_tiles(const Layout& layout, const Mask& mask, TileShape tile, Tiling tiling) {
  return count_work(layout, mask, tile, 1, WorkDetail::totals, tiling).active_tiles;
}

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

std::vector<size_t> lockstep_numbering(const std::vector<Count>& work, size_t devices) {
  std::vector<size_t> order(devices);
  std::iota(order.begin(), order.end(), size_t{0});
  if (devices < 3) return order;  // two devices meet in the same rounds whatever their numbers
  // Ring positions as the work model numbers them (kv_source, kv_holder), in this loop's size_t.
  const auto ring = static_cast<Count>(devices);
  const auto source_of = [ring](size_t d, size_t r) {
    return static_cast<size_t>(kv_source(static_cast<DeviceId>(d), static_cast<Count>(r), ring));
  };
  const auto holder_of = [ring](size_t source, size_t r) {
    return static_cast<size_t>(kv_holder(static_cast<DeviceId>(source), static_cast<Count>(r), ring));
  };
  // The work in number order, by query number (rows) and by key number (the transpose): a swap of
  // x and y changes, round by round, cells of rows x and y (their queries) and of columns x and y
  // (the queries that meet their pieces), read as rows x and y of the two matrices, each in order
  // over the rounds (d - r, holder s + r). Read through `order` instead, every round of a large
  // ring jumped about the work. A kept swap exchanges two rows and two columns of each.
  std::vector<Count> by_query = work;
  std::vector<Count> by_key(work.size());
  for (size_t q = 0; q < devices; ++q) {
    for (size_t k = 0; k < devices; ++k) by_key[k * devices + q] = work[q * devices + k];
  }
  const auto cell = [&](size_t d, size_t r) { return by_query[d * devices + source_of(d, r)]; };
  const auto swap_numbers = [&](std::vector<Count>& m, size_t x, size_t y) {
    std::swap_ranges(m.begin() + static_cast<std::ptrdiff_t>(x * devices), m.begin() + static_cast<std::ptrdiff_t>((x + 1) * devices),
                     m.begin() + static_cast<std::ptrdiff_t>(y * devices));
    for (size_t i = 0; i < devices; ++i) std::swap(m[i * devices + x], m[i * devices + y]);
  };
  // Each round lists its largest cells, largest first, and a floor no unlisted cell exceeds. A swap
  // changes at most 4 cells of a round, so with 5 listed the largest unchanged one is listed. After
  // a kept swap the changed cells leave the list and come back at their new values where they top
  // the floor; a round is read again only when fewer than 5 remain.
  constexpr size_t kKept = 8;
  constexpr size_t kNeeded = 5;
  constexpr Count kNothingUnlisted = std::numeric_limits<Count>::min();
  struct Top {
    std::array<std::pair<Count, size_t>, kKept> cells{};  // (work, query number), largest first
    size_t size = 0;
    Count floor = kNothingUnlisted;
    // Lists c in order; a cell that falls off the end lifts the floor.
    void insert(std::pair<Count, size_t> c) {
      size_t at = size < kKept ? size++ : kKept;
      if (at == kKept) {
        if (cells[kKept - 1].first >= c.first) {
          floor = std::max(floor, c.first);
          return;
        }
        floor = std::max(floor, cells[kKept - 1].first);
      }
      while (at > 0 && cells[at - 1].first < c.first) {
        if (at < kKept) cells[at] = cells[at - 1];
        --at;
      }
      cells[at] = c;
    }
  };
  std::vector<Top> top(devices);
  const auto rank_round = [&](size_t r) {
    Top t;
    for (size_t d = 0; d < devices; ++d) t.insert({cell(d, r), d});
    top[r] = t;
  };
  const auto changed_in = [&](size_t x, size_t y, size_t r) {
    return std::array<size_t, 4>{x, y, holder_of(x, r), holder_of(y, r)};
  };
  // After numbers x and y swapped: the round's changed cells at their new values.
  const auto rerank_changed = [&](size_t x, size_t y, size_t r) {
    // Each changed number once: x + r may be y, say.
    std::array<size_t, 4> changed = changed_in(x, y, r);
    std::ranges::sort(changed);
    const auto changed_end = std::unique(changed.begin(), changed.end());
    Top& t = top[r];
    const auto kept = std::remove_if(t.cells.begin(), t.cells.begin() + static_cast<std::ptrdiff_t>(t.size), [&](const auto& c) {
      return std::find(changed.begin(), changed_end, c.second) != changed_end;
    });
    t.size = static_cast<size_t>(kept - t.cells.begin());
    for (auto d = changed.begin(); d != changed_end; ++d) {
      if (const Count c = cell(*d, r); c > t.floor) t.insert({c, *d});
    }
    if (t.size < kNeeded && t.floor != kNothingUnlisted) rank_round(r);
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
        // The changed cells as they would be with x and y swapped, read from the matrices as they
        // are: number x's row is y's there, a column x or y the other's; the cell of query number
        // changed[2] (x + r), which meets x's pieces, is row x of the transpose at column x + r.
        const auto swapped = [x, y](size_t i) { return i == x ? y : i == y ? x : i; };
        const size_t row_x = y * devices;
        const size_t row_y = x * devices;
        Count sum = 0;
        for (size_t r = 0; r < devices && sum < best; ++r) {
          const std::array<size_t, 4> changed = changed_in(x, y, r);
          Count most = 0;
          for (size_t i = 0; i < top[r].size; ++i) {
            if (std::find(changed.begin(), changed.end(), top[r].cells[i].second) == changed.end()) {
              most = top[r].cells[i].first;
              break;
            }
          }
          most = std::max({most, by_query[row_x + swapped(source_of(x, r))], by_query[row_y + swapped(source_of(y, r))],
                           by_key[row_x + swapped(changed[2])], by_key[row_y + swapped(changed[3])]});
          sum += most;
        }
        if (sum < best) {
          best = sum;
          improved = true;
          std::swap(order[x], order[y]);
          swap_numbers(by_query, x, y);
          swap_numbers(by_key, x, y);
          for (size_t r = 0; r < devices; ++r) rerank_changed(x, y, r);
        }
      }
    }
  }
  return order;
}

}  // namespace stripesim::model::balance
