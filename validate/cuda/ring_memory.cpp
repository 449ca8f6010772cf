#include "ring_memory.hpp"

#include <fmt/format.h>

#include <cstring>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::validate::gpu {
namespace {

struct StateSizes {
  std::int64_t lowest, highest, out_acc, row_max, row_sum, out;
  [[nodiscard]] std::int64_t total() const { return lowest + highest + out_acc + row_max + row_sum + out; }
};

StateSizes state_sizes(const BlockGeometry& g) {
  const std::int64_t positions = align_up(g.tokens * 8);
  const std::int64_t matrix = align_up(g.rows() * g.head_dim * 4);
  const std::int64_t row = align_up(g.rows() * 4);
  return {positions, positions, matrix, row, row, matrix};
}

}  // namespace

BlockGeometry BlockGeometry::of(const RingProblem& problem) {
  const RingCase& c = problem.ring_case();
  return {problem.block_size(), c.heads, c.kv_heads, c.head_dim};
}

BlockGeometry GatheredKv::of(const RingProblem& problem) {
  BlockGeometry g = BlockGeometry::of(problem);
  g.tokens = problem.ring_case().seq_len;
  return g;
}

std::array<BlockCopy, 3> gather_block(const DeviceSlots& block, Count rank, const GatheredKv& gathered) {
  const BlockGeometry& g = block.geometry;
  return {BlockCopy{gathered.k() + rank * g.kv_bytes(), block.k(0), g.kv_bytes(), "K"},
          BlockCopy{gathered.v() + rank * g.kv_bytes(), block.v(0), g.kv_bytes(), "V"},
          BlockCopy{gathered.positions() + rank * g.tokens * 8, block.positions(0), g.tokens * 8, "positions"}};
}

BlockAttentionArgs DeviceSlots::kernel_args(int s, float scale) const {
  BlockAttentionArgs args;
  fill_shared_args(args, s, scale);
  args.out_acc = out_acc;
  args.row_max = row_max;
  args.row_sum = row_sum;
  return args;
}

RingMemory::RingMemory(const BlockGeometry& geometry, Count devices, Count rank, bool& inject_oom, int kv_slots)
    : geometry_(geometry), devices_(devices), kv_slots_(kv_slots) {
  const std::int64_t q = align_up(geometry.q_bytes());
  const std::int64_t slot = align_up(geometry.slot_bytes());
  const std::int64_t state = state_sizes(geometry).total();
  const std::string per = devices == 1 ? "" : fmt::format(" of {} devices", devices);
  queries_ = DeviceMemory(q * devices, rank, fmt::format("the Q blocks{}", per), inject_oom);
  const std::string which = kv_slots == 3 ? " (own block + 2 receive slots)" : "";
  kv_ = DeviceMemory(kv_slots * slot * devices, rank, fmt::format("the K/V buffers{}{}", per, which), inject_oom);
  state_ = DeviceMemory(state * devices, rank, fmt::format("the softmax state and output{}", per), inject_oom);
}

DeviceSlots RingMemory::device(Count index) const {
  const std::int64_t q = align_up(geometry_.q_bytes());
  const std::int64_t slot = align_up(geometry_.slot_bytes());
  const StateSizes sizes = state_sizes(geometry_);
  DeviceSlots s;
  s.geometry = geometry_;
  s.q = queries_.get() + q * index;
  for (int i = 0; i < kv_slots_; ++i) s.slot[i] = kv_.get() + slot * (kv_slots_ * index + i);
  std::byte* state = state_.get() + sizes.total() * index;
  auto take = [&state](std::int64_t bytes) {
    std::byte* here = state;
    state += bytes;
    return here;
  };
  s.lowest = reinterpret_cast<std::int64_t*>(take(sizes.lowest));
  s.highest = reinterpret_cast<std::int64_t*>(take(sizes.highest));
  s.out_acc = reinterpret_cast<float*>(take(sizes.out_acc));
  s.row_max = reinterpret_cast<float*>(take(sizes.row_max));
  s.row_sum = reinterpret_cast<float*>(take(sizes.row_sum));
  s.out = reinterpret_cast<float*>(take(sizes.out));
  return s;
}

void RingMemory::abandon() noexcept {
  queries_.abandon();
  kv_.abandon();
  state_.abandon();
}

void upload_shard(const RingProblem& problem, Count device, const DeviceSlots& slots, cudaStream_t stream, Count rank,
                  const Deadline& deadline) {
  const RingCase& c = problem.ring_case();
  const DeviceShard& shard = problem.shard(device);
  const BlockGeometry& g = slots.geometry;
  const auto q_row = static_cast<std::size_t>(c.heads * c.head_dim);
  const auto kv_row = static_cast<std::size_t>(c.kv_heads * c.head_dim);
  // Host images of the device buffers (2-byte elements), rows gathered in local order.
  std::vector<std::uint16_t> q(static_cast<std::size_t>(g.q_bytes() / 2));
  std::vector<std::byte> slot(static_cast<std::size_t>(g.slot_bytes()));
  auto* k = reinterpret_cast<std::uint16_t*>(slot.data());
  auto* v = k + g.kv_bytes() / 2;
  for (std::size_t l = 0; l < shard.positions.size(); ++l) {
    const auto p = static_cast<std::size_t>(shard.positions[l]);
    convert_to_precision(&problem.q()[p * q_row], q_row, c.precision, &q[l * q_row]);
    convert_to_precision(&problem.k()[p * kv_row], kv_row, c.precision, &k[l * kv_row]);
    convert_to_precision(&problem.v()[p * kv_row], kv_row, c.precision, &v[l * kv_row]);
  }
  std::memcpy(slot.data() + 2 * g.kv_bytes(), shard.positions.data(), shard.positions.size() * sizeof(std::int64_t));
  static_assert(sizeof(Position) == sizeof(std::int64_t));

  const auto copy = [&](void* to, const void* from, std::size_t bytes, const char* what) {
    check_cuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream), rank,
               [&] { return fmt::format("cudaMemcpy of device {}'s {} to the GPU", device, what); });
  };
  copy(slots.q, q.data(), q.size() * 2, "queries");
  copy(slots.slot[0], slot.data(), slot.size(), "K/V block");
  copy(slots.lowest, shard.lowest_key.data(), shard.lowest_key.size() * 8, "lowest keys");
  copy(slots.highest, shard.highest_key.data(), shard.highest_key.size() * 8, "highest keys");
  // The host images must outlive the copies.
  wait_stream(stream, rank, fmt::format("upload of device {}'s shard", device), deadline);
}

void reset_softmax_state(const DeviceSlots& slots, cudaStream_t stream, Count rank) {
  check_cuda(launch_init_state(slots.out_acc, slots.row_max, slots.row_sum, slots.geometry.rows(),
                               static_cast<int>(slots.geometry.head_dim), stream),
             rank, "launch of the softmax state init");
}

void poison_output(const DeviceSlots& slots, cudaStream_t stream, Count rank) {
  check_cuda(launch_fill_nan(slots.out, slots.geometry.rows() * slots.geometry.head_dim, stream), rank,
             "launch of the output poisoning");
}

void normalise_output(const DeviceSlots& slots, cudaStream_t stream, Count rank) {
  check_cuda(launch_normalise(slots.out_acc, slots.row_sum, slots.out, slots.geometry.rows(),
                              static_cast<int>(slots.geometry.head_dim), stream),
             rank, "launch of the output normalisation");
}

std::vector<float> download_local_output(const RingProblem& problem, Count device, const DeviceSlots& slots,
                                         cudaStream_t stream, Count rank, const Deadline& deadline) {
  const RingCase& c = problem.ring_case();
  std::vector<float> local(problem.shard(device).positions.size() * static_cast<std::size_t>(c.heads * c.head_dim));
  check_cuda(cudaMemcpyAsync(local.data(), slots.out, local.size() * sizeof(float), cudaMemcpyDeviceToHost, stream),
             rank, [&] { return fmt::format("cudaMemcpy of device {}'s output to the host", device); });
  wait_stream(stream, rank, fmt::format("download of device {}'s output", device), deadline);
  return local;
}

void scatter_output(const RingProblem& problem, Count device, const std::vector<float>& local, std::vector<double>& output) {
  const RingCase& c = problem.ring_case();
  const DeviceShard& shard = problem.shard(device);
  const auto row = static_cast<std::size_t>(c.heads * c.head_dim);
  for (std::size_t l = 0; l < shard.positions.size(); ++l) {
    const auto p = static_cast<std::size_t>(shard.positions[l]);
    for (std::size_t i = 0; i < row; ++i) output[p * row + i] = static_cast<double>(local[l * row + i]);
  }
}

void download_output(const RingProblem& problem, Count device, const DeviceSlots& slots, cudaStream_t stream,
                     Count rank, const Deadline& deadline, std::vector<double>& output) {
  scatter_output(problem, device, download_local_output(problem, device, slots, stream, rank, deadline), output);
}

KernelShape gpu_kernel_shape(const RingProblem& problem) {
  const RingCase& c = problem.ring_case();
  const KernelShape shape{c.precision, c.head_dim, c.tile, c.gpu_kernel, c.gpu_backward_kernel};
  check_kernel_shape(shape);
  // Heads are the wmma kernel's grid y dimension.
  if (c.heads > 65535) throw model::InputError(fmt::format("--heads {}: the GPU kernel supports at most 65535", c.heads));
  return shape;
}

}  // namespace stripesim::validate::gpu
