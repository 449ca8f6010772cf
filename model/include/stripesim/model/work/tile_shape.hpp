#pragma once
// The tile a tile-skipping kernel works on: `query` local query indices by `key` local key
// indices. Tiles need not divide the block; the last tile of a block is then smaller.
#include <compare>
#include <string>
#include <string_view>

#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

struct TileShape {
  Count query = 0;
  Count key = 0;

  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const TileShape&, const TileShape&) = default;
  friend auto operator<=>(const TileShape&, const TileShape&) = default;  // queries, then keys
};

// "TQxTK", e.g. "2048x4096" or "2kx4k"; both sides at least 1.
[[nodiscard]] TileShape parse_tile_shape(std::string_view spec);

// How a kernel cuts a device's local order into tiles:
//   fixed   tiles of TQ x TK straight across the local order, over document boundaries
//           (FlexAttention's BlockMask, this project's validator kernel);
//   varlen  every document's local queries and keys tiled on their own, from the document's
//           first local token (FlashAttention / cuDNN varlen kernels, TransformerEngine's THD).
// The two differ only under a documents mask: any other mask is one document.
enum class Tiling { fixed, varlen };

// What a --tiling flag's help says (every command that counts tiles takes one).
inline constexpr const char* kTilingHelp =
    "How the kernel cuts tiles. fixed: TQxTK tiles straight across a device's local order, over document "
    "boundaries (FlexAttention's BlockMask, stripesim's validator kernel); varlen: every document's local queries "
    "and keys tiled on their own (FlashAttention and cuDNN varlen, TransformerEngine THD). They differ only under "
    "a documents mask.";

// How a ring implementation hands a (round, device)'s block pair to the kernel:
//   whole  the whole local query block against the whole K/V block, under the mask (FlexAttention
//          with a BlockMask, this project's validator kernels);
//   runs   only the local runs of positions that have work, as slices: from the first query run
//          with an allowed pair to the last, against the same span of key runs, each tiled from
//          its own first index (ring-flash-attention's zigzag calls q x k[:c/2] and q[c/2:] x k,
//          whose tiles start at the half, not at the block's start). Blocks of one run are whole.
// The two differ only where a run has no work, and the tiles' count only where a run boundary
// falls inside a tile (zigzag's halves when c / 2 is not a multiple of the tile).
enum class CallSlicing { whole, runs };

// "fixed" | "varlen"; anything else is an InputError naming `what`.
[[nodiscard]] Tiling parse_tiling(std::string_view name, std::string_view what = "--tiling");
[[nodiscard]] const char* tiling_name(Tiling tiling);

// The number of tiles of `tile` that cover `length` indices (the last one may be partial).
[[nodiscard]] constexpr Count tiles_covering(Count length, Count tile) { return (length + tile - 1) / tile; }

}  // namespace stripesim::model
