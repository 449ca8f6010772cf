#include "stripesim/sim/ring_merge.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace stripesim::sim {

std::vector<Microseconds> merge_times(const model::Work& work, const std::vector<Microseconds>& call_us,
                                      const KernelProfile& kernel, KernelPass pass, const MergeShape& shape,
                                      GigabytesPerSecond memory_bandwidth) {
  const Count rounds = work.query_tile_profile.rounds();
  const Count devices = work.query_tile_profile.devices();
  if (static_cast<Count>(call_us.size()) != rounds * devices) throw std::invalid_argument("merge_times: one call time per (round, device)");
  std::vector<Microseconds> out(call_us.size(), 0.0);
  const double bytes_per_element = pass == KernelPass::forward ? kernel.merge.forward_bytes_per_element
                                                               : kernel.merge.backward_bytes_per_element;
  if (bytes_per_element == 0) return out;
  if (memory_bandwidth <= 0) throw std::invalid_argument("merge_times: needs the device's memory bandwidth");
  // The forward merges the output of its query rows; the backward adds dQ into its query rows
  // and dK, dV into its key rows (a zigzag call on the late half of the queries reads, and
  // writes the gradients of, every key; one on the early half of the keys, half of them).
  const auto streams = static_cast<double>(shape.call.streams);
  const auto kv_streams = pass == KernelPass::forward ? 0.0 : static_cast<double>(2 * shape.kv_streams);

  // The rows a call of `queries` writes: its query tiles that have work (every tile where the
  // kernel gives empty ones a block too), the last tile holding what is left of its queries.
  const auto rows_written = [&](const model::QueryTileProfile& tiles, Count queries) {
    Count rows = 0;
    for (size_t q = 0; q < tiles.size(); ++q) {
      if (tiles[q].full + tiles[q].partial == 0 && !kernel.empty_query_tiles_launch) continue;
      const Count first = static_cast<Count>(q) * shape.call.tile.query;
      rows += std::clamp<Count>(queries - first, 0, shape.call.tile.query);
    }
    return rows;
  };
  // The key rows a call of `keys` keys covers with dK, dV: its key tiles with work, the last one
  // short where the call ends inside it.
  const auto key_rows_written = [&](const model::QueryTileProfile& tiles, Count keys) {
    Count rows = 0;
    for (size_t k = 0; k < tiles.size(); ++k) {
      if (tiles[k].full + tiles[k].partial == 0) continue;
      rows += std::clamp<Count>(keys - static_cast<Count>(k) * shape.call.tile.key, 0, shape.call.tile.key);
    }
    return rows;
  };
  // Calls of the device's whole block, per profile; sliced calls (model::Work::call_queries), per
  // profile and length, as they come (a few: zigzag's halves).
  std::vector<Count> rows_of(work.profiles.size(), 0);
  for (size_t p = 0; p < work.profiles.size(); ++p) rows_of[p] = rows_written(work.profiles[p], shape.rows_per_device);
  std::map<std::pair<Count, Count>, Count> sliced_rows_of;
  // A trimmed call (q[t:] x k[:-t], where the kernel is called so) is a call of its trimmed length:
  // it writes the output (dQ) of all but its first t query rows and the dK, dV of all but its
  // last t keys.
  const auto trimmed_to = [&](Count r, Count d) {
    return kernel.trims_below_diagonal && work.trimmed_length.rounds() > 0 ? work.trimmed_length.at(r, d) : Count{0};
  };
  const auto rows_of_call = [&](Count r, Count d) {
    const Count profile = work.query_tile_profile.at(r, d);
    const Count trimmed = trimmed_to(r, d);
    const Count queries = trimmed > 0 ? trimmed : work.call_queries.rounds() > 0 ? work.call_queries.at(r, d) : 0;
    if (queries == 0) return rows_of[static_cast<size_t>(profile)];
    const auto [it, added] = sliced_rows_of.try_emplace({profile, queries}, 0);
    if (added) it->second = rows_written(work.profiles[static_cast<size_t>(profile)], queries);
    return it->second;
  };
  // Round by round, so that the matrices are read in the order they are stored (devices apart
  // by a whole row would each miss the cache at thousands of devices).
  std::vector<char> started(static_cast<size_t>(devices), 0);  // whether the device has called yet
  for (Count r = 0; r < rounds; ++r) {
    for (Count d = 0; d < devices; ++d) {
      const auto i = static_cast<size_t>(r * devices + d);
      if (call_us[i] <= 0) continue;
      if (started[static_cast<size_t>(d)]) {
        const Count rows = rows_of_call(r, d);
        const Count trimmed = trimmed_to(r, d);
        const bool slice = pass == KernelPass::forward && (rows < shape.rows_per_device || trimmed > 0);
        const double per_element = bytes_per_element + (slice ? kernel.merge.forward_slice_bytes_per_element : 0.0);
        const double key_rows =
            kv_streams == 0 ? 0.0
                            : static_cast<double>(key_rows_written(work.profiles[static_cast<size_t>(work.key_tile_profile.at(r, d))],
                                                                   trimmed > 0 ? trimmed : shape.rows_per_device));
        const double elements = static_cast<double>(rows) * streams + key_rows * kv_streams;
        const double bytes = per_element * elements * static_cast<double>(shape.call.head_dim);
        out[i] = transfer_time_us(static_cast<Bytes>(std::llround(bytes)), memory_bandwidth);
      }
      started[static_cast<size_t>(d)] = 1;
    }
  }
  return out;
}

}  // namespace stripesim::sim
