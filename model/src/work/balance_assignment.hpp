#pragma once
// The balanced layout's pieces on devices (balanced_layout.cpp): dealing them, longest first, with
// every device holding its share of tokens, swapping them off the busiest device, spreading heavy
// documents zigzag, and numbering the devices. Internal to the work model.
#include <cstddef>
#include <vector>

#include "balance_pricing.hpp"

namespace stripesim::model::balance {

// Pieces dealt to devices, every device holding exactly `capacity` tokens: `pinned` pieces (the
// chunks of spread documents) stay where they are, `owned` ones may be swapped.
struct Assignment {
  std::vector<std::vector<Piece>> owned;
  std::vector<std::vector<Piece>> pinned;
  std::vector<Count> load;

  explicit Assignment(Count devices)
      : owned(static_cast<size_t>(devices)), pinned(static_cast<size_t>(devices)), load(static_cast<size_t>(devices), 0) {}
  [[nodiscard]] Count busiest() const { return *std::max_element(load.begin(), load.end()); }
};

// Every piece with its device (and whether it is pinned), in sequence order.
struct PlacedPiece {
  Piece piece;
  Count device;
  bool pinned;
};
[[nodiscard]] std::vector<PlacedPiece> pieces_in_order(const Assignment& a);

// Spreads the blocks [from, to) (one heavy document) over every device as zigzag does: 2N
// chunks of whole blocks (sizes differing by at most one block), chunks g and 2N - 1 - g on one
// device. Every round after the first then carries the same share of its work on every device.
// The zigzag is rotated (device (d + shift) mod N holds chunks d and 2N - 1 - d, which keeps
// that property) by the shift that leaves the busiest device least loaded, so that the uneven
// chunks of many documents do not pile onto the same devices, among the shifts that keep every
// device within its share of tokens (`capacity`); false, spreading nothing, when none does.
bool spread_zigzag(const Pricing& pricing, const std::vector<Position>& blocks, size_t from, size_t to, Count n,
                   Count capacity, Assignment& a);

// Longest processing time first: each piece, heaviest first, to the least loaded device with
// room for it; a piece that fits nowhere whole fills the roomiest device with its head.
void deal(const Pricing& pricing, std::vector<Piece> pieces, Count capacity, Count block, Assignment& a);

// Swaps of equal-length parts between the busiest device and another while the busiest drops;
// among equal gains the one whose cuts cross the fewest tiles.
void refine(const Pricing& pricing, Assignment& a, Count block);

// The most pieces any tiling segment (a document under varlen) is cut into: runs of consecutive
// positions on one device count once.
[[nodiscard]] Count most_pieces_of_a_document(const Pricing& pricing, const Assignment& a);

// `a` with device number i holding what device order[i] held.
[[nodiscard]] Assignment renumbered(const Assignment& a, const std::vector<size_t>& order);

// The devices numbered in the order of their longest piece's position (order[number] = device):
// pieces next to each other in the sequence then sit on devices next to each other in the ring,
// so the tiles that cross their cut fall in round 1 (or N - 1) rather than anywhere.
[[nodiscard]] std::vector<size_t> ring_order(const Assignment& a);

}  // namespace stripesim::model::balance
