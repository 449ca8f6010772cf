#include "stripesim/model/tile_shape.hpp"

#include <fmt/format.h>

#include "stripesim/model/input_error.hpp"
#include "stripesim/model/size_parse.hpp"

namespace stripesim::model {

std::string TileShape::to_string() const { return fmt::format("{}x{}", query, key); }

TileShape parse_tile_shape(std::string_view spec) {
  const auto x = spec.find_first_of("xX");
  if (x == std::string_view::npos) {
    throw InputError(fmt::format("--tile '{}': expected TQxTK, e.g. 2048x4096", spec));
  }
  const std::string_view q = spec.substr(0, x);
  const std::string_view k = spec.substr(x + 1);
  if (q.empty() || k.empty()) {
    throw InputError(fmt::format("--tile '{}': expected TQxTK, e.g. 2048x4096", spec));
  }
  TileShape tile{parse_count(q, "--tile query size"), parse_count(k, "--tile key size")};
  if (tile.query < 1 || tile.key < 1) {
    throw InputError(fmt::format("--tile '{}': both tile sides must be at least 1", spec));
  }
  return tile;
}

Tiling parse_tiling(std::string_view name, std::string_view what) {
  if (name == "fixed") return Tiling::fixed;
  if (name == "varlen") return Tiling::varlen;
  throw InputError(fmt::format("{} '{}': unknown tiling, expected fixed or varlen", what, name));
}

const char* tiling_name(Tiling tiling) { return tiling == Tiling::varlen ? "varlen" : "fixed"; }

}  // namespace stripesim::model
