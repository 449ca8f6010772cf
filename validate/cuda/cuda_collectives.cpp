#include "cuda_collectives.hpp"

#include <fmt/format.h>

#include <limits>
#include <span>

#include "fault_injection.hpp"
#include "gpu_devices.hpp"
#include "row_copy.hpp"

namespace stripesim::validate::gpu {
namespace {

constexpr int kDevice = 0;     // the GPU every device runs on
constexpr Count kGpuRank = 0;  // rank named by failures of the GPU as a whole (allocation, setup)

// Sub-buffers start on 256 bytes, cudaMalloc's own alignment.
constexpr std::int64_t align_up(std::int64_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

// --- TimedSteps -------------------------------------------------------------------------------

void TimedSteps::record(const Event& event, cudaStream_t stream) {
  check_cuda(cudaEventRecord(event.get(), stream), rank_, "cudaEventRecord of a collective's timing event");
}

void TimedSteps::begin(cudaStream_t stream) {
  next_ = 0;
  record(wall_start_, stream);
}

void TimedSteps::wait(cudaStream_t stream, const Deadline& deadline) {
  record(done_, stream);
  // An error here is asynchronous (a kernel or copy faulted earlier): CUDA cannot say which.
  const auto failed = "the collective's kernels and copies (an asynchronous error: set CUDA_LAUNCH_BLOCKING=1 to "
                      "locate the launch)";
  while (!event_done(done_.get(), rank_, failed)) {
    if (deadline.passed()) {
      hung_ = true;
      for (std::size_t i = 0; i < next_; ++i) {
        if (cudaEventQuery(steps_[i].end.get()) != cudaSuccess) {
          throw DeviceFailure(steps_[i].device, steps_[i].what, timeout_detail(deadline));
        }
      }
      throw DeviceFailure(rank_, "output normalisation", timeout_detail(deadline));
    }
    poll_pause();
  }
}

void TimedSteps::append_timings(RingMeasurement& m, Count devices) const {
  const auto cells = static_cast<std::size_t>(devices * devices);
  std::vector<double> kernel_us(cells, 0.0), handoff_us(cells, 0.0);
  for (std::size_t i = 0; i < next_; ++i) {
    const Step& step = steps_[i];
    const double us = elapsed_us(step.start.get(), step.end.get(), step.device);
    // Round 0's cell of the device: [0 * devices + device].
    if (step.cell == Cell::kernel) {
      kernel_us[static_cast<std::size_t>(step.device)] += us;
    } else {
      handoff_us[static_cast<std::size_t>(step.device)] += us;
    }
  }
  m.kernel_us.push_back(std::move(kernel_us));
  m.handoff_us.push_back(std::move(handoff_us));
  m.wall_us.push_back(elapsed_us(wall_start_.get(), wall_end_.get(), rank_));
}

// --- CudaCollective ---------------------------------------------------------------------------

CudaCollective::CudaCollective(const RingProblem& problem, double timeout_s)
    : problem_(problem),
      devices_(problem.ring_case().devices),
      shape_(gpu_kernel_shape(problem)),
      timeout_s_(timeout_s) {
  InjectedFault fault = injected_fault();
  static_cast<void>(visible_gpus());  // no GPU: a DeviceFailure now, before anything else
  prepare_gpu(kDevice, shape_, kGpuRank);
  name_ = gpu_name(kDevice);
  stream_ = Stream(kGpuRank, "collective");
  steps_.emplace(kGpuRank);
  // One K/V slot each: a device's own block, which the collective copies from.
  shards_memory_.emplace(BlockGeometry::of(problem), devices_, kGpuRank, fault.oom, 1);
  const Deadline deadline = Deadline::after(timeout_s_);
  for (Count d = 0; d < devices_; ++d) {
    shards_.push_back(shards_memory_->device(d));
    upload_shard(problem, d, shards_.back(), stream_.get(), d, deadline);
  }
}

CudaCollective::~CudaCollective() {
  // After a timeout the device may still be busy with the hung work: freeing would wait.
  if (hung() && shards_memory_) shards_memory_->abandon();
}

void CudaCollective::poison_output(Count device) {
  const DeviceSlots& s = shards_[static_cast<std::size_t>(device)];
  check_cuda(launch_fill_nan(s.out, s.geometry.rows() * s.geometry.head_dim, stream_.get()), device,
             "launch of the output poisoning");
}

void CudaCollective::reset_state(const DeviceSlots& slots, Count device) {
  check_cuda(launch_init_state(slots.out_acc, slots.row_max, slots.row_sum, slots.geometry.rows(),
                               static_cast<int>(slots.geometry.head_dim), stream_.get()),
             device, "launch of the softmax state init");
}

void CudaCollective::normalise(const DeviceSlots& slots, Count device) {
  check_cuda(launch_normalise(slots.out_acc, slots.row_sum, slots.out, slots.geometry.rows(),
                              static_cast<int>(slots.geometry.head_dim), stream_.get()),
             device, "launch of the output normalisation");
}

void CudaCollective::time_call(Count device, BlockAttentionArgs args, const DeviceSchedules& schedule, const char* what) {
  schedule.apply(0, args);
  const cudaStream_t stream = stream_.get();
  steps_->time(device, TimedSteps::Cell::kernel, what, stream,
               [&] { check_cuda(launch_block_attention(shape_, args, stream), device, [&] { return fmt::format("launch of the {}", what); }); });
}

void CudaCollective::finish_iteration(RingMeasurement* record) {
  steps_->wait(stream_.get(), Deadline::after(timeout_s_));
  if (record != nullptr) steps_->append_timings(*record, devices_);
}

std::vector<double> CudaCollective::download_output() {
  const RingCase& c = problem_.ring_case();
  std::vector<double> output(static_cast<std::size_t>(c.seq_len * c.heads * c.head_dim),
                             std::numeric_limits<double>::quiet_NaN());
  const Deadline deadline = Deadline::after(timeout_s_);
  for (Count d = 0; d < devices_; ++d) {
    gpu::download_output(problem_, d, shards_[static_cast<std::size_t>(d)], stream_.get(), d, deadline, output);
  }
  return output;
}

// --- all-gather -------------------------------------------------------------------------------

CudaAllGather::CudaAllGather(const RingProblem& problem, double timeout_s) : CudaCollective(problem, timeout_s) {
  whole_ = BlockGeometry::of(problem);
  whole_.tokens = problem.ring_case().seq_len;
  bool no_fault = false;  // an injected OOM hits the shards' first allocation
  gathered_ = DeviceMemory(align_up(whole_.slot_bytes()) * devices_, kGpuRank,
                           fmt::format("the gathered K/V of {} devices", devices_), no_fault);
  // The gathered keys lie in rank order: device 0's block, then device 1's, ...
  std::vector<Position> keys;
  for (Count d = 0; d < devices_; ++d) {
    const std::vector<Position>& own = problem.shard(d).positions;
    keys.insert(keys.end(), own.begin(), own.end());
  }
  const Deadline deadline = Deadline::after(timeout_s_);
  for (Count d = 0; d < devices_; ++d) {
    schedules_.emplace_back(problem.shard(d), std::vector<std::span<const Position>>{keys}, false, shape_, stream_.get(), d,
                            fmt::format("device {}", d), deadline);
  }
}

CudaAllGather::~CudaAllGather() {
  if (!hung()) return;
  gathered_.abandon();
  for (DeviceSchedules& s : schedules_) s.abandon();
}

std::byte* CudaAllGather::gathered(Count device) const { return gathered_.get() + align_up(whole_.slot_bytes()) * device; }

void CudaAllGather::iterate_and_record(RingMeasurement* record) {
  const cudaStream_t stream = stream_.get();
  const auto scale = static_cast<float>(problem_.scale());
  const BlockGeometry block = BlockGeometry::of(problem_);
  for (Count d = 0; d < devices_; ++d) {
    reset_state(shards_[static_cast<std::size_t>(d)], d);
    poison_output(d);
  }
  steps_->begin(stream);
  for (Count e = 0; e < devices_; ++e) {
    std::byte* k = gathered(e);
    std::byte* v = k + whole_.kv_bytes();
    std::byte* positions = k + 2 * whole_.kv_bytes();
    steps_->time(e, TimedSteps::Cell::handoff, fmt::format("all-gather of the K/V blocks into device {}", e), stream, [&] {
      for (Count d = 0; d < devices_; ++d) {
        const DeviceSlots& from = shards_[static_cast<std::size_t>(d)];
        const auto copy = [&](std::byte* to, const void* source, std::int64_t bytes, const char* what) {
          check_cuda(cudaMemcpyAsync(to + d * bytes, source, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice, stream),
                     d, [&] { return fmt::format("cudaMemcpyAsync of the {} block to device {} in the all-gather", what, e); });
        };
        copy(k, from.k(0), block.kv_bytes(), "K");
        copy(v, from.v(0), block.kv_bytes(), "V");
        copy(positions, from.positions(0), block.tokens * 8, "positions");
      }
    });
  }
  for (Count e = 0; e < devices_; ++e) {
    BlockAttentionArgs args = shards_[static_cast<std::size_t>(e)].kernel_args(0, scale);
    args.k = gathered(e);
    args.v = gathered(e) + whole_.kv_bytes();
    args.key_positions = reinterpret_cast<const std::int64_t*>(gathered(e) + 2 * whole_.kv_bytes());
    args.keys = whole_.tokens;
    time_call(e, args, schedules_[static_cast<std::size_t>(e)], "kernel after the all-gather");
  }
  steps_->end_wall(stream);
  for (Count e = 0; e < devices_; ++e) normalise(shards_[static_cast<std::size_t>(e)], e);
  finish_iteration(record);
}

// --- Ulysses ----------------------------------------------------------------------------------

CudaUlysses::CudaUlysses(const RingProblem& problem, double timeout_s)
    : CudaCollective(problem, timeout_s), split_(ulysses_split(problem, 2)) {  // bf16 / fp16: 2 bytes
  const RingCase& c = problem.ring_case();
  const BlockGeometry whole{c.seq_len, split_.per_device.heads, split_.per_device.kv_heads, c.head_dim};
  bool no_fault = false;  // an injected OOM hits the shards' first allocation
  whole_memory_.emplace(whole, devices_, kGpuRank, no_fault, 1);
  const Deadline deadline = Deadline::after(timeout_s_);
  const cudaStream_t stream = stream_.get();
  // The whole sequence's positions and each query's interval never change: uploaded once.
  for (Count e = 0; e < devices_; ++e) {
    whole_.push_back(whole_memory_->device(e));
    const DeviceSlots& w = whole_.back();
    const auto upload = [&](void* to, const std::vector<Position>& from, const char* what) {
      check_cuda(cudaMemcpyAsync(to, from.data(), from.size() * sizeof(Position), cudaMemcpyHostToDevice, stream), e,
                 [&] { return fmt::format("cudaMemcpy of the whole sequence's {} to device {}", what, e); });
    };
    upload(w.positions(0), split_.whole.positions, "positions");
    upload(w.lowest, split_.whole.lowest_key, "lowest keys");
    upload(w.highest, split_.whole.highest_key, "highest keys");
  }
  wait_stream(stream, kGpuRank, "upload of the whole sequence's positions", deadline);
  schedule_ = DeviceSchedules(split_.whole, std::vector<std::span<const Position>>{split_.whole.positions}, false, shape_,
                              stream, kGpuRank, "the whole sequence", deadline);
}

CudaUlysses::~CudaUlysses() {
  if (!hung()) return;
  if (whole_memory_) whole_memory_->abandon();
  schedule_.abandon();
}

void CudaUlysses::iterate_and_record(RingMeasurement* record) {
  const RingCase& c = problem_.ring_case();
  const cudaStream_t stream = stream_.get();
  const auto scale = static_cast<float>(problem_.scale());
  const Count tokens = problem_.block_size();
  const Count heads = split_.per_device.heads;
  const Count kv_heads = split_.per_device.kv_heads;
  const std::int64_t head_bytes = c.head_dim * 2;  // one head of one token, bf16 / fp16
  for (Count d = 0; d < devices_; ++d) poison_output(d);
  for (Count e = 0; e < devices_; ++e) reset_state(whole_[static_cast<std::size_t>(e)], e);
  const auto copy_rows = [&](const RowCopy& copy, Count device, const std::string& what) {
    check_cuda(launch_copy_rows(copy, stream), device, [&] { return fmt::format("launch of the {}", what); });
  };
  steps_->begin(stream);
  for (Count e = 0; e < devices_; ++e) {
    const DeviceSlots& to = whole_[static_cast<std::size_t>(e)];
    const std::string what = fmt::format("all-to-all of the Q, K and V heads to device {}", e);
    steps_->time(e, TimedSteps::Cell::handoff, what, stream, [&] {
      for (Count d = 0; d < devices_; ++d) {
        const DeviceSlots& from = shards_[static_cast<std::size_t>(d)];
        // Device d's tokens land on their original positions in the whole sequence.
        const std::int64_t* rows = from.positions(0);
        copy_rows({from.q, c.heads * head_bytes, split_.first_head(e) * head_bytes, nullptr, to.q, heads * head_bytes, 0, rows,
                   heads * head_bytes, tokens},
                  d, what);
        const std::int64_t kv_offset = split_.first_kv_head(e) * head_bytes;
        copy_rows({from.k(0), c.kv_heads * head_bytes, kv_offset, nullptr, to.k(0), kv_heads * head_bytes, 0, rows,
                   kv_heads * head_bytes, tokens},
                  d, what);
        copy_rows({from.v(0), c.kv_heads * head_bytes, kv_offset, nullptr, to.v(0), kv_heads * head_bytes, 0, rows,
                   kv_heads * head_bytes, tokens},
                  d, what);
      }
    });
  }
  for (Count e = 0; e < devices_; ++e) {
    time_call(e, whole_[static_cast<std::size_t>(e)].kernel_args(0, scale), schedule_, "kernel of Ulysses");
  }
  // Inside the wall: the output goes back normalised (a few microseconds beside the call).
  for (Count e = 0; e < devices_; ++e) normalise(whole_[static_cast<std::size_t>(e)], e);
  const std::int64_t out_head_bytes = c.head_dim * 4;  // the output is fp32
  for (Count e = 0; e < devices_; ++e) {
    const DeviceSlots& from = whole_[static_cast<std::size_t>(e)];
    const std::string what = fmt::format("all-to-all of device {}'s output heads back", e);
    steps_->time(e, TimedSteps::Cell::handoff, what, stream, [&] {
      for (Count d = 0; d < devices_; ++d) {
        const DeviceSlots& to = shards_[static_cast<std::size_t>(d)];
        copy_rows({from.out, heads * out_head_bytes, 0, to.positions(0), to.out, c.heads * out_head_bytes,
                   split_.first_head(e) * out_head_bytes, nullptr, heads * out_head_bytes, tokens},
                  e, what);
      }
    });
  }
  steps_->end_wall(stream);
  finish_iteration(record);
}

}  // namespace stripesim::validate::gpu
