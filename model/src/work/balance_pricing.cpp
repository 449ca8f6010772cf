#include "balance_pricing.hpp"

#include <cstdlib>

namespace stripesim::model::balance {

std::vector<Position> block_starts(const Pricing& pricing, Count block, Position end) {
  std::vector<Position> starts;
  const auto& segments = pricing.segments();
  for (size_t s = 0; s + 1 < segments.size() && segments[s] < end; ++s) {
    for (Position p = segments[s]; p < std::min(end, segments[s + 1]); p += block) starts.push_back(p);
  }
  return starts;
}

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

}  // namespace stripesim::model::balance
