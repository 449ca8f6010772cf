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
  std::vector<Count> weight(static_cast<size_t>(query_tiles));
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
      if (c == TileClass::partial) partial_tiles.push_back(static_cast<std::int32_t>(kt) | kPartialTile);
    }
    schedule.entries.insert(schedule.entries.end(), partial_tiles.begin(), partial_tiles.end());
    schedule.partial += static_cast<Count>(partial_tiles.size());
    // A partial tile costs about two full ones (the mask per element); exact weights do not
    // matter, only that heavier rows start first.
    const Count row_tiles = static_cast<Count>(schedule.entries.size()) - schedule.offsets.back();
    weight[static_cast<size_t>(qt)] = 2 * row_tiles + static_cast<Count>(partial_tiles.size());
    schedule.offsets.push_back(static_cast<std::int32_t>(schedule.entries.size()));
  }
  schedule.order.resize(static_cast<size_t>(query_tiles));
  std::iota(schedule.order.begin(), schedule.order.end(), 0);
  std::stable_sort(schedule.order.begin(), schedule.order.end(), [&](std::int32_t a, std::int32_t b) {
    return weight[static_cast<size_t>(a)] > weight[static_cast<size_t>(b)];
  });
  return schedule;
}

std::vector<std::int32_t> TileSchedule::packed() const {
  std::vector<std::int32_t> image(order);
  image.insert(image.end(), offsets.begin(), offsets.end());
  image.insert(image.end(), entries.begin(), entries.end());
  return image;
}

}  // namespace stripesim::validate
