#pragma once
// Ulysses' data movement on a GPU, as plans of row copies (row_copy.hpp) for both GPU backends:
// each device's shard holds all heads of its tokens (local order), device e's whole sequence
// holds e's heads of every token in original order. The cuda backend copies a shard's heads
// straight into the receiver's whole sequence and its output rows straight back; the nccl
// backend packs them into a dense buffer per peer, exchanges the buffers, and unpacks. The
// backends launch the plans (launch_copy_rows); the tests replay them on host memory.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ring_memory.hpp"
#include "row_copy.hpp"
#include "stripesim/validate/ulysses_split.hpp"

namespace stripesim::validate::gpu {

// In, on one GPU: `shard`'s tokens' Q, K and V heads of device `receiver` onto their original
// positions (the shard's positions, on the device) in `whole`, the receiver's whole sequence.
[[nodiscard]] std::vector<RowCopy> ulysses_gather(const DeviceSlots& shard, const DeviceSlots& whole,
                                                  const UlyssesSplit& split, Count receiver);
// Out, on one GPU: `whole`'s output (device `sender`'s heads, fp32) of `shard`'s tokens into
// those heads of the shard's output.
[[nodiscard]] RowCopy ulysses_return(const DeviceSlots& whole, const DeviceSlots& shard, const UlyssesSplit& split,
                                     Count sender);

// In, between GPUs: `shard`'s tokens' heads of `receiver` packed into `to`, [Q | K | V] of
// ulysses_pack_bytes; unpacked on the receiver from `from` onto `rows` (the sender's tokens'
// original positions) of its whole sequence.
[[nodiscard]] std::int64_t ulysses_pack_bytes(const DeviceSlots& shard, const UlyssesSplit& split);
[[nodiscard]] std::vector<RowCopy> ulysses_pack(const DeviceSlots& shard, const UlyssesSplit& split, Count receiver,
                                                std::byte* to);
[[nodiscard]] std::vector<RowCopy> ulysses_unpack(const std::byte* from, const DeviceSlots& whole, const std::int64_t* rows,
                                                  Count tokens);
// Out, between GPUs: the sender's output of the tokens at `rows` packed into `to`
// (ulysses_output_pack_bytes); unpacked on the shard's device into the sender's heads.
[[nodiscard]] std::int64_t ulysses_output_pack_bytes(const DeviceSlots& whole, Count tokens);
[[nodiscard]] RowCopy ulysses_output_pack(const DeviceSlots& whole, const std::int64_t* rows, Count tokens, std::byte* to);
[[nodiscard]] RowCopy ulysses_output_unpack(const std::byte* from, const DeviceSlots& shard, const UlyssesSplit& split,
                                            Count sender);

}  // namespace stripesim::validate::gpu
