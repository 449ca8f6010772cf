#include "stripesim/model/ptrr_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "stripesim/model/input_error.hpp"

namespace stripesim::model {

Count key_blocks_reached(const Mask& mask, Position begin, Position end, Count block, Position origin) {
  return (mask.highest_key(end - 1) - origin) / block - (std::max(mask.lowest_key(begin), origin) - origin) / block + 1;
}

Layout ptrr_layout(const Mask& mask, Count devices, Count block) {
  const Count n = mask.seq_len();
  if (block < 1) throw InputError(fmt::format("--layouts ptrr:{}: the block must be at least 1 token", block));
  if (devices < 1 || n % devices != 0 || (n / devices) % block != 0) {
    throw InputError(fmt::format("--layouts ptrr:{}: every device must hold whole blocks, but n / N = {} / {} is not "
                                 "a multiple of the block {}",
                                 block, n, devices, block));
  }
  const Count blocks = n / block;
  std::vector<Count> price(static_cast<size_t>(blocks));
  for (Count b = 0; b < blocks; ++b) price[static_cast<size_t>(b)] = key_blocks_reached(mask, b * block, (b + 1) * block, block);
  std::vector<Count> order(static_cast<size_t>(blocks));
  std::iota(order.begin(), order.end(), Count{0});
  std::stable_sort(order.begin(), order.end(), [&](Count x, Count y) { return price[static_cast<size_t>(x)] > price[static_cast<size_t>(y)]; });

  std::vector<std::vector<Count>> dealt(static_cast<size_t>(devices));
  for (Count i = 0; i < blocks; ++i) {
    const Count lap = i / devices;
    const Count seat = i % devices;
    dealt[static_cast<size_t>(lap % 2 == 0 ? seat : devices - 1 - seat)].push_back(order[static_cast<size_t>(i)]);
  }
  std::vector<std::vector<Position>> positions(static_cast<size_t>(devices));
  for (size_t d = 0; d < dealt.size(); ++d) {
    std::sort(dealt[d].begin(), dealt[d].end());
    positions[d].reserve(static_cast<size_t>(n / devices));
    for (const Count b : dealt[d]) {
      for (Position p = b * block; p < (b + 1) * block; ++p) positions[d].push_back(p);
    }
  }
  return Layout::from_blocks(positions, n, fmt::format("ptrr:{}", block), LayoutKind::ptrr);
}

}  // namespace stripesim::model
