#include "stripesim/validate/tile_schedule.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace stripesim::validate {
namespace {

using model::Count;
using model::Position;

struct KeyTile {
  std::vector<Position> sorted;  // its positions, sorted: "any key in [lo, hi]" by binary search
  Position min = 0, max = 0;
};

struct QueryBounds {
  Position low_min, low_max, high_min, high_max;
};

enum class TileClass { inactive, full, partial };

TileClass classify(const QueryBounds& b, const KeyTile& keys, std::span<const Position> lowest,
                   std::span<const Position> highest) {
  if (keys.max < b.low_min || keys.min > b.high_max) return TileClass::inactive;
  if (keys.min >= b.low_max && keys.max <= b.high_min) return TileClass::full;
  // The bounds cannot decide: query by query.
  bool any_allowed = false;
  bool any_masked = false;
  for (size_t i = 0; i < lowest.size(); ++i) {
    const auto first = std::lower_bound(keys.sorted.begin(), keys.sorted.end(), lowest[i]);
    any_allowed |= first != keys.sorted.end() && *first <= highest[i];
    any_masked |= keys.min < lowest[i] || keys.max > highest[i];
  }
  if (!any_allowed) return TileClass::inactive;
  return any_masked ? TileClass::partial : TileClass::full;
}

// Launch order: heaviest rows first, so that the longest thread blocks start in the first wave and
// do not finish last. A partial tile weighs 3 to a full tile's 2 (the mask per element); exact
// weights do not matter, only that heavier rows start first.
std::vector<std::int32_t> heaviest_first(const std::vector<std::int32_t>& offsets, const std::vector<std::int32_t>& entries) {
  const size_t rows = offsets.size() - 1;
  std::vector<Count> weight(rows);
  for (size_t row = 0; row < rows; ++row) {
    for (auto e = offsets[row]; e < offsets[row + 1]; ++e) weight[row] += entry_is_partial(entries[static_cast<size_t>(e)]) ? 3 : 2;
  }
  std::vector<std::int32_t> order(rows);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int32_t a, std::int32_t b) { return weight[static_cast<size_t>(a)] > weight[static_cast<size_t>(b)]; });
  return order;
}

}  // namespace

TileSchedule build_tile_schedule(std::span<const Position> lowest, std::span<const Position> highest,
                                 std::span<const Position> key_positions, model::TileShape tile) {
  if (lowest.size() != highest.size() || tile.query <= 0 || tile.key <= 0) {
    throw std::invalid_argument("build_tile_schedule: query intervals of unequal length or an empty tile");
  }
  const auto queries = static_cast<Count>(lowest.size());
  const auto keys = static_cast<Count>(key_positions.size());
  const Count query_tiles = (queries + tile.query - 1) / tile.query;
  const Count key_tiles = (keys + tile.key - 1) / tile.key;

  std::vector<KeyTile> key_summaries(static_cast<size_t>(key_tiles));
  for (Count kt = 0; kt < key_tiles; ++kt) {
    KeyTile& k = key_summaries[static_cast<size_t>(kt)];
    const Count begin = kt * tile.key;
    const Count end = std::min(keys, begin + tile.key);
    k.sorted.assign(key_positions.begin() + begin, key_positions.begin() + end);
    std::sort(k.sorted.begin(), k.sorted.end());
    k.min = k.sorted.front();
    k.max = k.sorted.back();
  }

  TileSchedule schedule;
  schedule.offsets.reserve(static_cast<size_t>(query_tiles + 1));
  schedule.offsets.push_back(0);
  std::vector<std::int32_t> partial_tiles;
  for (Count qt = 0; qt < query_tiles; ++qt) {
    const Count begin = qt * tile.query;
    const Count end = std::min(queries, begin + tile.query);
    const auto low = lowest.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
    const auto high = highest.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
    const auto [low_min, low_max] = std::minmax_element(low.begin(), low.end());
    const auto [high_min, high_max] = std::minmax_element(high.begin(), high.end());
    const QueryBounds bounds{*low_min, *low_max, *high_min, *high_max};
    partial_tiles.clear();
    for (Count kt = 0; kt < key_tiles; ++kt) {
      const TileClass c = classify(bounds, key_summaries[static_cast<size_t>(kt)], low, high);
      if (c == TileClass::full) schedule.entries.push_back(static_cast<std::int32_t>(kt));
      if (c == TileClass::partial) partial_tiles.push_back(tile_entry(static_cast<std::int32_t>(kt), true));
    }
    schedule.entries.insert(schedule.entries.end(), partial_tiles.begin(), partial_tiles.end());
    schedule.partial += static_cast<Count>(partial_tiles.size());
    schedule.offsets.push_back(static_cast<std::int32_t>(schedule.entries.size()));
  }
  schedule.order = heaviest_first(schedule.offsets, schedule.entries);
  return schedule;
}

TileSchedule by_key_tile(const TileSchedule& by_query, Count key_tiles) {
  // Counting sort of the entries by key tile, full ones first: two passes over the entries.
  std::vector<std::int32_t> full(static_cast<size_t>(key_tiles), 0), partial(static_cast<size_t>(key_tiles), 0);
  for (const std::int32_t e : by_query.entries) {
    const auto kt = static_cast<size_t>(entry_tile(e));
    if (kt >= full.size()) throw std::invalid_argument("by_key_tile: an entry names a key tile beyond key_tiles");
    ++(entry_is_partial(e) ? partial : full)[kt];
  }
  TileSchedule out;
  out.partial = by_query.partial;
  out.offsets.assign(static_cast<size_t>(key_tiles) + 1, 0);
  for (size_t kt = 0; kt < full.size(); ++kt) out.offsets[kt + 1] = out.offsets[kt] + full[kt] + partial[kt];
  out.entries.assign(by_query.entries.size(), 0);
  std::vector<std::int32_t> next_full(out.offsets.begin(), out.offsets.end() - 1), next_partial(next_full);
  for (size_t kt = 0; kt < full.size(); ++kt) next_partial[kt] += full[kt];
  for (size_t qt = 0; qt + 1 < by_query.offsets.size(); ++qt) {
    for (auto e = by_query.offsets[qt]; e < by_query.offsets[qt + 1]; ++e) {
      const std::int32_t entry = by_query.entries[static_cast<size_t>(e)];
      const auto kt = static_cast<size_t>(entry_tile(entry));
      const bool is_partial = entry_is_partial(entry);
      out.entries[static_cast<size_t>((is_partial ? next_partial : next_full)[kt]++)] =
          tile_entry(static_cast<std::int32_t>(qt), is_partial);
    }
  }
  out.order = heaviest_first(out.offsets, out.entries);
  return out;
}

std::vector<std::int32_t> TileSchedule::packed() const {
  std::vector<std::int32_t> image(order);
  image.insert(image.end(), offsets.begin(), offsets.end());
  image.insert(image.end(), entries.begin(), entries.end());
  return image;
}

}  // namespace stripesim::validate
