#pragma once
// Layouts for packed sequences and other masks the global layouts do not balance:
//   doc-zigzag   every document cut into 2N chunks dealt zigzag (Megatron / TransformerEngine
//                for packed sequences); every document length must divide by 2N;
//   doc-striped  every document striped over the N devices from its own first token; lengths
//                must divide by N;
//   balanced     pieces of whole tile-aligned blocks (documents kept whole where they can be)
//                dealt so that the busiest device's tiles, then the lockstep time, are as small
//                as the kernel's tiling allows (balanced_layout.cpp says how).
// All are explicit permutations, so every command downstream takes them unchanged.
#include <string>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"

namespace stripesim::model {

[[nodiscard]] Layout doc_zigzag_layout(const Mask& documents, Count devices);
[[nodiscard]] Layout doc_striped_layout(const Mask& documents, Count devices);
// Every InputError the factory beside it throws, without building the layout (plan_layout).
void check_doc_zigzag_layout(const Mask& documents, Count devices);
void check_doc_striped_layout(const Mask& documents, Count devices);

struct BalanceResult {
  Layout layout;
  Count chunk = 0;                // the longest piece, in tokens, of the size chosen
  Count slowest_estimate = 0;     // the busiest device's tiles
  double bound_estimate = 0;      // total tiles / N
  Count lockstep_estimate = 0;    // sum over rounds of the busiest device's tiles
};

// Work is priced in tiles of `tile` cut as `tiling` cuts them; the estimates are exact when every
// device holds whole blocks of lcm(TQ, TK) and the tail's run (fixed tiling; varlen when the
// tail starts on its document's block grid, as with documents padded to a multiple of the
// block), close otherwise (a piece cut inside a block shifts the tiles after it). `chunk` = 0 lets the
// balancer choose the piece size (it tries a device's share and its halvings down to a block).
// Its candidates are built on up to `threads` threads (0: one per core); the result never depends
// on how many.
[[nodiscard]] BalanceResult balanced_layout(const Mask& mask, Count devices, TileShape tile, Count chunk = 0,
                                            Tiling tiling = Tiling::fixed, unsigned threads = 0);
void check_balanced_layout(const Mask& mask, Count devices, Count chunk);

// What a varlen kernel is handed per device: the pieces of documents it holds, a piece being a
// maximal run of consecutive positions of one document at consecutive local indices (each is a
// cu_seqlens entry of a varlen call). Per device, in device order; a mask without documents is
// one document.
[[nodiscard]] std::vector<Count> document_pieces(const Layout& layout, const Mask& mask);

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
