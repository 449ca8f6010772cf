// The `nccl` backend under an MPI launcher (mpirun -np N, srun): this process is ring device
// `rank` on the GPU of its place in its node, in one NCCL communicator over all ranks
// (nccl_over_mpi.hpp). Each round is the one-process backend's (nccl_backend.cpp) for one rank:
// the kernel on the compute stream computes on the block in kv_slot(r) while, on the
// communication stream, ncclSend hands that block to rank + 1 and ncclRecv takes the next from
// rank - 1; round r + 1's kernel waits for the receive, round r + 1's transfer for round r's
// kernel. Rank 0 starts every iteration and gathers every rank's times, and at the end the
// outputs, over MPI (mpi_exchange.hpp). A failure on any rank ends the job on every rank with
// its one line (exit 3; mpi_waits.hpp). Written and compiled without a GPU: not yet run.
#include <fmt/format.h>

#include <chrono>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "device_resources.hpp"
#include "gpu_devices.hpp"
#include "measure_ring.hpp"
#include "mpi_exchange.hpp"
#include "mpi_hosts.hpp"
#include "mpi_session.hpp"
#include "mpi_waits.hpp"
#include "nccl_common.hpp"
#include "nccl_over_mpi.hpp"
#include "ring_memory.hpp"
#include "ring_schedules.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/validate/gpu_backends.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate::gpu {
namespace {

// Tags of the gathers to rank 0 (mpi_exchange.hpp keeps its own apart).
constexpr int kTagTimes = 120;
constexpr int kTagOutput = 121;

// One rank's ring: its GPU's streams, memory, schedules and the events of every round.
class NcclRankRing {
 public:
  NcclRankRing(const RingProblem& problem, double timeout_s, Communicators& comms, int rank, const LocalGpu& gpu)
      : problem_(problem), n_(problem.ring_case().devices), rank_(rank), gpu_(gpu), timeout_s_(timeout_s), comms_(comms) {
    shape_ = gpu_kernel_shape(problem);
    prepare_gpu(gpu_.device, shape_, rank_);
    compute_ = Stream(rank_, "compute");
    comm_ = Stream(rank_, "communication");
    bool no_injected_oom = false;
    memory_.emplace(BlockGeometry::of(problem), 1, rank_, no_injected_oom);
    slots_ = memory_->device(0);
    const Deadline deadline = Deadline::after(timeout_s_);
    upload_shard(problem, rank_, slots_, compute_.get(), rank_, deadline);
    schedules_ = DeviceSchedules(problem, rank_, shape_, compute_.get(), rank_, deadline);
    for (Count r = 0; r < n_; ++r) {
      kernels_.push_back({Event(rank_), Event(rank_)});
      handoffs_.push_back({Event(rank_), Event(rank_)});
    }
  }
  NcclRankRing(const NcclRankRing&) = delete;
  NcclRankRing& operator=(const NcclRankRing&) = delete;
  ~NcclRankRing() {
    if (!hung_) return;
    // The device may still hold aborted or stuck work: freeing would wait on it.
    if (memory_) memory_->abandon();
    schedules_.abandon();
  }

  [[nodiscard]] std::string device_name() const { return gpu_name(gpu_.device); }
  [[nodiscard]] std::int64_t handoff_bytes() const { return BlockGeometry::of(problem_).slot_bytes(); }

  // One pass of this rank's ring. Returns what rank 0 gathers: [round] kernel time (0 where the
  // block is skipped), [N + round] its hand-off of round `round`, [2N] its wall time. Any failure
  // ends the job on every rank.
  [[nodiscard]] std::vector<double> iterate() {
    const auto posted = Clock::now();
    try {
      return iterate_once();
    } catch (const DeviceFailure& failure) {
      hung_ = true;
      comms_.abort_all();
      mpi::end_job(failure, posted);
    }
  }

  // Rank 0: every rank's output rows in original order; the other ranks send theirs and get nothing.
  [[nodiscard]] std::vector<double> download_output() {
    const Deadline deadline = Deadline::after(timeout_s_);
    const std::vector<float> local = download_local_output(problem_, rank_, slots_, compute_.get(), rank_, deadline);
    const auto all = mpi::gather_to_rank0(std::as_bytes(std::span(local)), rank_, static_cast<int>(n_), kTagOutput, timeout_s_, "output");
    if (all.empty()) return {};
    const RingCase& c = problem_.ring_case();
    std::vector<double> output(static_cast<std::size_t>(c.seq_len * c.heads * c.head_dim),
                               std::numeric_limits<double>::quiet_NaN());
    for (Count d = 0; d < n_; ++d) scatter_output(problem_, d, mpi::from_bytes<float>(all[static_cast<std::size_t>(d)]), output);
    return output;
  }

 private:
  std::vector<double> iterate_once() {
    const Deadline deadline = Deadline::after(timeout_s_);
    const BlockGeometry g = BlockGeometry::of(problem_);
    const auto scale = static_cast<float>(problem_.scale());
    const auto bytes = static_cast<std::size_t>(g.slot_bytes());
    reset_softmax_state(slots_, compute_.get(), rank_);
    poison_output(slots_, compute_.get(), rank_);
    wait_stream(compute_.get(), rank_, "softmax state init", deadline);

    const auto start = Clock::now();
    for (Count r = 0; r < n_; ++r) {
      const cudaStream_t stream = compute_.get();
      if (r > 0) {
        check_cuda(cudaStreamWaitEvent(stream, handoffs_[static_cast<std::size_t>(r - 1)].end.get(), 0), rank_,
                   [&] { return fmt::format("cudaStreamWaitEvent for the receive of round {}", r - 1); });
      }
      TimedOp& op = kernels_[static_cast<std::size_t>(r)];
      op.launched = problem_.block_active(r, rank_);
      record(op.start, stream);  // recorded even for a skipped block: the transfer of r + 1 waits on op.end
      if (op.launched) {
        BlockAttentionArgs args = slots_.kernel_args(kv_slot(r), scale);
        schedules_.apply(r, args);
        check_cuda(launch_block_attention(shape_, args, stream), rank_, [&] { return fmt::format("kernel launch in round {}", r); });
      }
      record(op.end, stream);
      if (r + 1 < n_) transfer(r, bytes, deadline);
    }
    wait_ring(deadline);
    std::vector<double> times(static_cast<std::size_t>(2 * n_ + 1), 0.0);
    times[static_cast<std::size_t>(2 * n_)] = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    for (Count r = 0; r < n_; ++r) {
      const TimedOp& k = kernels_[static_cast<std::size_t>(r)];
      if (k.launched) times[static_cast<std::size_t>(r)] = elapsed_us(k.start.get(), k.end.get(), rank_);
      if (r + 1 < n_) {
        const TimedOp& h = handoffs_[static_cast<std::size_t>(r)];
        times[static_cast<std::size_t>(n_ + r)] = elapsed_us(h.start.get(), h.end.get(), rank_);
      }
    }
    normalise_output(slots_, compute_.get(), rank_);
    wait_stream(compute_.get(), rank_, "output normalisation", deadline);
    return times;
  }

  void record(const Event& event, cudaStream_t stream) const {
    check_cuda(cudaEventRecord(event.get(), stream), rank_, "cudaEventRecord");
  }

  [[nodiscard]] Count next() const { return (rank_ + 1) % n_; }
  [[nodiscard]] Count previous() const { return (rank_ + n_ - 1) % n_; }

  // Round r's hand-off on the communication stream: one NCCL group of the send and the receive.
  void transfer(Count r, std::size_t bytes, const Deadline& deadline) {
    if (r > 0) {  // the receive overwrites the slot round r - 1's kernel read
      check_cuda(cudaStreamWaitEvent(comm_.get(), kernels_[static_cast<std::size_t>(r - 1)].end.get(), 0), rank_,
                 [&] { return fmt::format("cudaStreamWaitEvent for the kernel of round {}", r - 1); });
    }
    record(handoffs_[static_cast<std::size_t>(r)].start, comm_.get());
    {
      GroupScope group(rank_, fmt::format("round {}", r));
      ncclComm_t comm = comms_.comms()[0];
      check_nccl(ncclSend(slots_.slot[kv_slot(r)], bytes, ncclUint8, static_cast<int>(next()), comm, comm_.get()),
                 [&] { return fmt::format("ncclSend to rank {} in round {}", next(), r); });
      check_nccl(ncclRecv(slots_.slot[kv_slot(r + 1)], bytes, ncclUint8, static_cast<int>(previous()), comm, comm_.get()),
                 [&] { return fmt::format("ncclRecv from rank {} in round {}", previous(), r); });
      const ncclResult_t end = group.end();
      if (end != ncclSuccess && end != ncclInProgress) {
        throw DeviceFailure(rank_, fmt::format("ncclGroupEnd of the transfers of round {}", r), nccl_detail(end, comm));
      }
    }
    comms_.wait_ready(deadline, [r](Count) { return fmt::format("enqueueing the transfers of round {}", r); });
    record(handoffs_[static_cast<std::size_t>(r)].end, comm_.get());
  }

  template <typename Operation>
  void check_nccl(ncclResult_t status, Operation&& operation) {
    if (status == ncclSuccess || status == ncclInProgress) return;
    throw DeviceFailure(rank_, describe(operation), nccl_detail(status, comms_.comms()[0]));
  }

  // Polls this rank's last kernel and last transfer until done; a CUDA or NCCL error, another
  // rank's failure notice, or the deadline ends it.
  void wait_ring(const Deadline& deadline) {
    for (;;) {
      const bool kernels_done = event_done(kernels_.back().end.get(), rank_, [&] { return first_pending(); });
      const bool transfers_done =
          n_ == 1 || event_done(handoffs_[static_cast<std::size_t>(n_ - 2)].end.get(), rank_, [&] { return first_pending(); });
      if (kernels_done && transfers_done) return;
      if (const auto failing = comms_.async_error()) throw DeviceFailure(rank_, first_pending(), failing->second);
      mpi::take_failure_notice();
      if (deadline.passed()) {
        throw DeviceFailure(rank_, first_pending(), fmt::format("{} (noticed by rank {})", timeout_detail(deadline), rank_));
      }
      poll_pause();
    }
  }

  // This rank's first operation that has not completed.
  [[nodiscard]] std::string first_pending() const {
    for (Count r = 0; r < n_; ++r) {
      if (cudaEventQuery(kernels_[static_cast<std::size_t>(r)].end.get()) != cudaSuccess) return fmt::format("kernel in round {}", r);
      if (r + 1 < n_ && cudaEventQuery(handoffs_[static_cast<std::size_t>(r)].end.get()) != cudaSuccess) {
        return fmt::format("ncclSend to rank {} / ncclRecv from rank {} in round {}", next(), previous(), r);
      }
    }
    return "the ring";
  }

  const RingProblem& problem_;
  Count n_;
  Count rank_;
  LocalGpu gpu_;
  double timeout_s_;
  Communicators& comms_;
  KernelShape shape_;
  Stream compute_, comm_;
  std::optional<RingMemory> memory_;
  DeviceSlots slots_;
  DeviceSchedules schedules_;
  std::vector<TimedOp> kernels_;   // [round]
  std::vector<TimedOp> handoffs_;  // [round], rounds 0 .. N-2
  bool hung_ = false;
};

class NcclRankBackend final : public RingBackend {
 public:
  NcclRankBackend() : gpu_(take_local_gpu(session_.rank())), comms_(session_.rank()) {}

  [[nodiscard]] std::string name() const override { return "nccl"; }

  [[nodiscard]] bool concurrent_devices() const override { return true; }
  [[nodiscard]] std::string device_name() const override { return gpu_name(gpu_.device); }
  [[nodiscard]] bool supports(Precision precision) const override {
    return precision == Precision::bf16 || precision == Precision::fp16;
  }
  [[nodiscard]] std::optional<Count> launched_devices() const override { return session_.ranks(); }
  [[nodiscard]] bool reports() const override { return session_.rank() == 0; }
  [[nodiscard]] std::vector<std::string> device_hosts(const RunOptions& options) override {
    return mpi::gather_hosts(session_.rank(), session_.ranks(), options.timeout_s);
  }

  [[nodiscard]] RingMeasurement run(const RingProblem& problem, const RunOptions& options) override {
    check_run_options(options);
    const int rank = session_.rank();
    const int ranks = session_.ranks();
    if (problem.ring_case().devices != ranks) {  // the CLI checks this first; a library caller gets the same line
      throw model::InputError(fmt::format("--devices {}: --backend nccl under mpirun runs one rank per device and this job "
                                          "has {} ranks",
                                          problem.ring_case().devices, ranks));
    }
    check_backend_runs(name(), problem.ring_case().cp);  // under mpirun: the ring only
    // A failure here (a communicator that does not form, memory that does not fit) ends the job
    // on every rank, as a failure in the ring does: the others would only wait for this one.
    std::optional<NcclRankRing> built;
    const auto posted = Clock::now();
    try {
      if (comms_.comms().empty()) join_communicator(comms_, rank, ranks, options.timeout_s);
      built.emplace(problem, options.timeout_s, comms_, rank, gpu_);
    } catch (const DeviceFailure& failure) {
      comms_.abort_all();
      mpi::end_job(failure, posted);
    }
    NcclRankRing& ring = *built;
    Count iteration = 0;
    return measure_ring(name(), ring, options, [&](RingMeasurement* record) {
      mpi::start_iteration(rank, ranks, iteration, options.timeout_s);
      const std::vector<double> times = ring.iterate();
      const auto all = mpi::gather_to_rank0(std::as_bytes(std::span(times)), rank, ranks, kTagTimes, options.timeout_s,
                                            fmt::format("iteration {}'s times", iteration));
      ++iteration;
      if (record == nullptr || all.empty()) return;
      const auto n = static_cast<std::size_t>(ranks);
      std::vector<double> kernel_us(n * n, 0.0), handoff_us(n * n, 0.0);
      double wall_us = 0;
      for (std::size_t d = 0; d < n; ++d) {
        const std::vector<double> theirs = mpi::from_bytes<double>(all[d]);
        for (std::size_t r = 0; r < n; ++r) {
          kernel_us[r * n + d] = theirs[r];
          if (r + 1 < n) handoff_us[r * n + d] = theirs[n + r];
        }
        wall_us = std::max(wall_us, theirs[2 * n]);
      }
      record->kernel_us.push_back(std::move(kernel_us));
      record->handoff_us.push_back(std::move(handoff_us));
      record->wall_us.push_back(wall_us);
    });
  }

  // Rank 0 alone checks: fp32 cuBLAS on its own GPU (gpu_reference.cpp).
  [[nodiscard]] std::vector<double> dense_reference(const RingProblem& problem, const RunOptions& options) const override {
    return gpu_reference_attention(problem, options.timeout_s);
  }

 private:
  mpi::Session session_;  // first: MPI outlives the communicator
  LocalGpu gpu_;
  Communicators comms_;
};

}  // namespace
}  // namespace stripesim::validate::gpu

namespace stripesim::validate {

std::unique_ptr<RingBackend> make_nccl_rank_backend() { return std::make_unique<gpu::NcclRankBackend>(); }

}  // namespace stripesim::validate
