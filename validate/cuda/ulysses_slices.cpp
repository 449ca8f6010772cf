#include "ulysses_slices.hpp"

namespace stripesim::validate::gpu {
namespace {

constexpr std::int64_t kInputBytes = 2;   // bf16 / fp16
constexpr std::int64_t kOutputBytes = 4;  // the output is fp32

}  // namespace

std::array<RowSlice, 3> ulysses_shard_inputs(const DeviceSlots& shard, const UlyssesSplit& split, Count receiver) {
  const BlockGeometry& g = shard.geometry;
  const std::int64_t head = g.head_dim * kInputBytes;
  const std::int64_t q_row = split.per_device.heads * head, kv_row = split.per_device.kv_heads * head;
  const std::int64_t kv_offset = split.first_kv_head(receiver) * head;
  return {RowSlice{shard.q, g.heads * head, split.first_head(receiver) * head, q_row},
          RowSlice{shard.k(0), g.kv_heads * head, kv_offset, kv_row}, RowSlice{shard.v(0), g.kv_heads * head, kv_offset, kv_row}};
}

std::array<RowSlice, 3> ulysses_whole_inputs(const DeviceSlots& whole) {
  const BlockGeometry& g = whole.geometry;
  const std::int64_t head = g.head_dim * kInputBytes;
  return {RowSlice::dense(whole.q, g.heads * head), RowSlice::dense(whole.k(0), g.kv_heads * head),
          RowSlice::dense(whole.v(0), g.kv_heads * head)};
}

RowSlice ulysses_shard_output(const DeviceSlots& shard, const UlyssesSplit& split, Count sender) {
  const std::int64_t head = shard.geometry.head_dim * kOutputBytes;
  return {shard.out, shard.geometry.heads * head, split.first_head(sender) * head, split.per_device.heads * head};
}

RowSlice ulysses_whole_output(const DeviceSlots& whole) {
  return RowSlice::dense(whole.out, whole.geometry.heads * whole.geometry.head_dim * kOutputBytes);
}

}  // namespace stripesim::validate::gpu
