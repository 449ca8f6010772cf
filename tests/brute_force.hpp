#pragma once
// Reference implementations for the tests: enumerate every (q, k) pair and every tile, with the
// masks written straight from DESIGN.md's definitions (not through Mask's interval helpers).
#include <map>
#include <vector>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/work_matrix.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::testing {

using model::Count;
using model::Position;

inline bool reference_allows(const model::Mask& mask, Position q, Position k) {
  switch (mask.kind()) {
    case model::MaskKind::causal: return k <= q;
    case model::MaskKind::bidirectional: return true;
    case model::MaskKind::window: return q - k >= 0 && q - k < mask.window_width();
    // Both inside the prefix, or causal.
    case model::MaskKind::prefix: return (q < mask.prefix_length() && k < mask.prefix_length()) || k <= q;
    case model::MaskKind::documents: {
      // Same document (found by walking the lengths), neither token in its padding (the
      // document's last tokens), causal inside it, and inside the window if there is one.
      Count doc_q = -1, doc_k = -1, start = 0;
      bool padding = false;
      for (size_t j = 0; j < mask.document_lengths().size(); ++j) {
        const Count end = start + mask.document_lengths()[j];
        const Count padding_from = end - mask.document_padding()[j];
        if (q >= start && q < end) doc_q = static_cast<Count>(j);
        if (k >= start && k < end) doc_k = static_cast<Count>(j);
        padding |= (q >= padding_from && q < end) || (k >= padding_from && k < end);
        start = end;
      }
      const bool in_window = mask.window_width() == 0 || q - k < mask.window_width();
      return doc_q == doc_k && k <= q && in_window && !padding;
    }
  }
  return false;
}

// The document holding q, found by walking the lengths (0 for a mask without documents).
inline Count reference_document(const model::Mask& mask, Position q) {
  if (mask.kind() != model::MaskKind::documents) return 0;
  Count start = 0;
  for (size_t j = 0; j < mask.document_lengths().size(); ++j) {
    start += mask.document_lengths()[j];
    if (q < start) return static_cast<Count>(j);
  }
  return -1;
}

// Whether q is one of its document's padding tokens (V+P: the last P), walking the lengths.
inline bool reference_is_padding(const model::Mask& mask, Position q) {
  if (mask.kind() != model::MaskKind::documents) return false;
  Count end = 0;
  for (size_t j = 0; j < mask.document_lengths().size(); ++j) {
    end += mask.document_lengths()[j];
    if (q < end) return q >= end - mask.document_padding()[j];
  }
  return false;
}

// The tile every local index of `device` falls in, as (document, tile index), in ascending order
// of both: fixed tiling cuts the local order (one pseudo-document); varlen cuts each document's
// local tokens on their own, from its first local token, its padding in no tile (a kernel given
// the actual lengths apart from the padded ones never reads it): (-1, 0).
inline std::vector<std::pair<Count, Count>> reference_tiles(const model::Layout& layout, const model::Mask& mask,
                                                            Count device, Count side, model::Tiling tiling) {
  std::map<Count, Count> seen_in_document;
  std::vector<std::pair<Count, Count>> tiles;
  for (Count l = 0; l < layout.block_size(); ++l) {
    const bool varlen = tiling == model::Tiling::varlen;
    if (varlen && reference_is_padding(mask, layout.position(device, l))) {
      tiles.emplace_back(-1, 0);
      continue;
    }
    const Count doc = varlen ? reference_document(mask, layout.position(device, l)) : 0;
    tiles.emplace_back(doc, seen_in_document[doc]++ / side);
  }
  return tiles;
}

// The call a kernel whose causal mask always keeps the diagonal makes for queries of `device`
// against keys of `source`, by its definition: when the causal mask of the two blocks is exactly
// "key j allowed for query i iff j <= i - t" for some t in [1, c), it runs q[t:] x k[:-t], a
// call of c - t; 0 otherwise (the block runs as it is, or no such trim describes it).
inline Count reference_trimmed_length(const model::Layout& layout, model::DeviceId device, model::DeviceId source) {
  const Count c = layout.block_size();
  for (Count t = 1; t < c; ++t) {
    bool matches = true;
    for (Count ql = 0; ql < c && matches; ++ql) {
      for (Count kl = 0; kl < c && matches; ++kl) {
        matches = (layout.position(source, kl) <= layout.position(device, ql)) == (kl <= ql - t);
      }
    }
    if (matches) return c - t;
  }
  return 0;
}

// Whether `mask` allows exactly causal's pairs (k <= q), pair by pair: the masks a kernel runs as
// the causal one, whatever they are called.
inline bool reference_is_causal(const model::Mask& mask) {
  for (Position q = 0; q < mask.seq_len(); ++q) {
    for (Position k = 0; k < mask.seq_len(); ++k) {
      if (reference_allows(mask, q, k) != (k <= q)) return false;
    }
  }
  return true;
}

// Every count of count_work(..., WorkDetail::query_tiles, tiling), by enumeration: the matrices,
// and each (round, device)'s per-query-tile profile (full and partial key tiles of every query
// tile, documents in order, each in local order) in `profiles`, one entry per (round, device)
// ([round * devices + device]), and the same from the keys' side in `key_profiles` (every key
// tile of the K/V block, in the same order, with its full and partial query tiles).
struct BruteForceWork {
  model::Work work;
  std::vector<model::QueryTileProfile> profiles;
  std::vector<model::KeyTileProfile> key_profiles;
};

// With CallSlicing::runs, a call holds the span of each side's runs that have an allowed pair
// with the other side (from the first such run to the last), tiled from the span's start, by
// its definition (tile_shape.hpp): where the kernel cuts fixed tiles (not varlen documents), at
// most model::kMaxSlicedRuns runs a side, some side of more than one run, and some work.
inline std::pair<Count, Count> reference_span_with_work(const model::Layout& layout, const model::Mask& mask,
                                                        Count device, Count other, bool device_is_queries) {
  Count begin = 0, end = 0;
  bool found = false;
  for (const model::Run& run : layout.runs(device)) {
    bool work = false;
    for (Count i = 0; i < run.length && !work; ++i) {
      for (Count l = 0; l < layout.block_size() && !work; ++l) {
        const Position mine = run.at(i), theirs = layout.position(other, l);
        work = device_is_queries ? reference_allows(mask, mine, theirs) : reference_allows(mask, theirs, mine);
      }
    }
    if (!work) continue;
    if (!found) begin = run.local_begin;
    end = run.local_begin + run.length;
    found = true;
  }
  return {begin, end};
}

inline BruteForceWork brute_force_work(const model::Layout& layout, const model::Mask& mask, model::TileShape tile,
                                       model::Tiling tiling = model::Tiling::fixed,
                                       model::CallSlicing slicing = model::CallSlicing::whole) {
  const Count devices = layout.devices();
  const Count c = layout.block_size();
  BruteForceWork out{{model::WorkMatrix(devices, devices), model::WorkMatrix(devices, devices),
                      model::WorkMatrix(devices, devices), {}, {}, model::WorkMatrix(devices, devices), {},
                      model::WorkMatrix(devices, devices)},
                     {},
                     {}};
  model::Work& work = out.work;
  // Calls run causal (and trim) under causal's pairs, a window, and a prefix past its prefix.
  const bool causal = reference_is_causal(mask) || mask.kind() == model::MaskKind::window || mask.kind() == model::MaskKind::prefix;
  for (Count r = 0; r < devices; ++r) {
    for (Count d = 0; d < devices; ++d) {
      const Count source = ((d - r) % devices + devices) % devices;
      Position last_query = 0;
      for (Count l = 0; l < c; ++l) last_query = std::max(last_query, layout.position(d, l));
      if (causal && last_query >= mask.prefix_length()) work.trimmed_length.at(r, d) = reference_trimmed_length(layout, d, source);
      auto query_tile_of = reference_tiles(layout, mask, d, tile.query, tiling);
      auto key_tile_of = reference_tiles(layout, mask, source, tile.key, tiling);
      const bool varlen_documents = tiling == model::Tiling::varlen && mask.kind() == model::MaskKind::documents;
      const size_t query_runs = layout.runs(d).size(), key_runs = layout.runs(source).size();
      bool any_work = false;
      for (Count ql = 0; ql < c && !any_work; ++ql) {
        for (Count kl = 0; kl < c && !any_work; ++kl) any_work = reference_allows(mask, layout.position(d, ql), layout.position(source, kl));
      }
      if (slicing == model::CallSlicing::runs && !varlen_documents && any_work && (query_runs > 1 || key_runs > 1) &&
          query_runs <= model::kMaxSlicedRuns && key_runs <= model::kMaxSlicedRuns) {
        // Each side's span with work, tiled from its start; what is outside it is in no tile.
        const auto slice = [&](std::vector<std::pair<Count, Count>>& tile_of, std::pair<Count, Count> span, Count side) {
          for (Count l = 0; l < c; ++l) {
            tile_of[static_cast<size_t>(l)] = l >= span.first && l < span.second ? std::pair<Count, Count>{0, (l - span.first) / side}
                                                                                 : std::pair<Count, Count>{-1, 0};
          }
        };
        const auto query_span = reference_span_with_work(layout, mask, d, source, true);
        if (query_span.first > 0 || query_span.second < c) work.call_queries.at(r, d) = query_span.second - query_span.first;
        slice(query_tile_of, query_span, tile.query);
        slice(key_tile_of, reference_span_with_work(layout, mask, source, d, false), tile.key);
      }
      using TileId = std::pair<std::pair<Count, Count>, std::pair<Count, Count>>;
      std::map<TileId, std::pair<Count, Count>> tiles;  // -> (allowed, size)
      for (Count ql = 0; ql < c; ++ql) {
        for (Count kl = 0; kl < c; ++kl) {
          const bool allowed = reference_allows(mask, layout.position(d, ql), layout.position(source, kl));
          work.unmasked_elements.at(r, d) += allowed ? 1 : 0;
          if (tiling == model::Tiling::varlen && query_tile_of[ql].first != key_tile_of[kl].first) continue;
          if (query_tile_of[ql].first < 0 || key_tile_of[kl].first < 0) continue;  // outside the call's slices
          auto& cell = tiles[{query_tile_of[ql], key_tile_of[kl]}];
          cell.first += allowed ? 1 : 0;
          cell.second += 1;
        }
      }
      std::map<std::pair<Count, Count>, model::QueryTileLoad> loads;
      std::map<std::pair<Count, Count>, model::QueryTileLoad> key_loads;
      for (const auto& id : query_tile_of) {
        if (id.first >= 0) loads[id];
      }
      for (const auto& id : key_tile_of) {
        if (id.first >= 0) key_loads[id];
      }
      for (const auto& [id, cell] : tiles) {
        if (cell.first == 0) continue;
        ++work.active_tiles.at(r, d);
        auto& load = loads[id.first];
        auto& key_load = key_loads[id.second];
        if (cell.first < cell.second) {
          ++work.partial_tiles.at(r, d);
          ++load.partial;
          ++key_load.partial;
        } else {
          ++load.full;
          ++key_load.full;
        }
      }
      model::QueryTileProfile profile;
      for (const auto& [id, load] : loads) profile.push_back(load);
      out.profiles.push_back(std::move(profile));
      model::KeyTileProfile key_profile;
      for (const auto& [id, load] : key_loads) key_profile.push_back(load);
      out.key_profiles.push_back(std::move(key_profile));
    }
  }
  return out;
}

}  // namespace stripesim::testing
