#pragma once
// Device memory of the backward ring (--pass fwdbwd on the cuda backend), beside RingMemory's:
// per ring device its upstream gradient dO (the case's precision, local order), each row's lse2
// and delta, the fp32 dQ accumulator, and two fp32 dK/dV accumulators [dK | dV]: the one the
// device adds to at a round and the one arriving from d - 1, so a hand-off is one copy.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "device_resources.hpp"
#include "ring_memory.hpp"
#include "stripesim/validate/block_attention_backward.hpp"
#include "stripesim/validate/ring_problem.hpp"

namespace stripesim::validate::gpu {

// The accumulator a device adds to at `round` (the other one receives the next).
[[nodiscard]] constexpr int grad_slot(Count round) { return static_cast<int>(round % 2); }

struct BackwardSlots {
  void* dout = nullptr;
  float* lse2 = nullptr;
  float* delta = nullptr;
  float* dq = nullptr;
  float* grad[2] = {nullptr, nullptr};
  BlockGeometry geometry;

  [[nodiscard]] std::int64_t grad_floats() const { return geometry.tokens * geometry.kv_heads * geometry.head_dim; }
  // dK and dV in fp32: the accumulator a hand-off moves, and what each of the two is allocated.
  [[nodiscard]] static std::int64_t grad_bytes(const BlockGeometry& g) {
    return accumulator_bytes<float>(g.tokens, g.kv_heads * g.head_dim);
  }
  [[nodiscard]] std::int64_t grad_bytes() const { return grad_bytes(geometry); }
  [[nodiscard]] float* dk(int s) const { return grad[s]; }
  [[nodiscard]] float* dv(int s) const { return grad[s] + grad_floats(); }
  // The backward kernel's arguments on the forward's K/V slot `kv` and accumulator `g`.
  [[nodiscard]] BlockBackwardArgs kernel_args(const DeviceSlots& forward, int kv, int g, float scale) const;
};

class BackwardMemory {
 public:
  // Allocates on the CURRENT device, one allocation for every device's buffers.
  BackwardMemory(const BlockGeometry& geometry, Count devices, Count rank);
  [[nodiscard]] BackwardSlots device(Count index) const;
  void abandon() noexcept { memory_.abandon(); }

 private:
  BlockGeometry geometry_;
  Count devices_;
  DeviceMemory memory_;
};

// Uploads ring device `device`'s rows of dO (converted to the case's precision, local order) and
// waits for the copy.
void upload_output_gradient(const RingProblem& problem, Count device, const BackwardSlots& slots, cudaStream_t stream,
                            Count rank, const Deadline& deadline);

// Downloads device `device`'s dQ and the dK/dV accumulator of its own block (home in `home_slot`
// after the ring) and writes them into `gradients`, laid out as reference_gradients's, in
// ORIGINAL order.
void download_gradients(const RingProblem& problem, Count device, const BackwardSlots& slots, int home_slot,
                        cudaStream_t stream, Count rank, const Deadline& deadline, std::vector<double>& gradients);

}  // namespace stripesim::validate::gpu
