#include "stripesim/model/work/tile_shape.hpp"

#include <fmt/format.h>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/size_parse.hpp"

namespace stripesim::model {

std::string TileShape::to_string() const { return fmt::format("{}x{}", query, key); }

TileShape parse_tile_shape(std::string_view spec) {
  const auto fail = [&](const char* why) { return InputError(Input::tile, std::string(spec), why, Shown::quoted); };
  const auto sides = split_product(spec);
  if (!sides) throw fail("expected TQxTK, e.g. 2048x4096");
  TileShape tile{parse_count(sides->first, InputName(Input::tile, "query size")),
                 parse_count(sides->second, InputName(Input::tile, "key size"))};
  if (tile.query < 1 || tile.key < 1) throw fail("both tile sides must be at least 1");
  // No sequence is longer than 2^31 tokens, and a tile's area must fit in 64 bits.
  if (tile.query > kMaxSeqLen || tile.key > kMaxSeqLen) throw fail("tile sides must be at most 2^31 (the longest sequence)");
  return tile;
}

Tiling parse_tiling(std::string_view name, std::string_view what) {
  if (name == "fixed") return Tiling::fixed;
  if (name == "varlen") return Tiling::varlen;
  throw InputError(fmt::format("{} '{}': unknown tiling, expected fixed or varlen", what, name));
}

const char* tiling_name(Tiling tiling) { return tiling == Tiling::varlen ? "varlen" : "fixed"; }

}  // namespace stripesim::model
