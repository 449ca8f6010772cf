#include "ulysses_slices.hpp"

#include <array>

namespace stripesim::validate::gpu {
namespace {

constexpr std::int64_t kOutputBytes = 4;  // the output is fp32 (the inputs: kInputBytes, ring_memory.hpp)

// Device `receiver`'s heads in a shard's Q, K and V: what the shard sends it.
std::array<RowSlice, 3> shard_inputs(const DeviceSlots& shard, const UlyssesSplit& split, Count receiver) {
  const BlockGeometry& g = shard.geometry;
  const std::int64_t head = g.head_dim * kInputBytes;
  const std::int64_t q_row = split.per_device.heads * head, kv_row = split.per_device.kv_heads * head;
  const std::int64_t kv_offset = split.first_kv_head(receiver) * head;
  return {RowSlice{shard.q, g.heads * head, split.first_head(receiver) * head, q_row},
          RowSlice{shard.k(0), g.kv_heads * head, kv_offset, kv_row}, RowSlice{shard.v(0), g.kv_heads * head, kv_offset, kv_row}};
}

// A device's whole sequence: its Q, K and V, dense rows, row p at original position p.
std::array<RowSlice, 3> whole_inputs(const DeviceSlots& whole) {
  const BlockGeometry& g = whole.geometry;
  const std::int64_t head = g.head_dim * kInputBytes;
  return {RowSlice::dense(whole.q, g.heads * head), RowSlice::dense(whole.k(0), g.kv_heads * head),
          RowSlice::dense(whole.v(0), g.kv_heads * head)};
}

// Device `sender`'s heads in a shard's output: where its output of those tokens goes.
RowSlice shard_output(const DeviceSlots& shard, const UlyssesSplit& split, Count sender) {
  const std::int64_t head = shard.geometry.head_dim * kOutputBytes;
  return {shard.out, shard.geometry.heads * head, split.first_head(sender) * head, split.per_device.heads * head};
}

RowSlice whole_output(const DeviceSlots& whole) {
  return RowSlice::dense(whole.out, whole.geometry.heads * whole.geometry.head_dim * kOutputBytes);
}

}  // namespace

std::vector<RowCopy> ulysses_gather(const DeviceSlots& shard, const DeviceSlots& whole, const UlyssesSplit& split,
                                    Count receiver) {
  const std::array<RowSlice, 3> from = shard_inputs(shard, split, receiver);
  const std::array<RowSlice, 3> to = whole_inputs(whole);
  std::vector<RowCopy> copies;
  for (std::size_t i = 0; i < 3; ++i) {
    copies.push_back(slice_copy(from[i], nullptr, to[i], shard.positions(0), shard.geometry.tokens));
  }
  return copies;
}

RowCopy ulysses_return(const DeviceSlots& whole, const DeviceSlots& shard, const UlyssesSplit& split, Count sender) {
  return slice_copy(whole_output(whole), shard.positions(0), shard_output(shard, split, sender), nullptr, shard.geometry.tokens);
}

std::int64_t ulysses_pack_bytes(const DeviceSlots& shard, const UlyssesSplit& split) {
  std::int64_t bytes = 0;
  for (const RowSlice& slice : shard_inputs(shard, split, 0)) bytes += slice.row_bytes * shard.geometry.tokens;
  return bytes;
}

std::vector<RowCopy> ulysses_pack(const DeviceSlots& shard, const UlyssesSplit& split, Count receiver, std::byte* to) {
  std::vector<RowCopy> copies;
  for (const RowSlice& slice : shard_inputs(shard, split, receiver)) {
    copies.push_back(slice_copy(slice, nullptr, RowSlice::dense(to, slice.row_bytes), nullptr, shard.geometry.tokens));
    to += slice.row_bytes * shard.geometry.tokens;
  }
  return copies;
}

std::vector<RowCopy> ulysses_unpack(const std::byte* from, const DeviceSlots& whole, const std::int64_t* rows, Count tokens) {
  std::vector<RowCopy> copies;
  for (const RowSlice& slice : whole_inputs(whole)) {
    // The packed buffer is only read: RowSlice holds a mutable pointer for either side.
    copies.push_back(slice_copy(RowSlice::dense(const_cast<std::byte*>(from), slice.row_bytes), nullptr, slice, rows, tokens));
    from += slice.row_bytes * tokens;
  }
  return copies;
}

std::int64_t ulysses_output_pack_bytes(const DeviceSlots& whole, Count tokens) { return whole_output(whole).row_bytes * tokens; }

RowCopy ulysses_output_pack(const DeviceSlots& whole, const std::int64_t* rows, Count tokens, std::byte* to) {
  const RowSlice from = whole_output(whole);
  return slice_copy(from, rows, RowSlice::dense(to, from.row_bytes), nullptr, tokens);
}

RowCopy ulysses_output_unpack(const std::byte* from, const DeviceSlots& shard, const UlyssesSplit& split, Count sender) {
  const RowSlice to = shard_output(shard, split, sender);
  return slice_copy(RowSlice::dense(const_cast<std::byte*>(from), to.row_bytes), nullptr, to, nullptr, shard.geometry.tokens);
}

}  // namespace stripesim::validate::gpu
