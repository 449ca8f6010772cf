#include "ring_schedules.hpp"

#include <fmt/format.h>

#include "stripesim/model/work/work_model.hpp"
#include "stripesim/validate/tile_schedule.hpp"

namespace stripesim::validate::gpu {

DeviceSchedules::DeviceSchedules(const RingProblem& problem, Count device, const KernelShape& shape,
                                 cudaStream_t stream, Count rank, const Deadline& deadline) {
  if (shape.kernel != GpuKernel::flash) return;
  const Count n = problem.ring_case().devices;
  const DeviceShard& queries = problem.shard(device);
  // One host image of every round's packed schedule, back to back.
  std::vector<std::int32_t> image;
  struct Offsets {
    std::size_t order, offsets, entries;
  };
  std::vector<Offsets> at;
  for (Count r = 0; r < n; ++r) {
    const DeviceShard& keys = problem.shard(model::kv_source(device, r, n));
    const TileSchedule s = build_tile_schedule(queries.lowest_key, queries.highest_key, keys.positions, shape.tile);
    at.push_back({image.size(), image.size() + s.offsets_at(), image.size() + s.entries_at()});
    const std::vector<std::int32_t> packed = s.packed();
    image.insert(image.end(), packed.begin(), packed.end());
  }
  bool no_fault = false;  // an injected OOM hits the ring's own first allocation
  const auto bytes = static_cast<std::int64_t>(image.size() * sizeof(std::int32_t));
  memory_ = DeviceMemory(bytes, rank, fmt::format("device {}'s tile schedules", device), no_fault);
  check_cuda(cudaMemcpyAsync(memory_.get(), image.data(), static_cast<std::size_t>(bytes), cudaMemcpyHostToDevice, stream),
             rank, [&] { return fmt::format("cudaMemcpy of device {}'s tile schedules to the GPU", device); });
  wait_stream(stream, rank, fmt::format("upload of device {}'s tile schedules", device), deadline);  // image outlives it
  const auto* base = reinterpret_cast<const std::int32_t*>(memory_.get());
  for (const Offsets& o : at) rounds_.push_back({base + o.order, base + o.offsets, base + o.entries});
}

void DeviceSchedules::apply(Count round, BlockAttentionArgs& args) const {
  if (rounds_.empty()) return;
  const Round& r = rounds_[static_cast<std::size_t>(round)];
  args.tile_order = r.order;
  args.tile_offsets = r.offsets;
  args.tile_entries = r.entries;
}

}  // namespace stripesim::validate::gpu
