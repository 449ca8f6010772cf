// The flash kernel's tile schedule (validate/tile_schedule.hpp): for every (round, device) of a
// ring, the key tiles it lists and the ones it marks partial are exactly the work model's
// active and partial tiles, checked three ways: totals against count_work for every layout and
// mask (short last tiles included), each entry against a brute-force pair test, and the list's
// own invariants (full tiles before partial ones, heaviest query tiles first); and the backward
// kernel's key-tile-major copy of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>

#include "stripesim/model/work/work_model.hpp"
#include "stripesim/validate/ring_problem.hpp"
#include "stripesim/validate/tile_schedule.hpp"

namespace stripesim::validate {
namespace {

RingCase schedule_case(std::string layout, std::string mask, model::TileShape tile) {
  RingCase c;
  c.seq_len = 960;
  c.devices = 4;  // c = 240: tiles of 64 or 48 leave a short last tile
  c.layout = std::move(layout);
  c.mask = std::move(mask);
  c.tile = tile;
  return c;
}

TileSchedule schedule_of(const RingProblem& problem, Count round, Count device) {
  const DeviceShard& queries = problem.shard(device);
  const DeviceShard& keys = problem.shard(model::kv_source(device, round, problem.ring_case().devices));
  return build_tile_schedule(queries.lowest_key, queries.highest_key, keys.positions, problem.ring_case().tile);
}

TEST(TileSchedule, ListsExactlyTheWorkModelsActiveAndPartialTiles) {
  for (const char* layout : {"contiguous", "striped", "zigzag", "block-striped:16"}) {
    for (const char* mask : {"causal", "bidirectional", "window:100", "documents:100,500,360"}) {
      for (const model::TileShape tile : {model::TileShape{64, 64}, model::TileShape{32, 48}}) {
        const RingProblem problem(schedule_case(layout, mask, tile));
        const model::Work work = model::count_work(problem.layout(), problem.mask(), tile, 1);
        for (Count r = 0; r < 4; ++r) {
          for (Count d = 0; d < 4; ++d) {
            const TileSchedule s = schedule_of(problem, r, d);
            EXPECT_EQ(s.active(), work.active_tiles.at(r, d)) << layout << " " << mask << " r" << r << " d" << d;
            EXPECT_EQ(s.partial, work.partial_tiles.at(r, d)) << layout << " " << mask << " r" << r << " d" << d;
          }
        }
      }
    }
  }
}

TEST(TileSchedule, EveryEntryAgreesWithABruteForcePairTest) {
  const model::TileShape tile{32, 48};
  for (const char* layout : {"striped", "zigzag"}) {
    for (const char* mask : {"causal", "documents:100,500,360"}) {
      const RingProblem problem(schedule_case(layout, mask, tile));
      for (Count r = 0; r < 4; ++r) {
        const Count d = 2;
        const DeviceShard& q = problem.shard(d);
        const DeviceShard& k = problem.shard(model::kv_source(d, r, 4));
        const TileSchedule s = schedule_of(problem, r, d);
        const Count c = problem.block_size();
        for (Count qt = 0; qt * tile.query < c; ++qt) {
          std::vector<std::int32_t> expected;  // full first, then partial, in key tile order
          std::vector<std::int32_t> partial;
          for (Count kt = 0; kt * tile.key < c; ++kt) {
            bool allowed = false, masked = false;
            for (Count i = qt * tile.query; i < std::min(c, (qt + 1) * tile.query); ++i) {
              for (Count j = kt * tile.key; j < std::min(c, (kt + 1) * tile.key); ++j) {
                const bool a = q.lowest_key[i] <= k.positions[j] && k.positions[j] <= q.highest_key[i];
                allowed |= a;
                masked |= !a;
              }
            }
            if (allowed && !masked) expected.push_back(static_cast<std::int32_t>(kt));
            if (allowed && masked) partial.push_back(static_cast<std::int32_t>(kt) | kPartialTile);
          }
          expected.insert(expected.end(), partial.begin(), partial.end());
          const std::vector<std::int32_t> listed(s.entries.begin() + s.offsets[static_cast<size_t>(qt)],
                                                 s.entries.begin() + s.offsets[static_cast<size_t>(qt) + 1]);
          EXPECT_EQ(listed, expected) << layout << " " << mask << " round " << r << " query tile " << qt;
        }
      }
    }
  }
}

TEST(TileSchedule, HeaviestQueryTilesStartFirst) {
  const RingProblem problem(schedule_case("contiguous", "causal", {64, 64}));
  const TileSchedule s = schedule_of(problem, 0, 3);  // the last device's own block: a triangle
  ASSERT_EQ(s.order.size(), 4u);                       // ceil(240 / 64) query tiles
  std::vector<std::int32_t> sorted = s.order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::int32_t>{0, 1, 2, 3}));
  // The triangle's last query tile reaches every key tile, the first only its own.
  EXPECT_EQ(s.order.front(), 3);
  EXPECT_EQ(s.order.back(), 0);
  auto weight = [&](std::int32_t qt) { return s.offsets[static_cast<size_t>(qt) + 1] - s.offsets[static_cast<size_t>(qt)]; };
  for (size_t i = 1; i < s.order.size(); ++i) EXPECT_GE(weight(s.order[i - 1]), weight(s.order[i]));
  EXPECT_EQ(s.active(), 10);  // 1 + 2 + 3 + 4 key tiles
  EXPECT_EQ(s.partial, 4);  // the diagonal
}

// The backward kernel's schedule, key tile by key tile: the same (query tile, key tile, class)
// triples as the forward's, full tiles first in each row, the busiest key tiles first.
TEST(TileSchedule, ByKeyTileListsTheSameTilesKeyTileByKeyTile) {
  for (const char* layout : {"contiguous", "striped", "zigzag"}) {
    for (const char* mask : {"causal", "window:100", "documents:100,500,360"}) {
      const model::TileShape tile{32, 48};
      const RingProblem problem(schedule_case(layout, mask, tile));
      const Count key_tiles = (problem.block_size() + tile.key - 1) / tile.key;
      for (Count r = 0; r < 4; ++r) {
        const TileSchedule by_query = schedule_of(problem, r, 1);
        const TileSchedule by_key = by_key_tile(by_query, key_tiles);
        ASSERT_EQ(by_key.offsets.size(), static_cast<size_t>(key_tiles) + 1);
        EXPECT_EQ(by_key.active(), by_query.active());
        EXPECT_EQ(by_key.partial, by_query.partial);
        std::set<std::tuple<std::int32_t, std::int32_t, bool>> forward, backward;
        for (size_t qt = 0; qt + 1 < by_query.offsets.size(); ++qt) {
          for (auto e = by_query.offsets[qt]; e < by_query.offsets[qt + 1]; ++e) {
            const std::int32_t entry = by_query.entries[static_cast<size_t>(e)];
            forward.insert({static_cast<std::int32_t>(qt), entry & ~kPartialTile, (entry & kPartialTile) != 0});
          }
        }
        for (size_t kt = 0; kt + 1 < by_key.offsets.size(); ++kt) {
          bool seen_partial = false;
          for (auto e = by_key.offsets[kt]; e < by_key.offsets[kt + 1]; ++e) {
            const std::int32_t entry = by_key.entries[static_cast<size_t>(e)];
            const bool partial = (entry & kPartialTile) != 0;
            EXPECT_FALSE(seen_partial && !partial) << "full tiles come first";
            seen_partial |= partial;
            backward.insert({entry & ~kPartialTile, static_cast<std::int32_t>(kt), partial});
          }
        }
        EXPECT_EQ(backward, forward) << layout << " " << mask << " round " << r;
        ASSERT_EQ(by_key.order.size(), static_cast<size_t>(key_tiles));
        std::vector<std::int32_t> sorted = by_key.order;
        std::sort(sorted.begin(), sorted.end());
        for (Count kt = 0; kt < key_tiles; ++kt) EXPECT_EQ(sorted[static_cast<size_t>(kt)], kt);
        // The busiest key tiles first: by their tiles' work, a partial tile weighing more than a full one.
        const auto work = [&](std::int32_t kt) {
          Count sum = 0;
          for (auto e = by_key.offsets[static_cast<size_t>(kt)]; e < by_key.offsets[static_cast<size_t>(kt) + 1]; ++e) {
            sum += (by_key.entries[static_cast<size_t>(e)] & kPartialTile) != 0 ? 3 : 2;
          }
          return sum;
        };
        for (size_t i = 1; i < by_key.order.size(); ++i) {
          EXPECT_GE(work(by_key.order[i - 1]), work(by_key.order[i])) << layout << " " << mask << " round " << r;
        }
      }
    }
  }
  EXPECT_THROW((void)by_key_tile(schedule_of(RingProblem(schedule_case("zigzag", "causal", {32, 48})), 0, 0), 1),
               std::invalid_argument);
}

}  // namespace
}  // namespace stripesim::validate
