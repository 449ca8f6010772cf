#pragma once
// What a placement of the balanced layout's pieces costs the ring (balanced_layout.cpp): the
// devices' work on each other's pieces, the busiest device, lockstep and free-link ring time of a
// numbering of the devices, and the numbering that lowers the lockstep. Internal to the work model.
#include <cstddef>
#include <vector>

#include "balance_assignment.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/work_matrix.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::model::balance {

// The devices' work on each other's pieces ([query device * N + key device], in tiles), and how
// many pieces the keys of each query tile span (at least the reads a RingGraph of them holds).
struct PairWork {
  std::vector<Count> work;
  Count reads = 0;
};

// The sums a RingGraph reads piece by piece (balance_ring_graph.cpp), without visiting every piece
// a query tile reads: the key tiles holding the keys [lo, hi] are the one holding lo and one for
// every tile start in (lo, hi] (each tiling cut on its own), so a device's share is whether it
// holds lo plus its tile starts in (lo, hi], kept per device while [lo, hi] slides along the
// sequence. A query tile costs O(N), not O(pieces it reads): a 128k window over 128-token pieces
// reads 1024 of them.
[[nodiscard]] PairWork pair_work(const Pricing& pricing, const Assignment& a);

// What the ring pays for one numbering of the devices: the busiest device, the lockstep time (sum
// over rounds of the busiest device) and the ring without a barrier, links free (metrics.hpp), in
// tiles (exact for whole blocks).
struct RingCost {
  Count busiest = 0;
  Count lockstep = 0;
  Count ring = 0;
};

// Number d (device order[d]) meets the pieces of number d - r in round r.
[[nodiscard]] RingCost ring_cost(const WorkMatrix& work);
[[nodiscard]] RingCost numbered_cost(const std::vector<Count>& pair, const std::vector<size_t>& order);

// A layout's tiles counted by the work model: exact wherever the balancer's pricing is not (pieces
// off the block grid).
[[nodiscard]] WorkMatrix exact_tiles(const Layout& layout, const Mask& mask, TileShape tile, Tiling tiling);

// TransformerEngine's split of packed documents (doc-zigzag), where the kernel tiles every
// document on its own and every document has its 2N chunks: what varlen users have already.
[[nodiscard]] bool doc_zigzag_is_the_bar(const Mask& mask, Count devices, Tiling tiling);

// The cost with the devices numbered as they are.
[[nodiscard]] RingCost cost_of(const PairWork& pair, Count devices);
[[nodiscard]] RingCost cost_of(const Pricing& pricing, const Assignment& a);

// Device d meets the pieces of device d - r in round r, so numbering the same devices differently
// moves work between rounds and leaves every device's load as it is. Swaps the numbers of two
// devices while that lowers sum_r max_d (first improvement, pairs in order: deterministic), within
// a budget of evaluations so that large rings stay fast. Returns order[number] = device.
//
// A swap of numbers x and y changes, in round r, only the cells of query numbers x, y, x + r and
// y + r; each round keeps its few largest cells, so the round's new maximum is the largest
// unchanged one or a changed one, without reading the round again.
[[nodiscard]] std::vector<size_t> lockstep_numbering(const std::vector<Count>& work, size_t devices);

}  // namespace stripesim::model::balance
