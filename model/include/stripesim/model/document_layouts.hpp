#pragma once
// Layouts for packed sequences and other masks the global layouts do not balance:
//   doc-zigzag   every document cut into 2N chunks dealt zigzag (Megatron / TransformerEngine
//                for packed sequences); every document length must divide by 2N;
//   doc-striped  every document striped over the N devices from its own first token; lengths
//                must divide by N;
//   balanced     documents up to a chunk kept whole (their work stays on one device), longer
//                ones (and a causal or window mask's one sequence) cut into chunks of whole
//                query tiles; the pieces dealt so that the busiest device's tile work is as
//                small as possible: greedy longest-processing-time first with every device
//                holding exactly n/N tokens, then swaps off the busiest device while they help.
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
  Count chunk = 0;                // tokens per chunk of a long document
  Count slowest_estimate = 0;     // the busiest device's estimated tiles
  double bound_estimate = 0;      // total estimated tiles / N
};

// A piece's cost is estimated in tiles of `tile` as a varlen kernel tiling every document on its
// own would compute them. `chunk` = 0 picks max(TQ, n/N/16 rounded to whole query tiles).
[[nodiscard]] BalanceResult balanced_layout(const Mask& mask, Count devices, TileShape tile, Count chunk = 0);

// Documents padded to multiples of `multiple` (the padding counts as waste).
[[nodiscard]] std::vector<Count> pad_document_lengths(const std::vector<Count>& lengths, Count multiple);

// --pad-documents: every document of `mask` padded to a multiple of 2N (what doc-zigzag and
// doc-striped need), the sequence growing by the padding. Throws InputError for a mask that is
// not a documents mask or a padded sequence past 2^31 tokens.
struct PaddedDocuments {
  Mask mask;
  Count seq_len = 0;
  Count padding_tokens = 0;
};
[[nodiscard]] PaddedDocuments pad_documents(const Mask& mask, Count devices);

}  // namespace stripesim::model
