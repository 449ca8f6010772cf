#pragma once
// The all-gather and Ulysses of the `cuda` backend (`--cp allgather`, `--cp ulysses`): one GPU
// (device 0) plays the N devices one after another, as the backend's ring does
// (cuda_backend.cpp), every step on one stream and timed with CUDA events, the collectives done
// as the copies they amount to on one GPU:
//   all-gather: device e copies every device's K/V block into its gathered K/V (rank order, as
//     ncclAllGather leaves it), then attends its own queries to all of it in one call;
//   Ulysses: device e takes its heads of every device's tokens (Q, and K/V heads, replicated
//     when there are fewer K/V heads than devices) into the whole sequence in original order,
//     attends that in one call, and sends every device its tokens' rows back.
// Each device's collective copies are its round 0 hand-off, its call its round 0 kernel (the
// cells the cpu backend fills); the wall is the sum of all of it. Both have the interface
// GpuBackend<Ring> expects of a ring (gpu_backend.hpp).
#include <optional>
#include <string>
#include <vector>

#include "device_resources.hpp"
#include "ring_memory.hpp"
#include "ring_schedules.hpp"
#include "timed_steps.hpp"
#include "stripesim/validate/ring_backend.hpp"
#include "stripesim/validate/ulysses_split.hpp"

namespace stripesim::validate::gpu {

// What both collectives share: the GPU, the stream, every device's own shard (queries, its K/V
// block, its output) and the timed steps.
class CudaCollective {
 public:
  CudaCollective(const CudaCollective&) = delete;
  CudaCollective& operator=(const CudaCollective&) = delete;

  [[nodiscard]] const std::string& device_name() const { return name_; }
  // Each device's output, in ORIGINAL order (what run() returns).
  [[nodiscard]] std::vector<double> download_output();

 protected:
  CudaCollective(const RingProblem& problem, double timeout_s);
  ~CudaCollective();
  // The attention call of `device` on `args` after the schedule (the flash kernel's) is applied,
  // timed as its kernel cell; `what` names it in a failure.
  void time_call(Count device, BlockAttentionArgs args, const DeviceSchedules& schedule, const char* what);
  // Waits for the iteration and appends its timings to `record` when there is one.
  void finish_iteration(RingMeasurement* record);
  [[nodiscard]] bool hung() const { return steps_ && steps_->hung(); }

  const RingProblem& problem_;
  Count devices_;
  KernelShape shape_;
  double timeout_s_;
  std::string name_;
  Stream stream_;
  std::optional<TimedSteps> steps_;  // made once the GPU is known to be there
  std::optional<RingMemory> shards_memory_;
  std::vector<DeviceSlots> shards_;  // [device]: its queries, own K/V block (slot 0), output
};

class CudaAllGather final : public CudaCollective {
 public:
  CudaAllGather(const RingProblem& problem, double timeout_s);
  ~CudaAllGather();
  [[nodiscard]] std::int64_t handoff_bytes() const { return BlockGeometry::of(problem_).slot_bytes(); }
  void iterate_and_record(RingMeasurement* record);

 private:
  [[nodiscard]] GatheredKv gathered(Count device) const;

  BlockGeometry whole_;  // the gathered K/V: every token, the case's K/V heads
  DeviceMemory gathered_;  // [device]: K, V and positions of all n tokens, rank order
  std::vector<DeviceSchedules> schedules_;  // [device]: its queries against the gathered keys
};

class CudaUlysses final : public CudaCollective {
 public:
  CudaUlysses(const RingProblem& problem, double timeout_s);
  ~CudaUlysses();
  [[nodiscard]] std::int64_t handoff_bytes() const { return split_.pair_bytes; }
  void iterate_and_record(RingMeasurement* record);

 private:
  UlyssesSplit split_;
  std::optional<RingMemory> whole_memory_;  // [device]: its heads of the whole sequence
  std::vector<DeviceSlots> whole_;
  DeviceSchedules schedule_;  // the whole sequence against itself: every device's call alike
};

}  // namespace stripesim::validate::gpu
