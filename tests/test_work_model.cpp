#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "brute_force.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/metrics.hpp"
#include "stripesim/model/work/pair_count.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::model {
namespace {

std::vector<Layout> all_layouts(Count n, Count N, std::mt19937_64& rng) {
  std::vector<Layout> layouts{Layout::contiguous(n, N), Layout::striped(n, N)};
  if (n % (2 * N) == 0) layouts.push_back(Layout::zigzag(n, N));
  const Count c = n / N;
  for (Count s = 2; s < c; ++s) {
    if (c % s == 0) {
      layouts.push_back(Layout::block_striped(n, N, s));
      break;
    }
  }
  std::vector<Position> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<Position>> blocks(static_cast<size_t>(N));
  for (Count i = 0; i < n; ++i) blocks[static_cast<size_t>(i / c)].push_back(order[static_cast<size_t>(i)]);
  layouts.push_back(Layout::permutation(blocks, n, "random"));
  // A permutation made of long runs in scrambled order (documents dealt to devices).
  std::vector<std::vector<Position>> runs(static_cast<size_t>(N));
  for (Count d = 0; d < N; ++d) {
    for (Count l = 0; l < c; ++l) runs[static_cast<size_t>(d)].push_back(((N - 1 - d) * c + (l + c / 2) % c));
  }
  layouts.push_back(Layout::permutation(runs, n, "rotated"));
  return layouts;
}

std::vector<Mask> all_masks(Count n, std::mt19937_64& rng) {
  std::vector<Mask> masks{Mask::causal(n), Mask::bidirectional(n),
                          Mask::window(n, std::uniform_int_distribution<Count>(1, n)(rng)), Mask::window(n, 1),
                          Mask::prefix(n, std::uniform_int_distribution<Count>(1, n)(rng)), Mask::prefix(n, n)};
  std::vector<Count> lengths;
  for (Count left = n; left > 0;) {
    const Count len = std::min(left, std::uniform_int_distribution<Count>(1, std::max<Count>(1, n / 3))(rng));
    lengths.push_back(len);
    left -= len;
  }
  masks.push_back(Mask::documents(n, lengths));
  // Sliding windows inside the documents: narrower than some documents, wider than others.
  const Count window = std::uniform_int_distribution<Count>(1, std::max<Count>(1, n / 4))(rng);
  masks.push_back(Mask::documents(n, lengths, window));
  // Padding at the end of some documents (none, some or all but one of their tokens), with and
  // without the window.
  std::vector<Count> padding;
  for (const Count len : lengths) {
    padding.push_back(std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? 0
                                                                        : std::uniform_int_distribution<Count>(0, len - 1)(rng));
  }
  masks.push_back(Mask::documents(n, lengths, 0, padding));
  masks.push_back(Mask::documents(n, lengths, window, padding));
  return masks;
}

// The mask as a test names it: a documents mask's window included.
std::string mask_label(const Mask& mask) {
  std::string label = mask.name();
  if (mask.kind() != MaskKind::documents) return label;
  if (mask.padded()) label += " padded";
  if (mask.windowed()) label += ":window=" + std::to_string(mask.window_width());
  return label;
}

// `got` counted with WorkDetail::query_tiles: its per-query-tile profiles (what the kernel time
// model schedules) must match enumeration too, (round, device) by (round, device).
void expect_same_work(const Work& got, const testing::BruteForceWork& want, const std::string& what) {
  EXPECT_EQ(got.unmasked_elements, want.work.unmasked_elements) << what;
  EXPECT_EQ(got.active_tiles, want.work.active_tiles) << what;
  EXPECT_EQ(got.partial_tiles, want.work.partial_tiles) << what;
  EXPECT_EQ(got.call_queries, want.work.call_queries) << what << ": a sliced call's queries";
  const Count devices = got.active_tiles.devices();
  for (Count r = 0; r < devices; ++r) {
    for (Count d = 0; d < devices; ++d) {
      const auto& profile = got.profiles.at(static_cast<size_t>(got.query_tile_profile.at(r, d)));
      EXPECT_EQ(profile, want.profiles.at(static_cast<size_t>(r * devices + d))) << what << " round " << r << " device " << d;
      const auto& key_profile = got.profiles.at(static_cast<size_t>(got.key_tile_profile.at(r, d)));
      EXPECT_EQ(key_profile, want.key_profiles.at(static_cast<size_t>(r * devices + d)))
          << what << " key tiles, round " << r << " device " << d;
    }
  }
}

// Trims are found where every device holds one progression of one common stride (the layouts
// ring implementations run with a diagonal-keeping causal kernel: striped, contiguous): there
// exactly; elsewhere a trim is never claimed that the definition does not give. (Two-token blocks
// of a random permutation can match the definition with different strides, e.g. queries {0, 3}
// against keys {1, 5}; no implementation trims those, and neither does the model.)
void expect_same_trims(const Work& got, const testing::BruteForceWork& want, const Layout& layout, const std::string& what) {
  const Count devices = layout.devices();
  ASSERT_EQ(got.trimmed_length.devices(), devices) << what;
  bool progressions = true;
  for (Count d = 0; d < devices; ++d) {
    const auto runs = layout.runs(d);
    progressions = progressions && runs.size() == 1 && runs.front().stride == layout.runs(0).front().stride;
  }
  for (Count r = 0; r < devices; ++r) {
    for (Count d = 0; d < devices; ++d) {
      const Count trimmed = got.trimmed_length.at(r, d);
      if (progressions || trimmed != 0) {
        EXPECT_EQ(trimmed, want.work.trimmed_length.at(r, d)) << what << " trim, round " << r << " device " << d;
      }
    }
  }
}

// kv_source and kv_holder wrap in-range devices and rounds with a compare and anything else with
// modular arithmetic: both paths give the ring's positions mod N, and each inverts the other.
TEST(WorkModel, KvSourceAndHolderAreTheRingPositionsModN) {
  for (Count n = 1; n <= 9; ++n) {
    for (DeviceId d = -2 * n; d < 2 * n; ++d) {
      for (Count r = -2 * n; r < 2 * n; ++r) {
        const auto mod = [n](Count v) { return ((v % n) + n) % n; };
        ASSERT_EQ(kv_source(d, r, n), mod(d - r)) << "d " << d << " r " << r << " N " << n;
        ASSERT_EQ(kv_holder(d, r, n), mod(d + r)) << "d " << d << " r " << r << " N " << n;
        EXPECT_EQ(kv_holder(kv_source(d, r, n), r, n), mod(d));
        EXPECT_EQ(round_of(mod(d), kv_source(d, r, n), n), mod(r));
      }
    }
  }
}

// The property the whole tool rests on: the fast counts equal enumeration of every pair and tile.
TEST(WorkModel, EqualsBruteForceOnRandomConfigurations) {
  std::mt19937_64 rng(2023);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const Count N = std::uniform_int_distribution<Count>(1, 6)(rng);
    const Count h = std::uniform_int_distribution<Count>(1, 9)(rng);
    const Count n = 2 * N * h;
    const Count c = n / N;
    const TileShape tile{std::uniform_int_distribution<Count>(1, c + 2)(rng),
                         std::uniform_int_distribution<Count>(1, c + 2)(rng)};  // need not divide c
    for (const Layout& layout : all_layouts(n, N, rng)) {
      for (const Mask& mask : all_masks(n, rng)) {
        for (const Tiling tiling : {Tiling::fixed, Tiling::varlen}) {
          for (const CallSlicing slicing : {CallSlicing::whole, CallSlicing::runs}) {
            const std::string what = layout.name() + " " + mask_label(mask) + " n=" + std::to_string(n) + " N=" +
                                     std::to_string(N) + " tile=" + tile.to_string() + " " + tiling_name(tiling) +
                                     (slicing == CallSlicing::runs ? " sliced" : "");
            const Work got = count_work(layout, mask, tile, 0, WorkDetail::query_tiles, tiling, slicing);
            const testing::BruteForceWork want = testing::brute_force_work(layout, mask, tile, tiling, slicing);
            expect_same_work(got, want, what);
            expect_same_trims(got, want, layout, what);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 4000);
}

// Block pairs are counted once per class of pairs that must count alike (block_pair_memo.hpp):
// the same local shapes, and each pair of runs either related as wholes or at the same offset.
// Layouts cut from structured ones, their chunks reordered on each device at random, give devices
// of different shapes with a few runs each, the memo's keys collide only where the counts must
// agree, and every (round, device) must still equal enumeration.
TEST(WorkModel, PairsCountedOnceEqualBruteForce) {
  std::mt19937_64 rng(77);
  int checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const Count N = std::uniform_int_distribution<Count>(2, 6)(rng);
    const Count n = 2 * N * std::uniform_int_distribution<Count>(2, 8)(rng);
    const Count c = n / N;
    const Layout base = trial % 3 == 0 ? Layout::striped(n, N) : trial % 3 == 1 ? Layout::zigzag(n, N) : Layout::contiguous(n, N);
    std::vector<std::vector<Position>> blocks(static_cast<size_t>(N));
    for (Count d = 0; d < N; ++d) {
      // Up to three chunks of the device's local order, put back in a random order.
      std::vector<Count> cuts{0, std::uniform_int_distribution<Count>(0, c)(rng), std::uniform_int_distribution<Count>(0, c)(rng), c};
      std::sort(cuts.begin(), cuts.end());
      std::vector<size_t> order{0, 1, 2};
      std::shuffle(order.begin(), order.end(), rng);
      for (const size_t chunk : order) {
        for (Count l = cuts[chunk]; l < cuts[chunk + 1]; ++l) blocks[static_cast<size_t>(d)].push_back(base.position(d, l));
      }
    }
    const Layout layout = Layout::permutation(blocks, n, "chunks of " + base.name());
    const TileShape tile{std::uniform_int_distribution<Count>(1, c)(rng), std::uniform_int_distribution<Count>(1, c)(rng)};
    for (const Mask& mask : {Mask::causal(n), Mask::bidirectional(n), Mask::window(n, std::uniform_int_distribution<Count>(1, n)(rng)),
                             Mask::prefix(n, std::uniform_int_distribution<Count>(1, n)(rng))}) {
      for (const Layout* counted : {&base, &layout}) {
        for (const CallSlicing slicing : {CallSlicing::whole, CallSlicing::runs}) {
          const std::string what = counted->name() + " " + mask.name() + " n=" + std::to_string(n) + " N=" + std::to_string(N) +
                                   " tile=" + tile.to_string() + (slicing == CallSlicing::runs ? " sliced" : "");
          expect_same_work(count_work(*counted, mask, tile, 2, WorkDetail::query_tiles, Tiling::fixed, slicing),
                           testing::brute_force_work(*counted, mask, tile, Tiling::fixed, slicing), what);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 640);
}

// Striped under a causal mask: K/V from a later device is the strictly lower triangle of the
// local order, which ring-flash-attention runs as q[1:] x k[:-1] (c - 1 of each); K/V from the
// device itself or an earlier one includes the diagonal and runs as it is. Contiguous and
// zigzag never need a trim; windows and prefixes trim as causal does, several documents never
// (MasksThatAreCausalTrimAsCausalDoes).
TEST(WorkModel, StripedBlocksFromLaterDevicesAreTrimmedByOne) {
  for (const Count N : {Count{4}, Count{1024}}) {
    const Count n = 1024 * N;
    const Work striped = count_work(Layout::striped(n, N), Mask::causal(n), {128, 128}, 0, WorkDetail::query_tiles);
    Count trimmed = 0;
    for (Count r = 0; r < N; ++r) {
      for (Count d = 0; d < N; ++d) {
        const bool later = kv_source(d, r, N) > d;
        ASSERT_EQ(striped.trimmed_length.at(r, d), later ? 1023 : 0) << "N=" << N << " round " << r << " device " << d;
        trimmed += later ? 1 : 0;
      }
    }
    EXPECT_EQ(trimmed, N * (N - 1) / 2);
    for (const Layout& other : {Layout::contiguous(n, N), Layout::zigzag(n, N)}) {
      EXPECT_EQ(count_work(other, Mask::causal(n), {128, 128}, 0, WorkDetail::query_tiles).trimmed_length.total(), 0)
          << other.name();
    }
    // A window is a band on the same diagonal: its striped blocks are trimmed as causal's are.
    EXPECT_EQ(count_work(Layout::striped(n, N), Mask::window(n, n / 2), {128, 128}, 0, WorkDetail::query_tiles).trimmed_length,
              striped.trimmed_length);
  }
}

// A mask that allows exactly causal's pairs under another name (a window of n or more, prefix:1,
// one document) is the causal call a kernel runs: its striped blocks are trimmed the same way.
TEST(WorkModel, MasksThatAreCausalTrimAsCausalDoes) {
  const Count n = 4096, N = 4;
  const Work causal = count_work(Layout::striped(n, N), Mask::causal(n), {128, 128}, 0, WorkDetail::query_tiles);
  ASSERT_EQ(causal.trimmed_length.total(), 6 * 1023);
  for (const Mask& same : {Mask::window(n, n), Mask::window(n, 3 * n), Mask::prefix(n, 1), Mask::documents(n, {n}),
                           Mask::documents(n, {n}, n)}) {
    const Work w = count_work(Layout::striped(n, N), same, {128, 128}, 0, WorkDetail::query_tiles);
    EXPECT_EQ(w.trimmed_length, causal.trimmed_length) << same.name();
    EXPECT_EQ(w.partial_tiles, causal.partial_tiles) << same.name();
  }
  // A window or a prefix is run with the kernel's causal mask too (a band on the same diagonal; a
  // prefix as unmasked calls inside it beside causal ones after it): one pair more (prefix:2) or
  // less (a window of n - 1) keeps the trim, so it never prices less work dearer; so does one
  // unpadded document with such a window, the same mask. Several documents do not: one call holds
  // several sequences, each with its own diagonal (nor does a padded one: its padding is a second
  // run of keys no query sees).
  for (const Mask& near : {Mask::window(n, n - 1), Mask::window(n, 64), Mask::prefix(n, 2), Mask::prefix(n, n / 2),
                           Mask::documents(n, {n}, n - 1), Mask::documents(n, {n}, 64)}) {
    EXPECT_EQ(count_work(Layout::striped(n, N), near, {128, 128}, 0, WorkDetail::query_tiles).trimmed_length, causal.trimmed_length)
        << near.name();
  }
  // A prefix holding a whole device's queries leaves it unmasked calls: nothing trimmed.
  const Work mostly_prefix = count_work(Layout::striped(n, N), Mask::prefix(n, n - 2), {128, 128}, 0, WorkDetail::query_tiles);
  for (Count r = 0; r < N; ++r) {
    EXPECT_EQ(mostly_prefix.trimmed_length.at(r, 0), 0);
    EXPECT_EQ(mostly_prefix.trimmed_length.at(r, 1), 0);
    EXPECT_EQ(mostly_prefix.trimmed_length.at(r, 2), causal.trimmed_length.at(r, 2));
  }
  for (const Mask& other : {Mask::documents(n, {n / 2, n / 2}), Mask::documents(n, {n / 2, n / 2}, 64), Mask::documents(n, {n}, 0, {1})}) {
    EXPECT_EQ(count_work(Layout::striped(n, N), other, {128, 128}, 0, WorkDetail::query_tiles).trimmed_length.total(), 0)
        << other.name();
  }
}

// Zigzag with halves of 13.25 tiles (n = 27136, N = 8, 128x128): ring-flash-attention calls
// q x k[:c/2] or q[c/2:] x k after round 0, slices tiled from the half. Whole blocks cut a tile
// across the half, which holds both halves' tokens and so applies the mask: one partial tile in
// every query tile's row (keys) or a row of partial tiles (queries). Sliced, none: 27 x 14 full.
TEST(WorkModel, ZigzagHalvesAreTiledFromTheHalfWhenSliced) {
  const Count n = 27136, N = 8;
  const Layout zigzag = Layout::zigzag(n, N);
  const Work whole = count_work(zigzag, Mask::causal(n), {128, 128}, 0, WorkDetail::query_tiles);
  const Work sliced = count_work(zigzag, Mask::causal(n), {128, 128}, 0, WorkDetail::query_tiles, Tiling::fixed, CallSlicing::runs);
  for (Count r = 0; r < N; ++r) {
    for (Count d = 0; d < N; ++d) {
      EXPECT_EQ(sliced.unmasked_elements.at(r, d), whole.unmasked_elements.at(r, d));
      if (r == 0) {
        // One causal call over the device's block, as it is.
        EXPECT_EQ(sliced.active_tiles.at(r, d), whole.active_tiles.at(r, d));
        EXPECT_EQ(sliced.partial_tiles.at(r, d), whole.partial_tiles.at(r, d));
        continue;
      }
      EXPECT_EQ(whole.active_tiles.at(r, d), 27 * 14) << r << " " << d;
      EXPECT_EQ(whole.partial_tiles.at(r, d), 27) << r << " " << d;
      EXPECT_EQ(sliced.active_tiles.at(r, d), 27 * 14) << r << " " << d;
      EXPECT_EQ(sliced.partial_tiles.at(r, d), 0) << r << " " << d;
      // A later device's K/V reaches the late half only: 14 query tiles of 27 key tiles.
      const bool later = kv_source(d, r, N) > d;
      const auto& rows = sliced.profiles.at(static_cast<size_t>(sliced.query_tile_profile.at(r, d)));
      EXPECT_EQ(rows.size(), later ? 14u : 27u) << r << " " << d;
      EXPECT_EQ(rows.front(), (QueryTileLoad{later ? 27 : 14, 0})) << r << " " << d;
    }
  }
}

TEST(WorkModel, LargerBlocksAgainstBruteForce) {
  // Big enough that tiles hold many runs and the sorted-merge path is taken.
  std::mt19937_64 rng(99);
  const Count n = 384, N = 4;
  for (const TileShape tile : {TileShape{16, 16}, TileShape{7, 33}, TileShape{96, 96}}) {
    for (const Layout& layout : all_layouts(n, N, rng)) {
      for (const Mask& mask : all_masks(n, rng)) {
        for (const Tiling tiling : {Tiling::fixed, Tiling::varlen}) {
          expect_same_work(count_work(layout, mask, tile, 0, WorkDetail::query_tiles, tiling),
                           testing::brute_force_work(layout, mask, tile, tiling),
                           layout.name() + " " + mask.name() + " " + tile.to_string() + " " + tiling_name(tiling));
        }
      }
    }
  }
}

// Documents {3, 5} on one device, 4x4 tiles. Fixed tiles cut across the boundary: [0,4) x [0,4),
// [4,8) x [0,4) (query 4 sees key 3) and [4,8) x [4,8), all partial. Varlen tiles each document:
// document 0 is one partial tile; document 1 is [3,7) and [7,8): (0,0) partial, (1,0) and (1,1) full:
// four tiles, two partial.
TEST(WorkModel, VarlenTilesEveryDocumentOnItsOwn) {
  const Mask docs = Mask::documents(8, {3, 5});
  const Layout one = Layout::contiguous(8, 1);
  const Work fixed = count_work(one, docs, {4, 4}, 1, WorkDetail::query_tiles, Tiling::fixed);
  EXPECT_EQ(fixed.active_tiles.total(), 3);
  EXPECT_EQ(fixed.partial_tiles.total(), 3);
  EXPECT_EQ(fixed.profiles.at(0), (QueryTileProfile{{0, 1}, {0, 2}}));
  const Work varlen = count_work(one, docs, {4, 4}, 1, WorkDetail::query_tiles, Tiling::varlen);
  EXPECT_EQ(varlen.active_tiles.total(), 4);  // one more tile, one fewer partial
  EXPECT_EQ(varlen.partial_tiles.total(), 2);
  EXPECT_EQ(varlen.profiles.at(0), (QueryTileProfile{{0, 1}, {0, 1}, {2, 0}}));
  EXPECT_EQ(varlen.unmasked_elements, fixed.unmasked_elements);
  // Any other mask is one document: varlen is fixed.
  const Layout zigzag = Layout::zigzag(64, 4);
  for (const Mask& mask : {Mask::causal(64), Mask::window(64, 9), Mask::bidirectional(64)}) {
    EXPECT_EQ(count_work(zigzag, mask, {3, 5}, 1, WorkDetail::totals, Tiling::varlen).active_tiles,
              count_work(zigzag, mask, {3, 5}, 1).active_tiles);
  }
}

// The keys' side of a block (what a backward kernel's dK/dV blocks work through). Zigzag on 2
// devices, n = 8, 2x2 tiles: device 0 holds {0, 1, 6, 7}, device 1 {2, 3, 4, 5}. At round 1
// device 0's late queries see both of device 1's key tiles whole: one query tile of two full key
// tiles, but two key tiles of one full query tile each. Device 1's queries see only device 0's
// early key tile: two query tiles of one, one key tile of two, and an empty key tile.
TEST(WorkModel, KeyTilesSeeZigzagHalfBlocksTransposed) {
  const Work work = count_work(Layout::zigzag(8, 2), Mask::causal(8), {2, 2}, 1, WorkDetail::query_tiles);
  const auto query_side = [&](Count r, Count d) { return work.profiles.at(static_cast<size_t>(work.query_tile_profile.at(r, d))); };
  const auto key_side = [&](Count r, Count d) { return work.profiles.at(static_cast<size_t>(work.key_tile_profile.at(r, d))); };
  EXPECT_EQ(query_side(1, 0), (QueryTileProfile{{0, 0}, {2, 0}}));
  EXPECT_EQ(key_side(1, 0), (KeyTileProfile{{1, 0}, {1, 0}}));
  EXPECT_EQ(query_side(1, 1), (QueryTileProfile{{1, 0}, {1, 0}}));
  EXPECT_EQ(key_side(1, 1), (KeyTileProfile{{2, 0}, {0, 0}}));
  // A device's own block: causal on both of its chunks, the same loads from either side, mirrored.
  EXPECT_EQ(query_side(0, 1), (QueryTileProfile{{0, 1}, {1, 1}}));
  EXPECT_EQ(key_side(0, 1), (KeyTileProfile{{1, 1}, {0, 1}}));
}

TEST(WorkModel, CausalTotalIsTriangleForEveryLayout) {
  std::mt19937_64 rng(5);
  for (const Count N : {1, 2, 3, 8, 16}) {
    const Count n = 2 * N * 37;
    for (const Layout& layout : all_layouts(n, N, rng)) {
      EXPECT_EQ(count_work(layout, Mask::causal(n), {16, 16}).unmasked_elements.total(), n * (n + 1) / 2)
          << layout.name();
      EXPECT_EQ(count_work(layout, Mask::bidirectional(n), {16, 16}).unmasked_elements.total(), n * n)
          << layout.name();
    }
  }
  // At scale, where only 64-bit counts hold the result.
  const Count n = Count{1} << 24;
  EXPECT_EQ(count_work(Layout::striped(n, 8), Mask::causal(n), {4096, 4096}).unmasked_elements.total(),
            n * (n + 1) / 2);
}

// The blog's table (elements, no barrier): speedup = total / slowest, imbalance = slowest / mean.
TEST(WorkModel, BlogGoldenNumbers) {
  struct Row {
    Count n, N;
    double contiguous_speedup, contiguous_imbalance, ratio;
  };
  for (const Row row : {Row{2048, 8, 4.27, 1.87, 1.87}, Row{4096, 16, 8.26, 1.94, 1.94}, Row{8192, 32, 16.25, 1.97, 1.97}}) {
    const Mask causal = Mask::causal(row.n);
    const Metrics contiguous = compute_metrics(count_work(Layout::contiguous(row.n, row.N), causal, {64, 64}).unmasked_elements);
    const Metrics zigzag = compute_metrics(count_work(Layout::zigzag(row.n, row.N), causal, {64, 64}).unmasked_elements);
    EXPECT_NEAR(contiguous.speedup, row.contiguous_speedup, 0.005) << row.n;
    EXPECT_NEAR(contiguous.imbalance, row.contiguous_imbalance, 0.005) << row.n;
    EXPECT_NEAR(zigzag.speedup, static_cast<double>(row.N), 0.005) << row.n;
    EXPECT_NEAR(zigzag.imbalance, 1.00, 0.005) << row.n;
    EXPECT_NEAR(zigzag.speedup / contiguous.speedup, row.ratio, 0.005) << row.n;
    // Closed forms: slowest contiguous device N-1 does c^2 (N-1) + c(c+1)/2; zigzag is exactly even.
    const Count c = row.n / row.N;
    EXPECT_EQ(contiguous.slowest_device, c * c * (row.N - 1) + c * (c + 1) / 2);
    EXPECT_EQ(zigzag.slowest_device * row.N, row.n * (row.n + 1) / 2);
    EXPECT_EQ(zigzag.spread, 0.0);
  }
}

// The paper, section 3: striped per-block work is c(c+1)/2 when the query device j >= the key
// block's device k, and c(c-1)/2 when j < k.
TEST(WorkModel, PaperStripedPerBlockWork) {
  for (const Count N : {2, 4, 8}) {
    const Count c = 96, n = c * N;
    const Work work = count_work(Layout::striped(n, N), Mask::causal(n), {32, 32});
    for (Count r = 0; r < N; ++r) {
      for (Count d = 0; d < N; ++d) {
        const Count k = kv_source(d, r, N);
        EXPECT_EQ(work.unmasked_elements.at(r, d), d >= k ? c * (c + 1) / 2 : c * (c - 1) / 2) << r << "," << d;
      }
    }
  }
}

// The paper, section 2.2.1: a 1536x1536 causal block in 512x512 tiles has 3 full tiles, 3 partial
// and 3 skipped. Section 5: with 2048x2048 tiles a 4096 block skips 25%; with the A100's
// 2048x4096 tile striping skips nothing at a block of 4096.
TEST(WorkModel, PaperTileExamples) {
  const Work diag = count_work(Layout::contiguous(1536, 1), Mask::causal(1536), {512, 512});
  EXPECT_EQ(diag.active_tiles.at(0, 0), 6);
  EXPECT_EQ(diag.partial_tiles.at(0, 0), 3);

  const Work tpu = count_work(Layout::contiguous(4096, 1), Mask::causal(4096), {2048, 2048});
  EXPECT_EQ(tpu.active_tiles.at(0, 0), 3);  // of 4

  const Count N = 4, n = 4096 * N;
  const Work a100 = count_work(Layout::striped(n, N), Mask::causal(n), {2048, 4096});
  for (Count r = 0; r < N; ++r) {
    for (Count d = 0; d < N; ++d) EXPECT_EQ(a100.active_tiles.at(r, d), 2) << "every tile of every block";
  }
  const Work a100_tpu_tiles = count_work(Layout::striped(n, N), Mask::causal(n), {2048, 2048});
  EXPECT_EQ(a100_tpu_tiles.active_tiles.total(), 3 * N * N);  // 25% skipped on every block
}

TEST(WorkModel, ResultsDoNotDependOnThreads) {
  const Count n = 1 << 14, N = 16;
  for (const Layout& layout : {Layout::zigzag(n, N), Layout::block_striped(n, N, 8), Layout::striped(n, N)}) {
    for (const Mask& mask : {Mask::causal(n), Mask::window(n, 1000), Mask::documents(n, {5000, 11000, 384})}) {
      const Work one = count_work(layout, mask, {64, 128}, 1, WorkDetail::query_tiles);
      const Work two = count_work(layout, mask, {64, 128}, 2, WorkDetail::query_tiles);
      const std::string what = layout.name() + " " + mask.name();
      EXPECT_EQ(one.unmasked_elements, two.unmasked_elements) << what;
      EXPECT_EQ(one.active_tiles, two.active_tiles) << what;
      EXPECT_EQ(one.partial_tiles, two.partial_tiles) << what;
      EXPECT_EQ(one.query_tile_profile, two.query_tile_profile) << what;
      EXPECT_EQ(one.key_tile_profile, two.key_tile_profile) << what;
      EXPECT_EQ(one.profiles, two.profiles) << what;
    }
  }
}

TEST(FloorSum, MatchesDirectSummation) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const Count count = std::uniform_int_distribution<Count>(0, 60)(rng);
    const Count m = std::uniform_int_distribution<Count>(1, 50)(rng);
    const Count a = std::uniform_int_distribution<Count>(0, 120)(rng);
    const Count b = std::uniform_int_distribution<Count>(0, 200)(rng);
    Count direct = 0;
    for (Count i = 0; i < count; ++i) direct += (a * i + b) / m;
    ASSERT_EQ(floor_sum(count, m, a, b), direct) << count << " " << m << " " << a << " " << b;
  }
  // Large values stay exact (2^31 terms, a result near 2^61).
  const Count big = Count{1} << 31;
  EXPECT_EQ(floor_sum(big, 1, 1, 0), big * (big - 1) / 2);
}

TEST(Metrics, HandComputedMatrix) {
  WorkMatrix m(2, 3);
  // round 0: 4 2 0; round 1: 1 3 2 -> device totals 5 5 2, total 12, lockstep 4 + 3 = 7.
  m.at(0, 0) = 4; m.at(0, 1) = 2; m.at(0, 2) = 0;
  m.at(1, 0) = 1; m.at(1, 1) = 3; m.at(1, 2) = 2;
  const Metrics x = compute_metrics(m);
  EXPECT_EQ(x.total, 12);
  EXPECT_EQ(x.lockstep, 7);
  EXPECT_EQ(x.slowest_device, 5);
  EXPECT_DOUBLE_EQ(x.imbalance, 5.0 / 4.0);
  EXPECT_DOUBLE_EQ(x.spread, 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(x.cv, std::sqrt((1.0 + 1.0 + 4.0) / 3.0) / 4.0);
  EXPECT_DOUBLE_EQ(x.speedup, 12.0 / 5.0);
  EXPECT_DOUBLE_EQ(x.lockstep_speedup, 12.0 / 7.0);
  EXPECT_DOUBLE_EQ(x.idle_fraction, 1.0 - 12.0 / 21.0);
}

}  // namespace
}  // namespace stripesim::model

namespace stripesim::model {
namespace {

// The largest sequence the model accepts: 2^31 tokens, whose pair counts need every bit of a
// signed 64-bit count (bidirectional: exactly 2^62).
TEST(WorkModelEdges, LongestSequenceCountsExactly) {
  const Count n = kMaxSeqLen;
  for (const Layout& layout : {Layout::contiguous(n, 8), Layout::striped(n, 8), Layout::zigzag(n, 8)}) {
    const Work causal = count_work(layout, Mask::causal(n), {1 << 16, 1 << 16});
    EXPECT_EQ(causal.unmasked_elements.total(), n * (n + 1) / 2) << layout.name();
    const Work all = count_work(layout, Mask::bidirectional(n), {1 << 20, 1 << 20});
    EXPECT_EQ(all.unmasked_elements.total(), Count{1} << 62) << layout.name();
  }
  EXPECT_THROW((void)Layout::striped(n + 8, 8), InputError);
}

TEST(WorkModelEdges, MostDevicesAreABijectionAtTheEdges) {
  const Count n = kMaxSeqLen, N = kMaxDevices;
  for (const Layout& layout : {Layout::contiguous(n, N), Layout::striped(n, N), Layout::zigzag(n, N)}) {
    for (const Position p : {Position{0}, Position{1}, n / 2, n - 2, n - 1}) {
      const Placement at = layout.locate(p);
      EXPECT_GE(at.device, 0);
      EXPECT_LT(at.device, N);
      EXPECT_EQ(layout.position(at.device, at.local), p) << layout.name();
    }
  }
  EXPECT_THROW((void)Layout::striped(n, N * 2), InputError);
}

}  // namespace
}  // namespace stripesim::model
