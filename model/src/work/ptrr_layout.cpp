#include "stripesim/model/work/ptrr_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {

Count key_blocks_reached(const Mask& mask, Position begin, Position end, Count block, Position origin) {
  // Padding queries see no key: the reach runs from the first query that sees one to the last.
  // A document's padding is its last tokens, and the next document's first token is never padding.
  Position first = begin, last = end - 1;
  if (mask.padded()) {
    const size_t first_document = mask.document_of(first);
    if (first >= mask.padding_start(first_document)) first = mask.document_starts()[first_document + 1];
    const size_t last_document = mask.document_of(last);
    if (last >= mask.padding_start(last_document)) last = mask.padding_start(last_document) - 1;
    if (first > last) return 0;  // only padding: PyTorch's block mask gives it no key block
  }
  return (mask.highest_key(last) - origin) / block - (std::max(mask.lowest_key(first), origin) - origin) / block + 1;
}

void check_ptrr_layout(const Mask& mask, Count devices, Count block) {
  if (block < 1) throw InputError(Input::layouts, fmt::format("ptrr:{}", block), "the block must be at least 1 token");
  if (devices < 1) throw InputError(Input::devices, std::to_string(devices), "must be at least 1");
  require_seq_len_divisible(mask.seq_len(), devices, "ptrr", "N");
}

Count ptrr_default_block(TileShape tile, Count seq_len, Count devices) {
  return devices > 0 ? std::min(tile.query, std::max<Count>(seq_len / devices, 1)) : tile.query;
}

PtrrDeal ptrr_deal(const Mask& mask, Count devices, Count block) {
  check_ptrr_layout(mask, devices, block);
  const Count n = mask.seq_len();
  const Count c = n / devices;
  // When B does not divide n / N, the sequence's last N x (n / N mod B) tokens are cut into one
  // run per device (last in its local order, so they shift no other tile); the blocks before
  // them go round robin.
  PtrrDeal deal{std::vector<std::vector<Count>>(static_cast<size_t>(devices)), 0, c % block};
  deal.body = n - devices * deal.fragment;
  const Count blocks = deal.body / block;
  std::vector<Count> price(static_cast<size_t>(blocks));
  for (Count b = 0; b < blocks; ++b) price[static_cast<size_t>(b)] = key_blocks_reached(mask, b * block, (b + 1) * block, block);
  std::vector<Count> order(static_cast<size_t>(blocks));
  std::iota(order.begin(), order.end(), Count{0});
  std::stable_sort(order.begin(), order.end(), [&](Count x, Count y) { return price[static_cast<size_t>(x)] > price[static_cast<size_t>(y)]; });
  for (Count i = 0; i < blocks; ++i) {
    const Count lap = i / devices;
    const Count seat = i % devices;
    deal.blocks[static_cast<size_t>(lap % 2 == 0 ? seat : devices - 1 - seat)].push_back(order[static_cast<size_t>(i)]);
  }
  for (auto& mine : deal.blocks) std::sort(mine.begin(), mine.end());
  return deal;
}

Layout ptrr_layout(const Mask& mask, Count devices, Count block) {
  const PtrrDeal deal = ptrr_deal(mask, devices, block);
  const Count c = mask.seq_len() / devices;
  std::vector<std::vector<Position>> positions(static_cast<size_t>(devices));
  for (Count d = 0; d < devices; ++d) {
    auto& mine = positions[static_cast<size_t>(d)];
    mine.reserve(static_cast<size_t>(c));
    deal.for_each_run(d, block, [&](Position begin, Position end) {
      for (Position p = begin; p < end; ++p) mine.push_back(p);
    });
  }
  return Layout::from_blocks(positions, mask.seq_len(), fmt::format("ptrr:{}", block), LayoutKind::ptrr);
}

}  // namespace stripesim::model
