#pragma once
// The key tiles every query tile of one (query block, K/V block) pair computes, classified
// exactly as the work model counts them, for a kernel that skips tiles without testing them:
// the flash kernel (validate/cuda/flash_attention.cuh) runs the listed tiles only, a full tile
// without evaluating the mask and a partial one with it. Built on the host once per ring cell,
// before anything is timed (positions never change between iterations).
#include <cstdint>
#include <span>
#include <vector>

#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/types.hpp"

namespace stripesim::validate {

// Set in an entry when the tile is partial (some pairs allowed, some not).
inline constexpr std::int32_t kPartialTile = std::int32_t{1} << 30;

// The CUDA kernels decode the same entries (validate/cuda), so the three helpers below are
// host and device functions when nvcc compiles them.
#if defined(__CUDACC__)
#define STRIPESIM_HOST_DEVICE __host__ __device__
#else
#define STRIPESIM_HOST_DEVICE
#endif

// An entry: tile `tile`, with kPartialTile set when it is partial.
STRIPESIM_HOST_DEVICE constexpr std::int32_t tile_entry(std::int32_t tile, bool partial) {
  return partial ? (tile | kPartialTile) : tile;
}
// The tile an entry names.
STRIPESIM_HOST_DEVICE constexpr std::int32_t entry_tile(std::int32_t entry) { return entry & ~kPartialTile; }
// Whether an entry's tile is partial (the mask evaluated per element).
STRIPESIM_HOST_DEVICE constexpr bool entry_is_partial(std::int32_t entry) { return (entry & kPartialTile) != 0; }

struct TileSchedule {
  // Query tiles in launch order: most key tiles first (partial tiles weigh more), so that the
  // longest thread blocks start in the first wave and do not finish last.
  std::vector<std::int32_t> order;
  // [query_tiles + 1]: query tile i's entries are entries[offsets[i] .. offsets[i + 1]).
  std::vector<std::int32_t> offsets;
  // Key tile index, | kPartialTile when partial; full tiles of a query tile come first.
  std::vector<std::int32_t> entries;
  model::Count partial = 0;  // entries with kPartialTile

  [[nodiscard]] model::Count active() const { return static_cast<model::Count>(entries.size()); }
  // order, offsets and entries back to back, as one upload to a device; they start at 0,
  // offsets_at() and entries_at().
  [[nodiscard]] std::vector<std::int32_t> packed() const;
  [[nodiscard]] std::size_t offsets_at() const { return order.size(); }
  [[nodiscard]] std::size_t entries_at() const { return order.size() + offsets.size(); }
};

// The same tiles key tile by key tile, for the backward kernel (a thread block per key tile, its
// dK and dV summed over the query tiles that see it): rows are key tiles (`key_tiles` of them),
// entries query tiles | kPartialTile, each (query tile, key tile, class) exactly as in
// `by_query`; full tiles first in each row, rows with the most work first in `order`.
[[nodiscard]] TileSchedule by_key_tile(const TileSchedule& by_query, model::Count key_tiles);

// Query l may see the key at original position p iff lowest[l] <= p <= highest[l]. Tiles are cut
// from local order (TQ queries, TK keys; the last ones may be short). A tile is active when some
// (query, key) pair of it is allowed, partial when it is active and some pair is not.
[[nodiscard]] TileSchedule build_tile_schedule(std::span<const model::Position> lowest,
                                               std::span<const model::Position> highest,
                                               std::span<const model::Position> key_positions, model::TileShape tile);

}  // namespace stripesim::validate
