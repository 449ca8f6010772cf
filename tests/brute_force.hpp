#pragma once
// Reference implementations for the tests: enumerate every (q, k) pair and every tile, with the
// masks written straight from DESIGN.md's definitions (not through Mask's interval helpers).
#include <map>
#include <vector>

#include "stripesim/model/layout.hpp"
#include "stripesim/model/mask.hpp"
#include "stripesim/model/tile_shape.hpp"
#include "stripesim/model/work_matrix.hpp"
#include "stripesim/model/work_model.hpp"

namespace stripesim::testing {

using model::Count;
using model::Position;

inline bool reference_allows(const model::Mask& mask, Position q, Position k) {
  switch (mask.kind()) {
    case model::MaskKind::causal: return k <= q;
    case model::MaskKind::bidirectional: return true;
    case model::MaskKind::window: return q - k >= 0 && q - k < mask.window_width();
    case model::MaskKind::documents: {
      // Same document (found by walking the lengths) and causal inside it.
      Count doc_q = -1, doc_k = -1, start = 0;
      for (size_t j = 0; j < mask.document_lengths().size(); ++j) {
        const Count end = start + mask.document_lengths()[j];
        if (q >= start && q < end) doc_q = static_cast<Count>(j);
        if (k >= start && k < end) doc_k = static_cast<Count>(j);
        start = end;
      }
      return doc_q == doc_k && k <= q;
    }
  }
  return false;
}

// Every count of count_work(..., WorkDetail::query_tiles), by enumeration: the matrices, and each
// (round, device)'s per-query-tile profile (full and partial key tiles of every query tile, in
// local order) in `profiles`, one entry per (round, device) ([round * devices + device]).
struct BruteForceWork {
  model::Work work;
  std::vector<model::QueryTileProfile> profiles;
};

inline BruteForceWork brute_force_work(const model::Layout& layout, const model::Mask& mask, model::TileShape tile) {
  const Count devices = layout.devices();
  const Count c = layout.block_size();
  const Count query_tiles = (c + tile.query - 1) / tile.query;
  BruteForceWork out{{model::WorkMatrix(devices, devices), model::WorkMatrix(devices, devices),
                      model::WorkMatrix(devices, devices), {}, {}},
                     {}};
  model::Work& work = out.work;
  for (Count r = 0; r < devices; ++r) {
    for (Count d = 0; d < devices; ++d) {
      const Count source = ((d - r) % devices + devices) % devices;
      std::map<std::pair<Count, Count>, std::pair<Count, Count>> tiles;  // -> (allowed, size)
      for (Count ql = 0; ql < c; ++ql) {
        for (Count kl = 0; kl < c; ++kl) {
          const bool allowed = reference_allows(mask, layout.position(d, ql), layout.position(source, kl));
          auto& cell = tiles[{ql / tile.query, kl / tile.key}];
          cell.first += allowed ? 1 : 0;
          cell.second += 1;
          work.unmasked_elements.at(r, d) += allowed ? 1 : 0;
        }
      }
      model::QueryTileProfile profile(static_cast<size_t>(query_tiles), model::QueryTileLoad{0, 0});
      for (const auto& [key, cell] : tiles) {
        if (cell.first == 0) continue;
        ++work.active_tiles.at(r, d);
        auto& load = profile[static_cast<size_t>(key.first)];
        if (cell.first < cell.second) {
          ++work.partial_tiles.at(r, d);
          ++load.partial;
        } else {
          ++load.full;
        }
      }
      out.profiles.push_back(std::move(profile));
    }
  }
  return out;
}

}  // namespace stripesim::testing
