#pragma once
// The flash kernel's tile schedules of one ring device, on its GPU: for every round, the key
// tiles each of its query tiles computes against the block it holds then (TileSchedule), and for
// a backward case the same tiles key tile by key tile (by_key_tile) for the backward kernel.
// Built and uploaded once, before anything is timed: positions never change between iterations.
// The all-gather and Ulysses have one call per device, against keys of their own: the same
// schedules, for any list of calls.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "device_resources.hpp"
#include "stripesim/validate/block_attention.hpp"
#include "stripesim/validate/block_attention_backward.hpp"
#include "stripesim/validate/ring_problem.hpp"

namespace stripesim::validate::gpu {

class DeviceSchedules {
 public:
  DeviceSchedules() = default;
  // On the CURRENT device; no forward schedule for a kernel that classifies tiles itself (wmma),
  // key-major ones only for a backward case.
  DeviceSchedules(const RingProblem& problem, Count device, const KernelShape& shape, cudaStream_t stream, Count rank,
                  const Deadline& deadline);
  // One schedule per call: the queries of `queries` against `call_keys[i]` (original positions of
  // the keys the i-th call reads, in the order they lie in memory); `who` names the device in a
  // failure ("device 3").
  DeviceSchedules(const DeviceShard& queries, const std::vector<std::span<const Position>>& call_keys, bool backward,
                  const KernelShape& shape, cudaStream_t stream, Count rank, const std::string& who,
                  const Deadline& deadline);
  // Points `args` at the schedule of `round` (no-op without schedules).
  void apply(Count round, BlockAttentionArgs& args) const;
  // Points the backward kernel's `args` at the key-major schedule of `round` (a backward case).
  void apply(Count round, BlockBackwardArgs& args) const;
  void abandon() noexcept { memory_.abandon(); }

 private:
  struct Round {
    const std::int32_t* order = nullptr;
    const std::int32_t* offsets = nullptr;
    const std::int32_t* entries = nullptr;
  };
  DeviceMemory memory_;
  std::vector<Round> rounds_;           // [round]: forward, query tile by query tile (flash)
  std::vector<Round> backward_rounds_;  // [round]: key tile by key tile (a backward case)
};

}  // namespace stripesim::validate::gpu
