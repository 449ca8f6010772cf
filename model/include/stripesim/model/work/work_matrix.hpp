#pragma once
// A [round][device] matrix of counts: the unit of everything the model reports.
#include <cstddef>
#include <vector>

#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

class WorkMatrix {
 public:
  WorkMatrix() = default;
  WorkMatrix(Count rounds, Count devices)
      : rounds_(rounds), devices_(devices), cells_(static_cast<std::size_t>(rounds * devices), 0) {}

  [[nodiscard]] Count rounds() const { return rounds_; }
  [[nodiscard]] Count devices() const { return devices_; }
  [[nodiscard]] Count& at(Count round, DeviceId device) { return cells_[static_cast<std::size_t>(round * devices_ + device)]; }
  [[nodiscard]] Count at(Count round, DeviceId device) const {
    return cells_[static_cast<std::size_t>(round * devices_ + device)];
  }

  // Sum over rounds for every device.
  [[nodiscard]] std::vector<Count> device_totals() const;
  // Every cell, [round * devices + device].
  [[nodiscard]] const std::vector<Count>& cells() const { return cells_; }
  [[nodiscard]] Count total() const;

  friend bool operator==(const WorkMatrix&, const WorkMatrix&) = default;

 private:
  Count rounds_ = 0;
  Count devices_ = 0;
  std::vector<Count> cells_;
};

// The key tiles one query tile computes: what one thread block of a kernel that gives each
// query tile its own block (per head) works through.
struct QueryTileLoad {
  Count full = 0;     // active key tiles with every pair allowed
  Count partial = 0;  // active key tiles that also hold masked pairs (the kernel applies the mask)
  friend bool operator==(const QueryTileLoad&, const QueryTileLoad&) = default;
};

// Every query tile of one (round, device), in local order (the order a kernel launches them).
using QueryTileProfile = std::vector<QueryTileLoad>;
// The same block seen from the keys' side, as a backward kernel that gives each key tile its own
// block (dK and dV) works through it: every key tile of the K/V block, in its local order, with
// its full and partial query tiles (QueryTileLoad's fields count query tiles here). Equal to a
// QueryTileProfile as a multiset for causal blocks of contiguous or striped positions and for
// windows; not for zigzag's half blocks or documents (a 2 x 1 rectangle of tiles is two blocks of
// one from one side and one block of two from the other).
using KeyTileProfile = QueryTileProfile;

// The most partial tiles one query tile of `rows` holds. Causal-like masks give each at most its
// diagonal; a window's far edge or documents cut by fixed tiles give more.
[[nodiscard]] inline Count most_partial_tiles(const QueryTileProfile& rows) {
  Count most = 0;
  for (const QueryTileLoad& row : rows) most = row.partial > most ? row.partial : most;
  return most;
}

// The work matrices of one layout under one mask and tile shape.
struct Work {
  WorkMatrix unmasked_elements;  // allowed (q, k) pairs (empty with WorkDetail::calls)
  WorkMatrix active_tiles;       // tiles holding at least one allowed pair
  WorkMatrix partial_tiles;      // active tiles that also hold masked pairs (empty with WorkDetail::calls)
  // Only with WorkDetail::query_tiles or calls: each (round, device)'s query tile profile as an index into
  // `profiles`, where equal profiles are stored once (structured layouts have a handful).
  WorkMatrix query_tile_profile;
  std::vector<QueryTileProfile> profiles;
  // Only with WorkDetail::query_tiles or calls: the length of the call a kernel whose causal mask always
  // keeps the diagonal makes for each (round, device), 0 when it runs the block as it is. Under a
  // causal mask a block whose mask starts t rows below the diagonal (striped, K/V from a later
  // device: t = 1) has to be run on q[t:] x k[:-t], a call of L - t queries and keys, as
  // ring-flash-attention does; its tiles are the ones counted here, its length is not the block's.
  WorkMatrix trimmed_length;
  // Only with WorkDetail::query_tiles or calls: each (round, device)'s key tile profile (KeyTileProfile), an
  // index into `profiles` as query_tile_profile is.
  WorkMatrix key_tile_profile;
  // Only with WorkDetail::query_tiles or calls and CallSlicing::runs: the queries of each (round, device)'s
  // call where it is sliced to the runs with work (its query tiles, counted from the slice's first
  // query, are the profile's), 0 where the call holds the device's whole block. The rows the call
  // writes are these, not its tiles' (a slice ending inside a tile writes part of it).
  WorkMatrix call_queries;
};

}  // namespace stripesim::model
