#pragma once
// Where Ulysses' rows are on a GPU, for both GPU backends (cuda: a device's heads copied straight
// into the whole sequence; nccl: packed, exchanged, unpacked): each device's shard holds all heads
// of its tokens, device e's whole sequence holds e's heads of every token in original order.
#include <array>

#include "ring_memory.hpp"
#include "row_copy.hpp"
#include "stripesim/validate/ulysses_split.hpp"

namespace stripesim::validate::gpu {

// Device `receiver`'s heads in a shard's Q, K and V (2-byte elements): what the shard sends it.
[[nodiscard]] std::array<RowSlice, 3> ulysses_shard_inputs(const DeviceSlots& shard, const UlyssesSplit& split, Count receiver);
// A device's whole sequence: its Q, K and V (dense rows, row p at original position p).
[[nodiscard]] std::array<RowSlice, 3> ulysses_whole_inputs(const DeviceSlots& whole);
// Device `sender`'s heads in a shard's output (fp32): where its output of those tokens goes.
[[nodiscard]] RowSlice ulysses_shard_output(const DeviceSlots& shard, const UlyssesSplit& split, Count sender);
// A device's output of the whole sequence (fp32, dense rows).
[[nodiscard]] RowSlice ulysses_whole_output(const DeviceSlots& whole);

}  // namespace stripesim::validate::gpu
