#pragma once
// The time a ring implementation spends between its attention calls folding each call's result
// into the device's running result (KernelProfile::merge): memory-bound element-wise work on the
// compute stream, so it delays the device's next call as the call itself does.
#include <vector>

#include "stripesim/model/work/work_matrix.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/sim/kernel_time.hpp"

namespace stripesim::sim {

// What one call's result holds: the call's shape (its streams are the query heads x sequences,
// its query tile the one the work was counted with) and what the ring adds to it.
struct MergeShape {
  Count rows_per_device = 0;  // the device's queries (tokens of one ring block)
  KernelCallShape call;
  Count kv_streams = 1;  // K/V heads x sequences of each call
};

// Per (round, device), [round * devices + device]: the merge after that round's call. A call is
// made where call_us > 0 (kernel.call_times); a device's first call of the pass merges nothing.
// The forward merges the call's output rows (query tiles with work) over every head; the backward
// adds dQ over those rows and dK, dV over the same number of key rows (the masks counted here
// are symmetric, as the backward's kernel time assumes) over the K/V heads, in place. A forward
// call on part of the device's rows, or run trimmed (model::Work::trimmed_length), is merged on
// its slice and copied back (forward_slice_bytes_per_element on top).
[[nodiscard]] std::vector<Microseconds> merge_times(const model::Work& work, const std::vector<Microseconds>& call_us,
                                                    const KernelProfile& kernel, KernelPass pass, const MergeShape& shape,
                                                    GigabytesPerSecond memory_bandwidth);

}  // namespace stripesim::sim
