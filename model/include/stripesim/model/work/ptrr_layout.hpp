#pragma once
// PyTorch context parallelism's "process-time round robin" balancer, as a layout to compare
// against: the sequence cut into blocks of B tokens, each block priced by the key blocks of B its
// queries reach under the mask, the blocks sorted by price (heaviest first, ties in sequence
// order) and dealt to devices in snake order (0, 1, ..., N-1, N-1, ..., 0, 0, 1, ...), every
// device then holding its blocks in sequence order. With B the tile of a fixed-tiling kernel each
// local tile is one block of the original sequence, so the total work is the sequence's own.
#include <vector>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"

namespace stripesim::model {

// The key blocks of `block` tokens (counted from `origin`, where the tiling starts) the queries
// of [begin, end) reach: the union of their key intervals is one interval for every mask the
// model knows (mask.hpp). Keys before the origin (another tiling segment) are not counted.
// Padding queries reach no key: a block of padding only reaches 0.
[[nodiscard]] Count key_blocks_reached(const Mask& mask, Position begin, Position end, Count block, Position origin = 0);

// The blocks the balancer deals each device, in sequence order, and where the blocks end: when B
// does not divide n / N, device d's last n / N mod B tokens are its run of the tail.
struct PtrrDeal {
  std::vector<std::vector<Count>> blocks;  // per device
  Position body = 0;
  Count fragment = 0;

  // Calls f(begin, end) for each of device d's runs of tokens in its local order: its blocks of
  // `block` tokens, then its run of the tail, if any.
  template <typename F>
  void for_each_run(Count d, Count block, F&& f) const {
    for (const Count b : blocks[static_cast<size_t>(d)]) f(b * block, (b + 1) * block);
    if (fragment > 0) f(body + d * fragment, body + (d + 1) * fragment);
  }
};
[[nodiscard]] PtrrDeal ptrr_deal(const Mask& mask, Count devices, Count block);

// N must divide n (InputError otherwise). When B does not divide n / N (documents padded to 2N,
// say), the last N x (n / N mod B) tokens are cut into one run per device, after its blocks.
[[nodiscard]] Layout ptrr_layout(const Mask& mask, Count devices, Count block);
// Every InputError ptrr_layout throws, without building the layout (plan_layout).
void check_ptrr_layout(const Mask& mask, Count devices, Count block);
// The block `ptrr` without one deals: the query tile, held to a device's share (n / N) since a
// longer block deals nothing, and the name it prints (ptrr:B) must be one --layouts accepts.
[[nodiscard]] Count ptrr_default_block(TileShape tile, Count seq_len, Count devices);

}  // namespace stripesim::model
