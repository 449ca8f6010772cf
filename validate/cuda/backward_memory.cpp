#include "backward_memory.hpp"

#include <fmt/format.h>

#include "stripesim/validate/cpu_ring.hpp"

namespace stripesim::validate::gpu {
namespace {

struct BackwardSizes {
  std::int64_t dout, lse2, delta, dq, grad;
  [[nodiscard]] std::int64_t total() const { return dout + lse2 + delta + dq + 2 * grad; }
};

BackwardSizes backward_sizes(const BlockGeometry& g) {
  const std::int64_t row = align_up(g.rows() * 4);
  return {align_up(g.q_bytes()), row, row, align_up(g.rows() * g.head_dim * 4), align_up(BackwardSlots::grad_bytes(g))};
}

}  // namespace

BlockBackwardArgs BackwardSlots::kernel_args(const DeviceSlots& forward, int kv, int g, float scale) const {
  BlockBackwardArgs args;
  forward.fill_shared_args(args, kv, scale);
  args.dout = dout;
  args.lse2 = lse2;
  args.delta = delta;
  args.dq = dq;
  args.dk = dk(g);
  args.dv = dv(g);
  return args;
}

BackwardMemory::BackwardMemory(const BlockGeometry& geometry, Count devices, Count rank)
    : geometry_(geometry), devices_(devices) {
  bool no_fault = false;  // STRIPESIM_INJECT_FAULT=oom hits the forward's first allocation
  memory_ = DeviceMemory(backward_sizes(geometry).total() * devices, rank,
                         fmt::format("the backward's dO, dQ and dK/dV accumulators of {} devices", devices), no_fault);
}

BackwardSlots BackwardMemory::device(Count index) const {
  const BackwardSizes sizes = backward_sizes(geometry_);
  std::byte* at = memory_.get() + sizes.total() * index;
  auto take = [&at](std::int64_t bytes) {
    std::byte* here = at;
    at += bytes;
    return here;
  };
  BackwardSlots s;
  s.geometry = geometry_;
  s.dout = take(sizes.dout);
  s.lse2 = reinterpret_cast<float*>(take(sizes.lse2));
  s.delta = reinterpret_cast<float*>(take(sizes.delta));
  s.dq = reinterpret_cast<float*>(take(sizes.dq));
  s.grad[0] = reinterpret_cast<float*>(take(sizes.grad));
  s.grad[1] = reinterpret_cast<float*>(take(sizes.grad));
  return s;
}

void upload_output_gradient(const RingProblem& problem, Count device, const BackwardSlots& slots, cudaStream_t stream,
                            Count rank, const Deadline& deadline) {
  const RingCase& c = problem.ring_case();
  const DeviceShard& shard = problem.shard(device);
  const auto row = static_cast<std::size_t>(c.heads * c.head_dim);
  std::vector<std::uint16_t> dout(shard.positions.size() * row);
  for (std::size_t l = 0; l < shard.positions.size(); ++l) {
    convert_to_precision(&problem.dout()[static_cast<std::size_t>(shard.positions[l]) * row], row, c.precision, &dout[l * row]);
  }
  check_cuda(cudaMemcpyAsync(slots.dout, dout.data(), dout.size() * 2, cudaMemcpyHostToDevice, stream), rank,
             [&] { return fmt::format("cudaMemcpy of device {}'s dO to the GPU", device); });
  wait_stream(stream, rank, fmt::format("upload of device {}'s dO", device), deadline);  // the host image outlives it
}

void download_gradients(const RingProblem& problem, Count device, const BackwardSlots& slots, int home_slot,
                        cudaStream_t stream, Count rank, const Deadline& deadline, std::vector<double>& gradients) {
  const RingCase& c = problem.ring_case();
  const DeviceShard& shard = problem.shard(device);
  const auto q_row = static_cast<std::size_t>(c.heads * c.head_dim);
  const auto kv_row = static_cast<std::size_t>(c.kv_heads * c.head_dim);
  const std::size_t tokens = shard.positions.size();
  std::vector<float> dq(tokens * q_row), grad(2 * tokens * kv_row);
  check_cuda(cudaMemcpyAsync(dq.data(), slots.dq, dq.size() * 4, cudaMemcpyDeviceToHost, stream), rank,
             [&] { return fmt::format("cudaMemcpy of device {}'s dQ to the host", device); });
  check_cuda(cudaMemcpyAsync(grad.data(), slots.grad[home_slot], grad.size() * 4, cudaMemcpyDeviceToHost, stream), rank,
             [&] { return fmt::format("cudaMemcpy of device {}'s dK and dV to the host", device); });
  wait_stream(stream, rank, fmt::format("download of device {}'s gradients", device), deadline);
  cpu_ring::place_gradient_rows(dq.data(), grad.data(), grad.data() + tokens * kv_row, shard.positions, c, gradients);
}

}  // namespace stripesim::validate::gpu
