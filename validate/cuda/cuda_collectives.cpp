#include "cuda_collectives.hpp"

#include <fmt/format.h>

#include <limits>
#include <span>

#include "fault_injection.hpp"
#include "gpu_devices.hpp"
#include "row_copy.hpp"
#include "ulysses_slices.hpp"

namespace stripesim::validate::gpu {
namespace {

constexpr int kDevice = 0;     // the GPU every device runs on
constexpr Count kGpuRank = 0;  // rank named by failures of the GPU as a whole (allocation, setup)

}  // namespace

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

void CudaCollective::time_call(Count device, BlockAttentionArgs args, const DeviceSchedules& schedule, const char* what) {
  schedule.apply(0, args);
  const cudaStream_t stream = stream_.get();
  steps_->time(device, TimedSteps::Cell::kernel, what, stream, [&] {
    check_cuda(launch_block_attention(shape_, args, stream), device, [&] { return fmt::format("launch of the {}", what); });
  });
}

void CudaCollective::finish_iteration(RingMeasurement* record) {
  steps_->wait(stream_.get(), Deadline::after(timeout_s_));
  if (record == nullptr) return;
  const auto cells = static_cast<std::size_t>(devices_ * devices_);
  std::vector<double> kernel_us(cells, 0.0), handoff_us(cells, 0.0);
  steps_->add_cells(kernel_us, handoff_us);
  record->kernel_us.push_back(std::move(kernel_us));
  record->handoff_us.push_back(std::move(handoff_us));
  record->wall_us.push_back(steps_->wall_us());
}

std::vector<double> CudaCollective::download_output() {
  return gpu::download_outputs(problem_, timeout_s_, [this](Count d) {
    return std::pair<const DeviceSlots*, cudaStream_t>{&shards_[static_cast<std::size_t>(d)], stream_.get()};
  });
}

// --- all-gather -------------------------------------------------------------------------------

CudaAllGather::CudaAllGather(const RingProblem& problem, double timeout_s)
    : CudaCollective(problem, timeout_s), whole_(GatheredKv::of(problem)) {
  bool no_fault = false;  // an injected OOM hits the shards' first allocation
  gathered_ = DeviceMemory(align_up(whole_.slot_bytes()) * devices_, kGpuRank,
                           fmt::format("the gathered K/V of {} devices", devices_), no_fault);
  const std::vector<Position> keys = positions_in_rank_order(problem);
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

GatheredKv CudaAllGather::gathered(Count device) const {
  return {gathered_.get() + align_up(whole_.slot_bytes()) * device, whole_};
}

void CudaAllGather::iterate_and_record(RingMeasurement* record) {
  const cudaStream_t stream = stream_.get();
  const auto scale = static_cast<float>(problem_.scale());
  for (Count d = 0; d < devices_; ++d) {
    reset_softmax_state(shards_[static_cast<std::size_t>(d)], stream, d);
    poison_output(shards_[static_cast<std::size_t>(d)], stream, d);
  }
  steps_->begin(stream);
  for (Count e = 0; e < devices_; ++e) {
    const GatheredKv to = gathered(e);
    steps_->time(e, TimedSteps::Cell::handoff, fmt::format("all-gather of the K/V blocks into device {}", e), stream, [&] {
      for (Count d = 0; d < devices_; ++d) {
        for (const BlockCopy& c : gather_block(shards_[static_cast<std::size_t>(d)], d, to)) {
          check_cuda(cudaMemcpyAsync(c.to, c.from, static_cast<std::size_t>(c.bytes), cudaMemcpyDeviceToDevice, stream), d,
                     [&] { return fmt::format("cudaMemcpyAsync of the {} block to device {} in the all-gather", c.what, e); });
        }
      }
    });
  }
  for (Count e = 0; e < devices_; ++e) {
    BlockAttentionArgs args = shards_[static_cast<std::size_t>(e)].kernel_args(0, scale);
    gathered(e).point(args);
    time_call(e, args, schedules_[static_cast<std::size_t>(e)], "kernel after the all-gather");
  }
  steps_->end_wall(stream);
  for (Count e = 0; e < devices_; ++e) normalise_output(shards_[static_cast<std::size_t>(e)], stream, e);
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
  const cudaStream_t stream = stream_.get();
  const auto scale = static_cast<float>(problem_.scale());
  for (Count d = 0; d < devices_; ++d) poison_output(shards_[static_cast<std::size_t>(d)], stream, d);
  for (Count e = 0; e < devices_; ++e) reset_softmax_state(whole_[static_cast<std::size_t>(e)], stream, e);
  steps_->begin(stream);
  for (Count e = 0; e < devices_; ++e) {
    const DeviceSlots& whole = whole_[static_cast<std::size_t>(e)];
    const std::string what = fmt::format("all-to-all of the Q, K and V heads to device {}", e);
    steps_->time(e, TimedSteps::Cell::handoff, what, stream, [&] {
      for (Count d = 0; d < devices_; ++d) {
        // Device d's tokens land on their original positions in the whole sequence.
        for (const RowCopy& rows : ulysses_gather(shards_[static_cast<std::size_t>(d)], whole, split_, e)) {
          enqueue_copy_rows(rows, stream, d, what);
        }
      }
    });
  }
  for (Count e = 0; e < devices_; ++e) {
    time_call(e, whole_[static_cast<std::size_t>(e)].kernel_args(0, scale), schedule_, "kernel of Ulysses");
  }
  // Inside the wall: the output goes back normalised (a few microseconds beside the call).
  for (Count e = 0; e < devices_; ++e) normalise_output(whole_[static_cast<std::size_t>(e)], stream, e);
  for (Count e = 0; e < devices_; ++e) {
    const DeviceSlots& whole = whole_[static_cast<std::size_t>(e)];
    const std::string what = fmt::format("all-to-all of device {}'s output heads back", e);
    steps_->time(e, TimedSteps::Cell::handoff, what, stream, [&] {
      for (Count d = 0; d < devices_; ++d) {
        enqueue_copy_rows(ulysses_return(whole, shards_[static_cast<std::size_t>(d)], split_, e), stream, e, what);
      }
    });
  }
  steps_->end_wall(stream);
  finish_iteration(record);
}

}  // namespace stripesim::validate::gpu
