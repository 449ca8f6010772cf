#pragma once
// Layouts for packed sequences and other masks the global layouts do not balance:
//   doc-zigzag   every document cut into 2N chunks dealt zigzag (Megatron / TransformerEngine
//                for packed sequences); every document length must divide by 2N;
//   doc-striped  every document striped over the N devices from its own first token; lengths
//                must divide by N;
//   balanced     the sequence cut into slots of TQ tokens (a query tile), dealt so that the
//                busiest device's tile work is as small as possible: greedy longest-processing-
//                time first, then pairwise swaps off the busiest device while they help.
// All are explicit permutations, so every command downstream takes them unchanged.
#include <string>

#include "stripesim/model/layout.hpp"
#include "stripesim/model/mask.hpp"
#include "stripesim/model/tile_shape.hpp"

namespace stripesim::model {

[[nodiscard]] Layout doc_zigzag_layout(const Mask& documents, Count devices);
[[nodiscard]] Layout doc_striped_layout(const Mask& documents, Count devices);

struct BalanceResult {
  Layout layout;
  Count slot = 0;                // tokens per slot
  Count slowest_slot_tiles = 0;  // the busiest device's estimated tile work
  double bound_tiles = 0;        // total estimated tile work / N
};

// Slot cost: for each document piece [qa, qb) inside the slot, ceil((qb - lowest_key(qa)) / TK)
// key tiles (a per-document tiling, as varlen kernels do). `slot` = 0 uses the tile's query side
// (reduced to divide n / N).
[[nodiscard]] BalanceResult balanced_layout(const Mask& mask, Count devices, TileShape tile, Count slot = 0);

// Documents padded to multiples of `multiple` (the padding counts as waste).
[[nodiscard]] std::vector<Count> pad_document_lengths(const std::vector<Count>& lengths, Count multiple);

}  // namespace stripesim::model
