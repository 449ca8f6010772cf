// The `nccl` backend: ring device d is GPU d, all driven by this one process. Each rank has a
// compute stream and a communication stream. In round r the kernel computes on the block in
// slot kv_slot(r) while, on the communication stream, ncclSend hands that same block to rank
// d + 1 and ncclRecv takes the next one from rank d - 1 into the other receive slot (double
// buffering). Round r + 1's kernel waits for that receive; round r + 1's transfer waits for
// round r's kernel (its receive overwrites the slot that kernel read). Communicators are
// nonblocking (config.blocking = 0), so no NCCL call can hang this thread: every wait polls
// with the run's deadline and, past it, aborts every communicator and names the rank and the
// transfer that did not complete. (Fault injection for that path: fault_injection.hpp.)
#include <fmt/format.h>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/validate/gpu_backends.hpp"

#ifdef STRIPESIM_WITH_NCCL
#include <nccl.h>

#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "device_resources.hpp"
#include "fault_injection.hpp"
#include "gpu_backend.hpp"
#include "gpu_devices.hpp"
#include "nccl_collectives.hpp"
#include "nccl_common.hpp"
#include "ring_memory.hpp"
#include "ring_schedules.hpp"
#endif

namespace stripesim::validate {

#ifndef STRIPESIM_WITH_NCCL

std::unique_ptr<RingBackend> make_nccl_backend() {
  throw model::InputError(
      "--backend nccl: NCCL was not found when stripesim was built (nccl.h and libnccl next to the CUDA toolkit); "
      "use --backend cuda, or install NCCL and reconfigure");
}

#else

namespace {

using gpu::check_cuda;
using gpu::Communicators;
using gpu::Deadline;
using gpu::GroupScope;
using gpu::nccl_detail;
using gpu::TimedOp;
using gpu::DeviceSlots;
using gpu::Event;

// One ring device: its GPU, streams, memory and the events of every round.
struct Rank {
  int device = 0;
  gpu::Stream compute, comm;
  std::optional<gpu::RingMemory> memory;
  DeviceSlots slots;
  gpu::DeviceSchedules schedules;
  std::vector<TimedOp> kernels;   // [round]
  std::vector<TimedOp> handoffs;  // [round], rounds 0 .. N-2
};

class NcclRing {
 public:
  NcclRing(const RingProblem& problem, double timeout_s)
      : problem_(problem), n_(problem.ring_case().devices), timeout_s_(timeout_s) {
    shape_ = gpu::gpu_kernel_shape(problem);
    fault_ = gpu::injected_fault();
    const int gpus = gpu::visible_gpus();
    if (gpus < n_) {
      throw model::InputError(fmt::format(
          "--backend nccl --devices {}: the nccl backend needs {} GPUs, this machine has {} (--backend cuda runs the "
          "ring on one GPU)",
          n_, n_, gpus));
    }
    if (fault_.skip_send_rank && *fault_.skip_send_rank >= n_) {
      throw model::InputError(fmt::format("STRIPESIM_INJECT_FAULT=skip-send:{}: the ring has ranks 0 to {}",
                                          *fault_.skip_send_rank, n_ - 1));
    }
    const gpu::BlockGeometry geometry = gpu::BlockGeometry::of(problem);
    ranks_.resize(static_cast<std::size_t>(n_));
    const Deadline deadline = Deadline::after(timeout_s_);
    for (Count d = 0; d < n_; ++d) {
      Rank& rank = ranks_[static_cast<std::size_t>(d)];
      rank.device = static_cast<int>(d);
      gpu::prepare_gpu(rank.device, shape_, d);
      rank.compute = gpu::Stream(d, "compute");
      rank.comm = gpu::Stream(d, "communication");
      rank.memory.emplace(geometry, 1, d, fault_.oom);
      rank.slots = rank.memory->device(0);
      gpu::upload_shard(problem, d, rank.slots, rank.compute.get(), d, deadline);
      rank.schedules = gpu::DeviceSchedules(problem, d, shape_, rank.compute.get(), d, deadline);
      for (Count r = 0; r < n_; ++r) {
        rank.kernels.push_back({Event(d), Event(d)});
        rank.handoffs.push_back({Event(d), Event(d)});
      }
    }
    name_ = gpu::gpu_name(0);
    gpu::init_communicators_in_process(comms_, n_, [this](Count d) { use(d); }, deadline);
  }

  NcclRing(const NcclRing&) = delete;
  NcclRing& operator=(const NcclRing&) = delete;

  ~NcclRing() {
    if (!hung_) return;
    // The devices may still hold aborted or stuck work: freeing would wait on them.
    for (Rank& rank : ranks_) {
      if (rank.memory) rank.memory->abandon();
      rank.schedules.abandon();
    }
  }

  [[nodiscard]] const std::string& device_name() const { return name_; }
  [[nodiscard]] std::int64_t handoff_bytes() const { return gpu::BlockGeometry::of(problem_).slot_bytes(); }

  // One pass of the ring, its timings appended to `record` when there is one.
  void iterate_and_record(RingMeasurement* record) {
    const double wall_us = iterate();
    if (record != nullptr) record_timings(*record, wall_us);
  }

  // One pass of the ring; returns its host wall time, first launch to every stream done.
  double iterate() {
    try {
      return iterate_once();
    } catch (...) {
      // Whatever failed, peers may be left waiting on this pass: abort every communicator and
      // leave the device memory alone (freeing it could wait on that work).
      hung_ = true;
      comms_.abort_all();
      throw;
    }
  }

 private:
  double iterate_once() {
    const Deadline deadline = Deadline::after(timeout_s_);
    const gpu::BlockGeometry g = gpu::BlockGeometry::of(problem_);
    const auto scale = static_cast<float>(problem_.scale());
    const auto bytes = static_cast<std::size_t>(g.slot_bytes());
    // Fresh state, poisoned output, idle devices: then the clock starts.
    for (Count d = 0; d < n_; ++d) {
      const Rank& rank = use(d);
      gpu::reset_softmax_state(rank.slots, rank.compute.get(), d);
      gpu::poison_output(rank.slots, rank.compute.get(), d);
    }
    for (Count d = 0; d < n_; ++d) {
      gpu::wait_stream(use(d).compute.get(), d, "softmax state init", deadline);
    }

    const auto start = gpu::Clock::now();
    for (Count r = 0; r < n_; ++r) {
      for (Count d = 0; d < n_; ++d) {
        Rank& rank = use(d);
        const cudaStream_t stream = rank.compute.get();
        if (r > 0) {
          check_cuda(cudaStreamWaitEvent(stream, rank.handoffs[static_cast<std::size_t>(r - 1)].end.get(), 0), d,
                     [&] { return fmt::format("cudaStreamWaitEvent for the receive of round {}", r - 1); });
        }
        TimedOp& op = rank.kernels[static_cast<std::size_t>(r)];
        op.launched = problem_.block_active(r, d);
        // Recorded even for a skipped block: the transfer of round r + 1 waits on op.end.
        record(op.start, stream, d);
        if (op.launched) {
          gpu::BlockAttentionArgs args = rank.slots.kernel_args(gpu::kv_slot(r), scale);
          rank.schedules.apply(r, args);
          check_cuda(gpu::launch_block_attention(shape_, args, stream), d,
                     [&] { return fmt::format("kernel launch in round {}", r); });
        }
        record(op.end, stream, d);
      }
      if (r + 1 < n_) transfer(r, bytes, deadline);
    }
    wait_ring(deadline);
    const double wall_us = std::chrono::duration<double, std::micro>(gpu::Clock::now() - start).count();
    ++passes_;

    for (Count d = 0; d < n_; ++d) {
      const Rank& rank = use(d);
      gpu::normalise_output(rank.slots, rank.compute.get(), d);
    }
    for (Count d = 0; d < n_; ++d) gpu::wait_stream(use(d).compute.get(), d, "output normalisation", deadline);
    return wall_us;
  }

 public:
  void record_timings(RingMeasurement& m, double wall_us) const {
    std::vector<double> kernel_us(static_cast<std::size_t>(n_ * n_), 0.0);
    std::vector<double> handoff_us(static_cast<std::size_t>(n_ * n_), 0.0);
    for (Count d = 0; d < n_; ++d) {
      const Rank& rank = ranks_[static_cast<std::size_t>(d)];
      for (Count r = 0; r < n_; ++r) {
        const auto cell = static_cast<std::size_t>(r * n_ + d);
        const TimedOp& k = rank.kernels[static_cast<std::size_t>(r)];
        if (k.launched) kernel_us[cell] = gpu::elapsed_us(k.start.get(), k.end.get(), d);
        if (r + 1 < n_) {
          const TimedOp& h = rank.handoffs[static_cast<std::size_t>(r)];
          handoff_us[cell] = gpu::elapsed_us(h.start.get(), h.end.get(), d);
        }
      }
    }
    m.kernel_us.push_back(std::move(kernel_us));
    m.handoff_us.push_back(std::move(handoff_us));
    m.wall_us.push_back(wall_us);
  }

  [[nodiscard]] std::vector<double> download_output() {
    return gpu::download_outputs(problem_, timeout_s_, [this](Count d) {
      const Rank& rank = use(d);
      return std::pair<const DeviceSlots*, cudaStream_t>{&rank.slots, rank.compute.get()};
    });
  }

 private:
  // Rank d's state with GPU d made current (every stream, event and launch call below is for
  // the current device).
  Rank& use(Count d) {
    Rank& rank = ranks_[static_cast<std::size_t>(d)];
    check_cuda(cudaSetDevice(rank.device), d, [&] { return fmt::format("cudaSetDevice({})", rank.device); });
    return rank;
  }

  static void record(const Event& event, cudaStream_t stream, Count d) {
    check_cuda(cudaEventRecord(event.get(), stream), d, "cudaEventRecord");
  }

  // Round r's hand-off on every rank's communication stream, as one NCCL group.
  void transfer(Count r, std::size_t bytes, const Deadline& deadline) {
    for (Count d = 0; d < n_; ++d) {
      Rank& rank = use(d);
      if (r > 0) {
        // The receive overwrites the slot round r - 1's kernel read.
        check_cuda(cudaStreamWaitEvent(rank.comm.get(), rank.kernels[static_cast<std::size_t>(r - 1)].end.get(), 0), d,
                   [&] { return fmt::format("cudaStreamWaitEvent for the kernel of round {}", r - 1); });
      }
      record(rank.handoffs[static_cast<std::size_t>(r)].start, rank.comm.get(), d);
    }
    {
      GroupScope group(0, fmt::format("round {}", r));
      for (Count d = 0; d < n_; ++d) {
        Rank& rank = use(d);
        const Count next = (d + 1) % n_;
        const Count previous = (d + n_ - 1) % n_;
        // STRIPESIM_INJECT_FAULT=skip-send:d, once a pass has connected the ranks (fault_injection.hpp).
        const bool skip = r == 0 && passes_ > 0 && fault_.skip_send_rank == d;
        if (!skip) {
          check_nccl(ncclSend(rank.slots.slot[gpu::kv_slot(r)], bytes, ncclUint8, static_cast<int>(next), comms_[d],
                              rank.comm.get()),
                     d, [&] { return fmt::format("ncclSend to rank {} in round {}", next, r); });
        }
        check_nccl(ncclRecv(rank.slots.slot[gpu::kv_slot(r + 1)], bytes, ncclUint8, static_cast<int>(previous),
                            comms_[d], rank.comm.get()),
                   d, [&] { return fmt::format("ncclRecv from rank {} in round {}", previous, r); });
      }
      const ncclResult_t end = group.end();
      if (end != ncclSuccess && end != ncclInProgress) {
        const auto failing = comms_.async_error();
        comms_.abort_all();
        throw DeviceFailure(failing ? failing->first : 0, fmt::format("ncclGroupEnd of the transfers of round {}", r),
                            failing ? failing->second : ncclGetErrorString(end));
      }
    }
    comms_.wait_ready(deadline, [r](Count) { return fmt::format("enqueueing the transfers of round {}", r); });
    for (Count d = 0; d < n_; ++d) {
      Rank& rank = use(d);
      record(rank.handoffs[static_cast<std::size_t>(r)].end, rank.comm.get(), d);
    }
  }

  template <typename Operation>
  void check_nccl(ncclResult_t status, Count rank, Operation&& operation) {
    if (status == ncclSuccess || status == ncclInProgress) return;
    const std::string detail = nccl_detail(status, comms_[rank]);
    comms_.abort_all();
    throw DeviceFailure(rank, gpu::describe(operation), detail);
  }

  // Polls every rank's last kernel and last transfer until done. A CUDA error, an NCCL
  // asynchronous error or the deadline aborts every communicator and names the rank and the
  // first operation (in ring order) that did not complete.
  void wait_ring(const Deadline& deadline) {
    for (;;) {
      bool all_done = true;
      for (Count d = 0; d < n_ && all_done; ++d) {
        const Rank& rank = ranks_[static_cast<std::size_t>(d)];
        all_done = done(d, rank.kernels.back().end.get()) &&
                   (n_ == 1 || done(d, rank.handoffs[static_cast<std::size_t>(n_ - 2)].end.get()));
      }
      if (all_done) return;
      if (const auto failing = comms_.async_error()) {
        const std::string operation = first_pending(failing->first).second;
        hung_ = true;
        comms_.abort_all();
        throw DeviceFailure(failing->first, operation, failing->second + "; every communicator was aborted");
      }
      if (deadline.passed()) {
        // The rank stuck earliest in the ring's order is the one that did not complete; ranks
        // behind it only wait for it.
        Count stuck = 0;
        std::pair<Count, std::string> earliest{std::numeric_limits<Count>::max(), ""};
        for (Count d = 0; d < n_; ++d) {
          auto pending = first_pending(d);
          if (pending.first < earliest.first) {
            earliest = std::move(pending);
            stuck = d;
          }
        }
        hung_ = true;
        comms_.abort_all();
        throw DeviceFailure(stuck, earliest.second, gpu::timeout_detail(deadline) + "; every communicator was aborted");
      }
      gpu::poll_pause();
    }
  }

  // event_done with the failure mapped to this backend: a faulted kernel or transfer aborts the
  // communicators first (peers would otherwise wait on it forever).
  bool done(Count d, cudaEvent_t event) {
    try {
      // CUDA reports a faulted kernel or copy asynchronously and stickily: the operation named
      // is the first this rank has not seen complete, the likely culprit, not a certain one.
      return gpu::event_done(event, d, [&] {
        return fmt::format("{} (asynchronous error; set CUDA_LAUNCH_BLOCKING=1 to locate it)", first_pending(d).second);
      });
    } catch (...) {
      hung_ = true;
      comms_.abort_all();
      throw;
    }
  }

  // Rank d's first operation that has not completed, as (order, name): kernels of round r are
  // 2r, transfers of round r are 2r + 1; the maximum order when all completed.
  [[nodiscard]] std::pair<Count, std::string> first_pending(Count d) const {
    const Rank& rank = ranks_[static_cast<std::size_t>(d)];
    for (Count r = 0; r < n_; ++r) {
      if (cudaEventQuery(rank.kernels[static_cast<std::size_t>(r)].end.get()) != cudaSuccess) {
        return {2 * r, fmt::format("kernel in round {}", r)};
      }
      if (r + 1 < n_ && !transfer_done(d, r)) return {2 * r + 1, transfer_name(d, r)};
    }
    return {std::numeric_limits<Count>::max(), "the ring"};
  }

  [[nodiscard]] bool transfer_done(Count d, Count r) const {
    return cudaEventQuery(ranks_[static_cast<std::size_t>(d)].handoffs[static_cast<std::size_t>(r)].end.get()) ==
           cudaSuccess;
  }

  // A transfer pairs a send to d + 1 with a receive from d - 1. When the predecessor finished
  // its own transfers of the round (it sent, or was told not to), d waits on the receive; when
  // the successor finished, on the send.
  [[nodiscard]] std::string transfer_name(Count d, Count r) const {
    const Count next = (d + 1) % n_;
    const Count previous = (d + n_ - 1) % n_;
    if (transfer_done(previous, r)) return fmt::format("ncclRecv from rank {} in round {}", previous, r);
    if (transfer_done(next, r)) return fmt::format("ncclSend to rank {} in round {}", next, r);
    return fmt::format("ncclSend to rank {} / ncclRecv from rank {} in round {}", next, previous, r);
  }

  const RingProblem& problem_;
  Count n_;
  double timeout_s_;
  gpu::KernelShape shape_;
  gpu::InjectedFault fault_;
  std::string name_;
  std::vector<Rank> ranks_;
  Communicators comms_;  // declared last: destroyed (finalized or aborted) before the streams and memory
  bool hung_ = false;
  Count passes_ = 0;  // ring passes completed (warm-ups included)
};

}  // namespace

std::unique_ptr<RingBackend> make_nccl_backend() {
  return std::make_unique<gpu::GpuBackend<NcclRing, gpu::NcclAllGather, gpu::NcclUlysses>>("nccl",
                                                                                          /*concurrent_devices=*/true);
}

#endif  // STRIPESIM_WITH_NCCL

}  // namespace stripesim::validate
