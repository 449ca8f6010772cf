#include "stripesim/model/document_layouts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <queue>

#include "stripesim/model/input_error.hpp"

namespace stripesim::model {
namespace {

void require_documents(const Mask& mask, const char* layout) {
  if (mask.kind() != MaskKind::documents) {
    throw InputError(fmt::format("--layouts {}: needs a documents mask (--mask documents:...)", layout));
  }
}

void require_lengths_divisible(const Mask& mask, Count multiple, const char* layout, const char* what) {
  const auto& lengths = mask.document_lengths();
  for (size_t j = 0; j < lengths.size(); ++j) {
    if (lengths[j] % multiple != 0) {
      throw InputError(fmt::format("--layouts {}: document {} has length {}, not divisible by {} = {} "
                                   "(add --pad-documents to pad every document)",
                                   layout, j, lengths[j], what, multiple));
    }
  }
}

}  // namespace

std::vector<Count> pad_document_lengths(const std::vector<Count>& lengths, Count multiple) {
  std::vector<Count> padded;
  padded.reserve(lengths.size());
  for (const Count length : lengths) padded.push_back((length + multiple - 1) / multiple * multiple);
  return padded;
}

Layout doc_zigzag_layout(const Mask& documents, Count devices) {
  require_documents(documents, "doc-zigzag");
  require_lengths_divisible(documents, 2 * devices, "doc-zigzag", "2N");
  std::vector<std::vector<Position>> blocks(static_cast<size_t>(devices));
  const auto& starts = documents.document_starts();
  for (size_t j = 0; j + 1 < starts.size(); ++j) {
    const Count chunk = (starts[j + 1] - starts[j]) / (2 * devices);
    for (Count d = 0; d < devices; ++d) {
      auto& block = blocks[static_cast<size_t>(d)];
      for (const Count g : {d, 2 * devices - 1 - d}) {  // the early chunk, then the late one
        for (Count i = 0; i < chunk; ++i) block.push_back(starts[j] + g * chunk + i);
      }
    }
  }
  return Layout::from_blocks(blocks, documents.seq_len(), "doc-zigzag", LayoutKind::doc_zigzag);
}

Layout doc_striped_layout(const Mask& documents, Count devices) {
  require_documents(documents, "doc-striped");
  require_lengths_divisible(documents, devices, "doc-striped", "N");
  std::vector<std::vector<Position>> blocks(static_cast<size_t>(devices));
  const auto& starts = documents.document_starts();
  for (size_t j = 0; j + 1 < starts.size(); ++j) {
    for (Position p = starts[j]; p < starts[j + 1]; ++p) blocks[static_cast<size_t>((p - starts[j]) % devices)].push_back(p);
  }
  return Layout::from_blocks(blocks, documents.seq_len(), "doc-striped", LayoutKind::doc_striped);
}

BalanceResult balanced_layout(const Mask& mask, Count devices, TileShape tile, Count slot) {
  const Count n = mask.seq_len();
  if (devices < 1 || n % devices != 0) {
    throw InputError(fmt::format("--seq-len {}: layout balanced needs it divisible by N = {}", n, devices));
  }
  const Count c = n / devices;
  if (slot < 0) throw InputError(fmt::format("--layouts balanced:{}: the slot must be at least 1 token", slot));
  slot = std::gcd(slot == 0 ? tile.query : slot, c);
  const Count slots = n / slot;
  const Count per_device = c / slot;

  // Estimated tile work of every slot; documents split a slot into pieces.
  std::vector<Count> cost(static_cast<size_t>(slots), 0);
  const std::vector<Position> whole{0, n};
  const auto& starts = mask.kind() == MaskKind::documents ? mask.document_starts() : whole;
  size_t doc = 0;
  for (Count s = 0; s < slots; ++s) {
    const Position a = s * slot;
    const Position b = a + slot;
    while (starts[doc + 1] <= a) ++doc;
    for (size_t j = doc; j + 1 < starts.size() && starts[j] < b; ++j) {
      const Position qa = std::max(a, starts[j]);
      const Position qb = std::min(b, starts[j + 1]);
      const Position lo = mask.kind() == MaskKind::documents ? starts[j] : mask.lowest_key(qa);
      const Position hi = mask.highest_key(qb - 1);
      cost[static_cast<size_t>(s)] += (hi + 1 - lo + tile.key - 1) / tile.key;
    }
  }

  // Longest processing time first, each device taking exactly c / slot slots.
  std::vector<Count> order(static_cast<size_t>(slots));
  std::iota(order.begin(), order.end(), Count{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](Count x, Count y) { return cost[static_cast<size_t>(x)] > cost[static_cast<size_t>(y)]; });
  std::vector<Count> load(static_cast<size_t>(devices), 0);
  std::vector<std::vector<Count>> owned(static_cast<size_t>(devices));
  using Entry = std::pair<Count, Count>;  // (load, device), least first
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> open;
  for (Count d = 0; d < devices; ++d) open.emplace(0, d);
  for (const Count s : order) {
    const auto [current, d] = open.top();
    open.pop();
    auto& mine = owned[static_cast<size_t>(d)];
    mine.push_back(s);
    load[static_cast<size_t>(d)] = current + cost[static_cast<size_t>(s)];
    if (static_cast<Count>(mine.size()) < per_device) open.emplace(load[static_cast<size_t>(d)], d);
  }

  // Local search: swap a slot of the busiest device for a cheaper one elsewhere while the pair's
  // larger load drops. Each device's slots are kept sorted by cost for the search.
  const auto by_cost = [&](Count x, Count y) {
    return cost[static_cast<size_t>(x)] != cost[static_cast<size_t>(y)] ? cost[static_cast<size_t>(x)] < cost[static_cast<size_t>(y)] : x < y;
  };
  for (auto& mine : owned) std::sort(mine.begin(), mine.end(), by_cost);
  const Count max_iterations = 64 * devices;
  for (Count iteration = 0; iteration < max_iterations; ++iteration) {
    const auto busiest = static_cast<size_t>(std::max_element(load.begin(), load.end()) - load.begin());
    const Count top = load[busiest];
    Count best_peak = top;
    size_t best_device = busiest, best_x = 0, best_y = 0;
    const auto& mine = owned[busiest];
    for (size_t xi = 0; xi < mine.size(); ++xi) {
      if (xi > 0 && cost[static_cast<size_t>(mine[xi])] == cost[static_cast<size_t>(mine[xi - 1])]) continue;
      const Count cx = cost[static_cast<size_t>(mine[xi])];
      for (size_t e = 0; e < load.size(); ++e) {
        if (e == busiest || load[e] >= top) continue;
        // The ideal partner costs cx - (top - load[e]) / 2; look at its neighbours in cost order.
        const Count ideal = cx - (top - load[e]) / 2;
        const auto& theirs = owned[e];
        const auto it = std::partition_point(theirs.begin(), theirs.end(),
                                             [&](Count y) { return cost[static_cast<size_t>(y)] < ideal; });
        for (auto candidate : {it, it == theirs.begin() ? theirs.end() : it - 1}) {
          if (candidate == theirs.end()) continue;
          const Count cy = cost[static_cast<size_t>(*candidate)];
          if (cy >= cx) continue;
          const Count peak = std::max(top - cx + cy, load[e] + cx - cy);
          if (peak < best_peak) {
            best_peak = peak;
            best_device = e;
            best_x = xi;
            best_y = static_cast<size_t>(candidate - theirs.begin());
          }
        }
      }
    }
    if (best_device == busiest) break;  // no swap lowers the busiest device
    auto& theirs = owned[best_device];
    const Count x = owned[busiest][best_x];
    const Count y = theirs[best_y];
    load[busiest] += cost[static_cast<size_t>(y)] - cost[static_cast<size_t>(x)];
    load[best_device] += cost[static_cast<size_t>(x)] - cost[static_cast<size_t>(y)];
    owned[busiest].erase(owned[busiest].begin() + static_cast<long>(best_x));
    owned[busiest].insert(std::lower_bound(owned[busiest].begin(), owned[busiest].end(), y, by_cost), y);
    theirs.erase(theirs.begin() + static_cast<long>(best_y));
    theirs.insert(std::lower_bound(theirs.begin(), theirs.end(), x, by_cost), x);
  }

  // Each device holds its slots in sequence order (long runs keep the work model fast).
  std::vector<std::vector<Position>> blocks(static_cast<size_t>(devices));
  for (Count d = 0; d < devices; ++d) {
    auto mine = owned[static_cast<size_t>(d)];
    std::sort(mine.begin(), mine.end());
    auto& block = blocks[static_cast<size_t>(d)];
    block.reserve(static_cast<size_t>(c));
    for (const Count s : mine) {
      for (Position p = s * slot; p < (s + 1) * slot; ++p) block.push_back(p);
    }
  }
  const Count total = std::accumulate(cost.begin(), cost.end(), Count{0});
  return BalanceResult{Layout::from_blocks(blocks, n, "balanced", LayoutKind::balanced), slot,
                       *std::max_element(load.begin(), load.end()),
                       static_cast<double>(total) / static_cast<double>(devices)};
}

}  // namespace stripesim::model
