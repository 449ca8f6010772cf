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

PaddedDocuments pad_documents(const Mask& mask, Count devices) {
  if (mask.kind() != MaskKind::documents) throw InputError("--pad-documents: needs a documents mask");
  if (devices < 1) throw InputError(fmt::format("--devices {}: must be at least 1", devices));
  const auto padded = pad_document_lengths(mask.document_lengths(), 2 * devices);
  const Count padded_len = std::accumulate(padded.begin(), padded.end(), Count{0});
  if (padded_len > kMaxSeqLen) throw InputError("--pad-documents: the padded sequence exceeds 2^31 tokens");
  return {Mask::documents(padded_len, padded), padded_len, padded_len - mask.seq_len()};
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

namespace {

// A piece of the sequence that moves as a whole: a short document, or a chunk of a long one.
struct Unit {
  Position begin = 0;
  Count length = 0;
  Count cost = 0;  // estimated tiles
};

// Tiles a query range needs, document by document: each query tile of TQ (aligned to the unit)
// sees the keys [lowest_key(first query), highest_key(last query)] in tiles of TK, as a varlen
// kernel tiling every document on its own would.
Count estimate_tiles(const Mask& mask, const std::vector<Position>& starts, Position begin, Count length, TileShape tile) {
  Count tiles = 0;
  for (Position qa = begin; qa < begin + length; qa += tile.query) {
    const Position qb = std::min(begin + length, qa + tile.query);
    const auto doc = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), qa) - starts.begin() - 1);
    for (size_t j = doc; j + 1 < starts.size() && starts[j] < qb; ++j) {
      const Position a = std::max(qa, starts[j]);
      const Position b = std::min(qb, starts[j + 1]);
      const Position lo = mask.kind() == MaskKind::documents ? starts[j] : mask.lowest_key(a);
      tiles += (mask.highest_key(b - 1) + 1 - lo + tile.key - 1) / tile.key;
    }
  }
  return tiles;
}

}  // namespace

BalanceResult balanced_layout(const Mask& mask, Count devices, TileShape tile, Count slot) {  // slot: chunk size, 0 = default
  const Count n = mask.seq_len();
  if (devices < 1 || n % devices != 0) {
    throw InputError(fmt::format("--seq-len {}: layout balanced needs it divisible by N = {}", n, devices));
  }
  const Count c = n / devices;
  if (slot < 0) throw InputError(fmt::format("--layouts balanced:{}: the chunk must be at least 1 token", slot));
  // Documents up to a chunk stay whole (all their work local, tiles dense); longer ones, and a
  // causal or window mask's single sequence, are cut into chunks of whole query tiles.
  const Count chunk = slot > 0 ? slot : std::max(tile.query, c / 16 / tile.query * tile.query);
  const std::vector<Position> whole{0, n};
  const auto& starts = mask.kind() == MaskKind::documents ? mask.document_starts() : whole;

  const auto make_unit = [&](Position begin, Count length) {
    return Unit{begin, length, estimate_tiles(mask, starts, begin, length, tile)};
  };
  // Units by decreasing cost (then longer first, then sequence order): longest processing time first.
  const auto heavier = [](const Unit& x, const Unit& y) {
    if (x.cost != y.cost) return x.cost < y.cost;
    if (x.length != y.length) return x.length < y.length;
    return x.begin > y.begin;
  };
  std::priority_queue<Unit, std::vector<Unit>, decltype(heavier)> pending(heavier);
  for (size_t j = 0; j + 1 < starts.size(); ++j) {
    for (Position p = starts[j]; p < starts[j + 1]; p += chunk) pending.push(make_unit(p, std::min(chunk, starts[j + 1] - p)));
  }

  std::vector<Count> load(static_cast<size_t>(devices), 0);
  std::vector<Count> room(static_cast<size_t>(devices), c);
  std::vector<std::vector<Unit>> owned(static_cast<size_t>(devices));
  while (!pending.empty()) {
    Unit unit = pending.top();
    pending.pop();
    // The least loaded device with room for the whole unit.
    size_t best = load.size();
    size_t roomiest = 0;
    for (size_t d = 0; d < load.size(); ++d) {
      if (room[d] >= unit.length && (best == load.size() || load[d] < load[best])) best = d;
      if (room[d] > room[roomiest]) roomiest = d;
    }
    if (best == load.size()) {
      // It fits nowhere whole: fill the roomiest device with its head, queue the tail.
      const Count head = room[roomiest];
      pending.push(make_unit(unit.begin + head, unit.length - head));
      unit = make_unit(unit.begin, head);
      best = roomiest;
    }
    owned[best].push_back(unit);
    load[best] += unit.cost;
    room[best] -= unit.length;
  }

  // Local search: swap a unit of the busiest device for a cheaper unit of the same length
  // elsewhere (lengths must match to keep every device at c tokens) while the pair's larger
  // load drops.
  const Count max_iterations = 64 * devices;
  for (Count iteration = 0; iteration < max_iterations; ++iteration) {
    const auto busiest = static_cast<size_t>(std::max_element(load.begin(), load.end()) - load.begin());
    const Count top = load[busiest];
    Count best_peak = top;
    size_t best_device = busiest, best_x = 0, best_y = 0;
    for (size_t xi = 0; xi < owned[busiest].size(); ++xi) {
      const Unit& x = owned[busiest][xi];
      for (size_t e = 0; e < load.size(); ++e) {
        if (e == busiest || load[e] >= top) continue;
        for (size_t yi = 0; yi < owned[e].size(); ++yi) {
          const Unit& y = owned[e][yi];
          if (y.length != x.length || y.cost >= x.cost) continue;
          const Count peak = std::max(top - x.cost + y.cost, load[e] + x.cost - y.cost);
          if (peak < best_peak) {
            best_peak = peak;
            best_device = e;
            best_x = xi;
            best_y = yi;
          }
        }
      }
    }
    if (best_device == busiest) break;  // no swap lowers the busiest device
    Unit& x = owned[busiest][best_x];
    Unit& y = owned[best_device][best_y];
    load[busiest] += y.cost - x.cost;
    load[best_device] += x.cost - y.cost;
    std::swap(x, y);
  }

  // Each device holds its units in sequence order (long runs keep the work model fast).
  std::vector<std::vector<Position>> blocks(static_cast<size_t>(devices));
  Count total = 0;
  for (Count d = 0; d < devices; ++d) {
    auto& mine = owned[static_cast<size_t>(d)];
    std::sort(mine.begin(), mine.end(), [](const Unit& x, const Unit& y) { return x.begin < y.begin; });
    auto& block = blocks[static_cast<size_t>(d)];
    block.reserve(static_cast<size_t>(c));
    for (const Unit& unit : mine) {
      for (Position p = unit.begin; p < unit.begin + unit.length; ++p) block.push_back(p);
      total += unit.cost;
    }
  }
  return BalanceResult{Layout::from_blocks(blocks, n, slot > 0 ? fmt::format("balanced:{}", slot) : "balanced",
                                           LayoutKind::balanced),
                       chunk, *std::max_element(load.begin(), load.end()),
                       static_cast<double>(total) / static_cast<double>(devices)};
}

}  // namespace stripesim::model
