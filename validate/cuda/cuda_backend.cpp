// The `cuda` backend: one GPU (device 0) hosts all N ring devices. Each round launches the
// kernel of every device that has work, one after another on one stream, then hands every
// device's K/V block to its successor's receive slot with one device-to-device copy. Everything
// is timed with CUDA events; the wall time is the events around the whole ring, so it is the
// sum of the devices' work (one processor), as RingMeasurement documents.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

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
        timeout_s_(timeout_s) {
    gpu::InjectedFault fault = gpu::injected_fault();
    static_cast<void>(gpu::visible_gpus());  // no GPU: a DeviceFailure now, before anything else
    gpu::prepare_gpu(kDevice, shape_, kGpuRank);
    name_ = gpu::gpu_name(kDevice);
    stream_ = gpu::Stream(kGpuRank, "ring");
    memory_.emplace(gpu::BlockGeometry::of(problem), devices_, kGpuRank, fault.oom);
    const Deadline deadline = Deadline::after(timeout_s_);
    for (Count d = 0; d < devices_; ++d) {
      slots_.push_back(memory_->device(d));
      gpu::upload_shard(problem, d, slots_.back(), stream_.get(), d, deadline);
      schedules_.emplace_back(problem, d, shape_, stream_.get(), d, deadline);
    }
    const auto cells = static_cast<std::size_t>(devices_ * devices_);
    kernels_.resize(cells);
    handoffs_.resize(cells);
    for (std::size_t i = 0; i < cells; ++i) {
      kernels_[i] = {Event(kGpuRank), Event(kGpuRank)};
      handoffs_[i] = {Event(kGpuRank), Event(kGpuRank)};
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
    for (auto& s : schedules_) s.abandon();
  }

  [[nodiscard]] const std::string& device_name() const { return name_; }
  [[nodiscard]] cudaStream_t stream() const { return stream_.get(); }
  [[nodiscard]] Deadline deadline() const { return Deadline::after(timeout_s_); }
  [[nodiscard]] std::int64_t handoff_bytes() const { return gpu::BlockGeometry::of(problem_).slot_bytes(); }

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
      check_cuda(gpu::launch_init_state(s.out_acc, s.row_max, s.row_sum, geometry.rows(),
                                        static_cast<int>(geometry.head_dim), stream),
                 d, "launch of the softmax state init");
      check_cuda(gpu::launch_fill_nan(s.out, geometry.rows() * geometry.head_dim, stream), d,
                 "launch of the output poisoning");
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
        const DeviceSlots& from = slots_[static_cast<std::size_t>(d)];
        const DeviceSlots& to = slots_[static_cast<std::size_t>((d + 1) % n)];
        record(op.start, "a hand-off's start event");
        check_cuda(cudaMemcpyAsync(to.slot[gpu::kv_slot(r + 1)], from.slot[gpu::kv_slot(r)],
                                   static_cast<std::size_t>(geometry.slot_bytes()), cudaMemcpyDeviceToDevice, stream),
                   d, [&] { return fmt::format("cudaMemcpyAsync of the K/V block to device {} in round {}", (d + 1) % n, r); });
        record(op.end, "a hand-off's end event");
      }
    }
    record(wall_end_, "the ring's end event");
    for (Count d = 0; d < n; ++d) {
      const DeviceSlots& s = slots_[static_cast<std::size_t>(d)];
      check_cuda(gpu::launch_normalise(s.out_acc, s.row_sum, s.out, geometry.rows(), static_cast<int>(geometry.head_dim),
                                       stream),
                 d, "launch of the output normalisation");
    }
    record(done_, "the iteration's end event");
    wait_until_done(Deadline::after(timeout_s_));
  }

  // The timings of the last iteration into `m`.
  void record_timings(RingMeasurement& m) const {
    const Count n = devices_;
    std::vector<double> kernel_us(static_cast<std::size_t>(n * n), 0.0);
    std::vector<double> handoff_us(static_cast<std::size_t>(n * n), 0.0);
    for (std::size_t i = 0; i < kernel_us.size(); ++i) {
      const Count d = static_cast<Count>(i) % n;
      if (kernels_[i].enqueued) kernel_us[i] = gpu::elapsed_us(kernels_[i].start.get(), kernels_[i].end.get(), d);
      if (handoffs_[i].enqueued) handoff_us[i] = gpu::elapsed_us(handoffs_[i].start.get(), handoffs_[i].end.get(), d);
    }
    m.kernel_us.push_back(std::move(kernel_us));
    m.handoff_us.push_back(std::move(handoff_us));
    m.wall_us.push_back(gpu::elapsed_us(wall_start_.get(), wall_end_.get(), kGpuRank));
  }

  [[nodiscard]] std::vector<double> download_output() {
    const RingCase& c = problem_.ring_case();
    std::vector<double> output(static_cast<std::size_t>(c.seq_len * c.heads * c.head_dim),
                               std::numeric_limits<double>::quiet_NaN());
    const Deadline deadline = Deadline::after(timeout_s_);
    for (Count d = 0; d < devices_; ++d) {
      gpu::download_output(problem_, d, slots_[static_cast<std::size_t>(d)], stream_.get(), d, deadline, output);
    }
    return output;
  }

 private:
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
    throw DeviceFailure(kGpuRank, "output normalisation", gpu::timeout_detail(deadline));
  }

  const RingProblem& problem_;
  Count devices_;
  gpu::KernelShape shape_;
  double timeout_s_;
  std::string name_;
  gpu::Stream stream_;
  std::optional<gpu::RingMemory> memory_;
  std::vector<DeviceSlots> slots_;
  std::vector<gpu::DeviceSchedules> schedules_;  // [device]
  std::vector<TimedOp> kernels_;   // [round * N + device]
  std::vector<TimedOp> handoffs_;  // [round * N + device]
  Event wall_start_, wall_end_, done_;
  bool hung_ = false;
};

}  // namespace

std::unique_ptr<RingBackend> make_cuda_backend() {
  return std::make_unique<gpu::GpuBackend<CudaRing>>("cuda", /*concurrent_devices=*/false);
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
