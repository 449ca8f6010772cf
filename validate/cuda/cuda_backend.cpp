// The `cuda` backend: one GPU (device 0) hosts all N ring devices. Each round launches the
// kernel of every device that has work, one after another on one stream, then hands every
// device's K/V block to its successor's receive slot with one device-to-device copy. Everything
// is timed with CUDA events; the wall time is the events around the whole ring, so it is the
// sum of the devices' work (one processor), as RingMeasurement documents. A backward case
// (--pass fwdbwd) runs the backward ring after the forward the same way: each round every
// device's backward kernel, then every hand-off (the K/V block as forward, and the dK/dV
// accumulator, every round: the N-th hop brings it home); the wall covers both passes.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "backward_memory.hpp"
#include "cuda_collectives.hpp"
#include "device_resources.hpp"
#include "fault_injection.hpp"
#include "gpu_backend.hpp"
#include "gpu_devices.hpp"
#include "ring_memory.hpp"
#include "ring_schedules.hpp"
#include "stripesim/validate/gpu_backends.hpp"

namespace stripesim::validate {
namespace {

using gpu::check_cuda;
using gpu::Deadline;
using gpu::DeviceSlots;
using gpu::Event;

constexpr int kDevice = 0;  // the GPU every ring device runs on
constexpr Count kGpuRank = 0;  // rank named by failures of the GPU as a whole (allocation, setup)

// One timed operation of the ring: its events and who/what it is, for timings and for naming
// what did not complete.
struct TimedOp {
  Event start, end;
  bool enqueued = false;
};

class CudaRing {
 public:
  CudaRing(const RingProblem& problem, double timeout_s)
      : problem_(problem),
        devices_(problem.ring_case().devices),
        shape_(gpu::gpu_kernel_shape(problem)),
        backward_(problem.ring_case().backward),
        timeout_s_(timeout_s) {
    gpu::InjectedFault fault = gpu::injected_fault();
    static_cast<void>(gpu::visible_gpus());  // no GPU: a DeviceFailure now, before anything else
    gpu::prepare_gpu(kDevice, shape_, kGpuRank);
    name_ = gpu::gpu_name(kDevice);
    stream_ = gpu::Stream(kGpuRank, "ring");
    memory_.emplace(gpu::BlockGeometry::of(problem), devices_, kGpuRank, fault.oom);
    const Deadline deadline = Deadline::after(timeout_s_);
    if (backward_) {
      check_cuda(gpu::prepare_block_attention_backward(shape_), kGpuRank,
                 "cudaFuncSetAttribute (shared memory limit) of the backward kernel");
      backward_memory_.emplace(gpu::BlockGeometry::of(problem), devices_, kGpuRank);
    }
    for (Count d = 0; d < devices_; ++d) {
      slots_.push_back(memory_->device(d));
      gpu::upload_shard(problem, d, slots_.back(), stream_.get(), d, deadline);
      schedules_.emplace_back(problem, d, shape_, stream_.get(), d, deadline);
      if (backward_) {
        backward_slots_.push_back(backward_memory_->device(d));
        gpu::upload_output_gradient(problem, d, backward_slots_.back(), stream_.get(), d, deadline);
      }
    }
    const auto cells = static_cast<std::size_t>(devices_ * devices_);
    for (std::vector<TimedOp>* ops : {&kernels_, &handoffs_, &backward_kernels_, &backward_handoffs_}) {
      if (!backward_ && (ops == &backward_kernels_ || ops == &backward_handoffs_)) continue;
      ops->resize(cells);
      for (TimedOp& op : *ops) op = {Event(kGpuRank), Event(kGpuRank)};
    }
    wall_start_ = Event(kGpuRank);
    wall_end_ = Event(kGpuRank);
    done_ = Event(kGpuRank);
  }

  CudaRing(const CudaRing&) = delete;
  CudaRing& operator=(const CudaRing&) = delete;

  ~CudaRing() {
    // After a timeout the device may still be busy with the hung work: freeing would wait.
    if (!hung_) return;
    if (memory_) memory_->abandon();
    if (backward_memory_) backward_memory_->abandon();
    for (auto& s : schedules_) s.abandon();
  }

  [[nodiscard]] const std::string& device_name() const { return name_; }
  [[nodiscard]] cudaStream_t stream() const { return stream_.get(); }
  [[nodiscard]] Deadline deadline() const { return Deadline::after(timeout_s_); }
  [[nodiscard]] std::int64_t handoff_bytes() const { return gpu::BlockGeometry::of(problem_).slot_bytes(); }
  // A dK/dV accumulator: fp32, twice a bf16/fp16 block's K and V.
  [[nodiscard]] std::int64_t gradient_handoff_bytes() const { return backward_ ? backward_slots_.front().grad_bytes() : 0; }

  // One pass of the ring, its timings appended to `record` when there is one.
  void iterate_and_record(RingMeasurement* record) {
    iterate();
    if (record != nullptr) record_timings(*record);
  }

  // One pass of the ring. `tile_counts`: optional device array [N * N * 2] the kernels count into.
  void iterate(unsigned long long* tile_counts = nullptr) {
    const Count n = devices_;
    const cudaStream_t stream = stream_.get();
    const auto scale = static_cast<float>(problem_.scale());
    const gpu::BlockGeometry geometry = gpu::BlockGeometry::of(problem_);
    // Fresh softmax state and a poisoned output on every device: outside the timed ring.
    for (Count d = 0; d < n; ++d) {
      const DeviceSlots& s = slots_[static_cast<std::size_t>(d)];
      gpu::reset_softmax_state(s, stream, d);
      gpu::poison_output(s, stream, d);
      if (backward_) {
        // dQ and the accumulator of the device's own block start at 0 (the other one only ever
        // receives whole copies).
        const gpu::BackwardSlots& b = backward_slots_[static_cast<std::size_t>(d)];
        check_cuda(cudaMemsetAsync(b.dq, 0, static_cast<std::size_t>(geometry.rows() * geometry.head_dim * 4), stream), d,
                   "cudaMemsetAsync of the dQ accumulator");
        check_cuda(cudaMemsetAsync(b.grad[gpu::grad_slot(0)], 0, static_cast<std::size_t>(b.grad_bytes()), stream), d,
                   "cudaMemsetAsync of the dK/dV accumulator");
      }
    }
    record(wall_start_, "the ring's start event");
    for (Count r = 0; r < n; ++r) {
      for (Count d = 0; d < n; ++d) {
        TimedOp& op = kernels_[cell(r, d)];
        op.enqueued = problem_.block_active(r, d);
        if (!op.enqueued) continue;  // no allowed pair: nothing launched, 0 us recorded
        gpu::BlockAttentionArgs args = slots_[static_cast<std::size_t>(d)].kernel_args(gpu::kv_slot(r), scale);
        schedules_[static_cast<std::size_t>(d)].apply(r, args);
        if (tile_counts != nullptr) args.tile_counts = tile_counts + 2 * cell(r, d);
        record(op.start, "a kernel's start event");
        check_cuda(gpu::launch_block_attention(shape_, args, stream), d,
                   [&] { return fmt::format("kernel launch in round {}", r); });
        record(op.end, "a kernel's end event");
      }
      for (Count d = 0; d < n; ++d) {
        TimedOp& op = handoffs_[cell(r, d)];
        op.enqueued = r + 1 < n;  // the last round hands nothing on
        if (!op.enqueued) continue;
        record(op.start, "a hand-off's start event");
        copy_kv_block(d, r, "round");
        record(op.end, "a hand-off's end event");
      }
    }
    if (!backward_) record(wall_end_, "the ring's end event");
    for (Count d = 0; d < n; ++d) gpu::normalise_output(slots_[static_cast<std::size_t>(d)], stream, d);
    if (backward_) {
      backward_ring(scale, geometry);
      record(wall_end_, "the ring's end event");
    }
    record(done_, "the iteration's end event");
    wait_until_done(Deadline::after(timeout_s_));
  }

  // The timings of the last iteration into `m`.
  void record_timings(RingMeasurement& m) const {
    m.kernel_us.push_back(times_of(kernels_));
    m.handoff_us.push_back(times_of(handoffs_));
    m.wall_us.push_back(gpu::elapsed_us(wall_start_.get(), wall_end_.get(), kGpuRank));
    if (backward_) {
      m.backward_kernel_us.push_back(times_of(backward_kernels_));
      m.backward_handoff_us.push_back(times_of(backward_handoffs_));
    }
  }

  // dQ, dK and dV in ORIGINAL order (reference_gradients's layout), after a backward iteration.
  [[nodiscard]] std::vector<double> download_gradients() {
    const RingCase& c = problem_.ring_case();
    std::vector<double> gradients(static_cast<std::size_t>(gradient_count(c)), std::numeric_limits<double>::quiet_NaN());
    const Deadline deadline = Deadline::after(timeout_s_);
    for (Count d = 0; d < devices_; ++d) {
      // After N hand-offs every accumulator is home, in the slot round N would add to.
      gpu::download_gradients(problem_, d, backward_slots_[static_cast<std::size_t>(d)], gpu::grad_slot(devices_),
                              stream_.get(), d, deadline, gradients);
    }
    return gradients;
  }

  [[nodiscard]] std::vector<double> download_output() {
    return gpu::download_outputs(problem_, timeout_s_, [this](Count d) {
      return std::pair<const DeviceSlots*, cudaStream_t>{&slots_[static_cast<std::size_t>(d)], stream_.get()};
    });
  }

 private:
  // The backward ring (the forward's output normalised, its state in place): lse2 and delta of
  // every row, then N rounds of backward kernels and hand-offs, all on the one stream.
  void backward_ring(float scale, const gpu::BlockGeometry& geometry) {
    const Count n = devices_;
    const cudaStream_t stream = stream_.get();
    for (Count d = 0; d < n; ++d) {
      const DeviceSlots& s = slots_[static_cast<std::size_t>(d)];
      const gpu::BackwardSlots& b = backward_slots_[static_cast<std::size_t>(d)];
      check_cuda(gpu::launch_backward_prepare(s.out, b.dout, shape_.precision, s.row_max, s.row_sum, b.lse2, b.delta,
                                              geometry.rows(), static_cast<int>(geometry.head_dim), stream),
                 d, "launch of the backward's log-sum-exp and delta");
    }
    for (Count r = 0; r < n; ++r) {
      for (Count d = 0; d < n; ++d) {
        TimedOp& op = backward_kernels_[cell(r, d)];
        op.enqueued = problem_.block_active(r, d);
        if (!op.enqueued) continue;
        const auto i = static_cast<std::size_t>(d);
        gpu::BlockBackwardArgs args = backward_slots_[i].kernel_args(slots_[i], gpu::kv_slot(r), gpu::grad_slot(r), scale);
        schedules_[i].apply(r, args);
        record(op.start, "a backward kernel's start event");
        check_cuda(gpu::launch_block_attention_backward(shape_, args, stream), d,
                   [&] { return fmt::format("backward kernel launch in round {}", r); });
        record(op.end, "a backward kernel's end event");
      }
      for (Count d = 0; d < n; ++d) {
        TimedOp& op = backward_handoffs_[cell(r, d)];
        op.enqueued = true;  // the accumulator moves every round, the last one home
        const auto next = static_cast<std::size_t>((d + 1) % n);
        const gpu::BackwardSlots& grads = backward_slots_[static_cast<std::size_t>(d)];
        record(op.start, "a backward hand-off's start event");
        if (r + 1 < n) copy_kv_block(d, r, "backward round");
        check_cuda(cudaMemcpyAsync(backward_slots_[next].grad[gpu::grad_slot(r + 1)], grads.grad[gpu::grad_slot(r)],
                                   static_cast<std::size_t>(grads.grad_bytes()), cudaMemcpyDeviceToDevice, stream),
                   d, [&] { return fmt::format("cudaMemcpyAsync of the dK/dV accumulator to device {} in backward round {}", next, r); });
        record(op.end, "a backward hand-off's end event");
      }
    }
  }

  // Device d's K/V block of `round` into device d + 1's slot for the next round (forward and
  // backward alike); `pass` names the round in a failure ("round", "backward round").
  void copy_kv_block(Count d, Count round, const char* pass) {
    const Count next = (d + 1) % devices_;
    const DeviceSlots& from = slots_[static_cast<std::size_t>(d)];
    const DeviceSlots& to = slots_[static_cast<std::size_t>(next)];
    check_cuda(cudaMemcpyAsync(to.slot[gpu::kv_slot(round + 1)], from.slot[gpu::kv_slot(round)],
                               static_cast<std::size_t>(from.geometry.slot_bytes()), cudaMemcpyDeviceToDevice, stream_.get()),
               d, [&] { return fmt::format("cudaMemcpyAsync of the K/V block to device {} in {} {}", next, pass, round); });
  }

  // [round * N + device] microseconds of `ops` in the last iteration, 0 where nothing was enqueued.
  [[nodiscard]] std::vector<double> times_of(const std::vector<TimedOp>& ops) const {
    std::vector<double> us(ops.size(), 0.0);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].enqueued) us[i] = gpu::elapsed_us(ops[i].start.get(), ops[i].end.get(), static_cast<Count>(i) % devices_);
    }
    return us;
  }

  [[nodiscard]] std::size_t cell(Count round, Count device) const {
    return static_cast<std::size_t>(round * devices_ + device);
  }

  void record(const Event& event, const char* what) {
    check_cuda(cudaEventRecord(event.get(), stream_.get()), kGpuRank,
               [&] { return fmt::format("cudaEventRecord of {}", what); });
  }

  void wait_until_done(const Deadline& deadline) {
    // An error here is asynchronous (a kernel or copy faulted earlier): CUDA cannot say which.
    const auto failed_operation = "the ring's kernels and copies (an asynchronous error: set CUDA_LAUNCH_BLOCKING=1 to "
                                  "locate the launch)";
    while (!gpu::event_done(done_.get(), kGpuRank, failed_operation)) {
      if (deadline.passed()) {
        hung_ = true;
        throw_first_pending(deadline);
      }
      gpu::poll_pause();
    }
  }

  // Names the first operation, in stream order, that has not completed.
  [[noreturn]] void throw_first_pending(const Deadline& deadline) const {
    const Count n = devices_;
    for (Count r = 0; r < n; ++r) {
      for (Count d = 0; d < n; ++d) {
        const TimedOp& op = kernels_[cell(r, d)];
        if (op.enqueued && cudaEventQuery(op.end.get()) != cudaSuccess) {
          throw DeviceFailure(d, fmt::format("kernel in round {}", r), gpu::timeout_detail(deadline));
        }
      }
      for (Count d = 0; d < n; ++d) {
        const TimedOp& op = handoffs_[cell(r, d)];
        if (op.enqueued && cudaEventQuery(op.end.get()) != cudaSuccess) {
          throw DeviceFailure(d, fmt::format("copy of the K/V block to device {} in round {}", (d + 1) % n, r),
                              gpu::timeout_detail(deadline));
        }
      }
    }
    for (Count r = 0; r < n && backward_; ++r) {
      for (Count d = 0; d < n; ++d) {
        if (const TimedOp& op = backward_kernels_[cell(r, d)]; op.enqueued && cudaEventQuery(op.end.get()) != cudaSuccess) {
          throw DeviceFailure(d, fmt::format("backward kernel in round {}", r), gpu::timeout_detail(deadline));
        }
      }
      for (Count d = 0; d < n; ++d) {
        if (const TimedOp& op = backward_handoffs_[cell(r, d)]; op.enqueued && cudaEventQuery(op.end.get()) != cudaSuccess) {
          throw DeviceFailure(d, fmt::format("copy of the K/V block and dK/dV to device {} in backward round {}", (d + 1) % n, r),
                              gpu::timeout_detail(deadline));
        }
      }
    }
    throw DeviceFailure(kGpuRank, "output normalisation", gpu::timeout_detail(deadline));
  }

  const RingProblem& problem_;
  Count devices_;
  gpu::KernelShape shape_;
  bool backward_;  // the case runs the backward ring after the forward
  double timeout_s_;
  std::string name_;
  gpu::Stream stream_;
  std::optional<gpu::RingMemory> memory_;
  std::vector<DeviceSlots> slots_;
  std::vector<gpu::DeviceSchedules> schedules_;  // [device]
  std::optional<gpu::BackwardMemory> backward_memory_;
  std::vector<gpu::BackwardSlots> backward_slots_;  // [device], a backward case
  std::vector<TimedOp> kernels_;   // [round * N + device]
  std::vector<TimedOp> handoffs_;  // [round * N + device]
  std::vector<TimedOp> backward_kernels_;   // [round * N + device], a backward case
  std::vector<TimedOp> backward_handoffs_;  // [round * N + device], a backward case
  Event wall_start_, wall_end_, done_;
  bool hung_ = false;
};

}  // namespace

std::unique_ptr<RingBackend> make_cuda_backend() {
  return std::make_unique<gpu::GpuBackend<CudaRing, gpu::CudaAllGather, gpu::CudaUlysses>>("cuda",
                                                                                          /*concurrent_devices=*/false);
}

KernelTileCounts count_kernel_tiles(const RingProblem& problem) {
  CudaRing ring(problem, RunOptions{}.timeout_s);
  const Count n = problem.ring_case().devices;
  const auto cells = static_cast<std::size_t>(n * n);
  bool no_fault = false;  // the injected OOM, if any, already hit the ring's first allocation
  gpu::DeviceMemory counters(static_cast<std::int64_t>(cells * 2 * sizeof(unsigned long long)), kGpuRank,
                             "the tile counters", no_fault);
  auto* counts = reinterpret_cast<unsigned long long*>(counters.get());
  // On the ring's stream: a non-blocking stream does not wait for the legacy stream's cudaMemset.
  check_cuda(cudaMemsetAsync(counts, 0, cells * 2 * sizeof(unsigned long long), ring.stream()), kGpuRank,
             "cudaMemsetAsync of the tile counters");
  ring.iterate(counts);
  std::vector<unsigned long long> host(cells * 2);
  check_cuda(cudaMemcpyAsync(host.data(), counts, host.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                             ring.stream()),
             kGpuRank, "cudaMemcpy of the tile counters to the host");
  gpu::wait_stream(ring.stream(), kGpuRank, "download of the tile counters", ring.deadline());
  KernelTileCounts result;
  for (std::size_t i = 0; i < cells; ++i) {
    result.active.push_back(static_cast<Count>(host[2 * i]));
    result.partial.push_back(static_cast<Count>(host[2 * i + 1]));
  }
  return result;
}

}  // namespace stripesim::validate
