#pragma once
// The all-gather and Ulysses of the `nccl` backend (`--cp allgather`, `--cp ulysses`): GPU d plays
// device d, all driven by this one process, each with one stream, NCCL moving the data:
//   all-gather: one ncclAllGather each of K, V and the key positions into every device's
//     gathered K/V (rank order), then one call of its own queries against all of it;
//   Ulysses: each device packs its tokens' heads of every other device (Q, and K/V heads,
//     replicated when there are fewer K/V heads than devices) into one send buffer, an
//     all-to-all of grouped ncclSend/ncclRecv, each unpacks what it received into the whole
//     sequence in original order; one call; the output rows back the same way.
// Each device's collective (pack, transfer, unpack) is its round 0 hand-off, its call its round 0
// kernel, the cells the cpu and cuda backends fill; the wall is the host's clock from the first
// enqueue to the last device done, as the nccl ring's. Communicators are nonblocking: a hang is
// polled to the deadline, every communicator aborted, and the first step not done named with its
// rank. Both have the interface GpuBackend<Ring> expects of a ring (gpu_backend.hpp).
#include <optional>
#include <string>
#include <vector>

#include "device_resources.hpp"
#include "nccl_common.hpp"
#include "ring_memory.hpp"
#include "ring_schedules.hpp"
#include "stripesim/validate/ring_backend.hpp"
#include "stripesim/validate/ulysses_split.hpp"
#include "timed_steps.hpp"

namespace stripesim::validate::gpu {

// One device of a collective: its GPU, stream, steps and memory.
struct CollectiveRank {
  int device = 0;
  Stream stream;
  std::optional<TimedSteps> steps;
  std::optional<RingMemory> shard_memory;
  DeviceSlots shard;  // its queries, own K/V block (slot 0), output
  std::optional<RingMemory> whole_memory;
  DeviceSlots whole;  // Ulysses: its heads of the whole sequence
  DeviceMemory gathered;  // all-gather: K, V and positions of every token, rank order
  DeviceMemory exchange;  // Ulysses: the send and receive buffers of both all-to-alls
  DeviceMemory rank_positions;  // Ulysses: every device's key positions, rank order
  DeviceSchedules schedule;  // its one call
};

class NcclCollective {
 public:
  NcclCollective(const NcclCollective&) = delete;
  NcclCollective& operator=(const NcclCollective&) = delete;

  [[nodiscard]] const std::string& device_name() const { return name_; }
  [[nodiscard]] std::vector<double> download_output();
  void iterate_and_record(RingMeasurement* record);

 protected:
  NcclCollective(const RingProblem& problem, double timeout_s);
  virtual ~NcclCollective();
  // Device d's state with its GPU current.
  CollectiveRank& use(Count d);
  // One iteration's collective and calls, enqueued (what differs between the two).
  virtual void enqueue_iteration() = 0;
  // `calls` inside one NCCL group (every device's part of a collective), `what` naming it.
  template <typename Calls>
  void group(const std::string& what, Calls&& calls);
  void check_nccl(ncclResult_t status, Count rank, const std::string& operation);
  // The attention call of device d on `args`, its schedule applied, timed as its kernel cell.
  void time_call(Count d, BlockAttentionArgs args, const char* what);

  const RingProblem& problem_;
  Count n_;
  double timeout_s_;
  KernelShape shape_;
  std::string name_;
  std::vector<CollectiveRank> ranks_;
  Communicators comms_;  // declared last: finalized or aborted before the streams and memory go
  bool hung_ = false;

 private:
  void wait_all(const Deadline& deadline);
};

class NcclAllGather final : public NcclCollective {
 public:
  NcclAllGather(const RingProblem& problem, double timeout_s);
  [[nodiscard]] std::int64_t handoff_bytes() const { return BlockGeometry::of(problem_).slot_bytes(); }

 private:
  void enqueue_iteration() override;
  BlockGeometry whole_;  // the gathered K/V: every token, the case's K/V heads
};

class NcclUlysses final : public NcclCollective {
 public:
  NcclUlysses(const RingProblem& problem, double timeout_s);
  [[nodiscard]] std::int64_t handoff_bytes() const { return split_.pair_bytes; }

 private:
  void enqueue_iteration() override;
  // Bytes one device sends each other one: its tokens' Q, K and V heads of the receiver, and
  // back, the receiver's output heads of those tokens (fp32).
  [[nodiscard]] std::int64_t pair_bytes() const;
  [[nodiscard]] std::int64_t out_pair_bytes() const;
  UlyssesSplit split_;
};

}  // namespace stripesim::validate::gpu
