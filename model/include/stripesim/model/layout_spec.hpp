#pragma once
// Layout specs as users write them: contiguous, striped, zigzag, block-striped:S,
// permutation:FILE. A permutation file is JSON: {"blocks": [[p, ...], ...]}, one array per
// device listing the original positions it holds in local order (a bare array of arrays works too).
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/layout.hpp"
#include "stripesim/model/mask.hpp"
#include "stripesim/model/tile_shape.hpp"

namespace stripesim::model {

// What the layouts built from the workload need: the mask (documents for doc-zigzag and
// doc-striped; any mask for balanced, causal when absent) and the tile balanced prices work in.
struct LayoutContext {
  const Mask* mask = nullptr;
  TileShape tile{128, 128};
  Tiling tiling = Tiling::fixed;  // how the kernel cuts tiles: what balanced prices work in
};

// Also: doc-zigzag, doc-striped, balanced, balanced:SLOT (see document_layouts.hpp), ptrr and
// ptrr:BLOCK (ptrr_layout.hpp; BLOCK defaults to the query tile).
[[nodiscard]] Layout parse_layout(std::string_view spec, Count seq_len, Count devices,
                                  const LayoutContext& context = {});

[[nodiscard]] Layout load_permutation_file(const std::string& path, Count seq_len, Count devices);

// Splits "a,b,c" into its non-empty items; an empty item is an InputError naming `what`.
[[nodiscard]] std::vector<std::string> split_list(std::string_view text, std::string_view what);
// The file a layout spec reads ("permutation:FILE", the name case aside), or empty.
[[nodiscard]] std::string layout_file(std::string_view spec);

}  // namespace stripesim::model
