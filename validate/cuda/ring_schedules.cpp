#include "ring_schedules.hpp"

#include <fmt/format.h>

#include "stripesim/model/work/work_model.hpp"
#include "stripesim/validate/tile_schedule.hpp"

namespace stripesim::validate::gpu {

DeviceSchedules::DeviceSchedules(const RingProblem& problem, Count device, const KernelShape& shape,
                                 cudaStream_t stream, Count rank, const Deadline& deadline) {
  const bool forward = shape.kernel == GpuKernel::flash;
  const bool backward = problem.ring_case().backward;
  if (!forward && !backward) return;
  const Count n = problem.ring_case().devices;
  const DeviceShard& queries = problem.shard(device);
  // One host image of every round's packed schedules, back to back.
  std::vector<std::int32_t> image;
  struct Offsets {
    std::size_t order, offsets, entries;
  };
  std::vector<Offsets> at, backward_at;
  const auto append = [&image](const TileSchedule& s, std::vector<Offsets>& where) {
    where.push_back({image.size(), image.size() + s.offsets_at(), image.size() + s.entries_at()});
    const std::vector<std::int32_t> packed = s.packed();
    image.insert(image.end(), packed.begin(), packed.end());
  };
  for (Count r = 0; r < n; ++r) {
    const DeviceShard& keys = problem.shard(model::kv_source(device, r, n));
    const TileSchedule s = build_tile_schedule(queries.lowest_key, queries.highest_key, keys.positions, shape.tile);
    if (forward) append(s, at);
    if (backward) {
      const auto key_count = static_cast<Count>(keys.positions.size());
      append(by_key_tile(s, (key_count + shape.tile.key - 1) / shape.tile.key), backward_at);
    }
  }
  bool no_fault = false;  // an injected OOM hits the ring's own first allocation
  const auto bytes = static_cast<std::int64_t>(image.size() * sizeof(std::int32_t));
  memory_ = DeviceMemory(bytes, rank, fmt::format("device {}'s tile schedules", device), no_fault);
  check_cuda(cudaMemcpyAsync(memory_.get(), image.data(), static_cast<std::size_t>(bytes), cudaMemcpyHostToDevice, stream),
             rank, [&] { return fmt::format("cudaMemcpy of device {}'s tile schedules to the GPU", device); });
  wait_stream(stream, rank, fmt::format("upload of device {}'s tile schedules", device), deadline);  // image outlives it
  const auto* base = reinterpret_cast<const std::int32_t*>(memory_.get());
  for (const Offsets& o : at) rounds_.push_back({base + o.order, base + o.offsets, base + o.entries});
  for (const Offsets& o : backward_at) backward_rounds_.push_back({base + o.order, base + o.offsets, base + o.entries});
}

namespace {

// Points either kernel's arguments at one round's schedule (no-op without schedules).
template <typename Round, typename Args>
void point_at(const std::vector<Round>& rounds, Count round, Args& args) {
  if (rounds.empty()) return;
  const Round& r = rounds[static_cast<std::size_t>(round)];
  args.tile_order = r.order;
  args.tile_offsets = r.offsets;
  args.tile_entries = r.entries;
}

}  // namespace

void DeviceSchedules::apply(Count round, BlockAttentionArgs& args) const { point_at(rounds_, round, args); }

void DeviceSchedules::apply(Count round, BlockBackwardArgs& args) const { point_at(backward_rounds_, round, args); }

}  // namespace stripesim::validate::gpu
