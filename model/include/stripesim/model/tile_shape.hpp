#pragma once
// The tile a tile-skipping kernel works on: `query` local query indices by `key` local key
// indices. Tiles need not divide the block; the last tile of a block is then smaller.
#include <string>
#include <string_view>

#include "stripesim/model/types.hpp"

namespace stripesim::model {

struct TileShape {
  Count query = 0;
  Count key = 0;

  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const TileShape&, const TileShape&) = default;
};

// "TQxTK", e.g. "2048x4096" or "2kx4k"; both sides at least 1.
[[nodiscard]] TileShape parse_tile_shape(std::string_view spec);

// The number of tiles of `tile` that cover `length` indices (the last one may be partial).
[[nodiscard]] constexpr Count tiles_covering(Count length, Count tile) { return (length + tile - 1) / tile; }

}  // namespace stripesim::model
