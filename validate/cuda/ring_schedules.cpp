#include "ring_schedules.hpp"

#include <fmt/format.h>

#include "stripesim/model/work/work_model.hpp"
#include "stripesim/validate/tile_schedule.hpp"

namespace stripesim::validate::gpu {

namespace {

// The keys each round's call reads: the block that reaches `device` at that round.
std::vector<std::span<const Position>> ring_calls(const RingProblem& problem, Count device) {
  const Count n = problem.ring_case().devices;
  std::vector<std::span<const Position>> calls;
  for (Count r = 0; r < n; ++r) calls.emplace_back(problem.shard(model::kv_source(device, r, n)).positions);
  return calls;
}

}  // namespace

DeviceSchedules::DeviceSchedules(const RingProblem& problem, Count device, const KernelShape& shape,
                                 cudaStream_t stream, Count rank, const Deadline& deadline)
    : DeviceSchedules(problem.shard(device), ring_calls(problem, device), problem.ring_case().backward, shape, stream,
                      rank, fmt::format("device {}", device), deadline) {}

DeviceSchedules::DeviceSchedules(const DeviceShard& queries, const std::vector<std::span<const Position>>& call_keys,
                                 bool backward, const KernelShape& shape, cudaStream_t stream, Count rank,
                                 const std::string& who, const Deadline& deadline) {
  const bool forward = shape.kernel != GpuKernel::wmma;  // flash and wgmma run the host's schedule
  if (!forward && !backward) return;
  // One host image of every call's packed schedules, back to back.
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
  for (const std::span<const Position> keys : call_keys) {
    const TileSchedule s = build_tile_schedule(queries.lowest_key, queries.highest_key, keys, shape.tile);
    if (forward) append(s, at);
    if (backward) {
      const auto key_count = static_cast<Count>(keys.size());
      append(by_key_tile(s, (key_count + shape.tile.key - 1) / shape.tile.key), backward_at);
    }
  }
  bool no_fault = false;  // an injected OOM hits the ring's own first allocation
  const auto bytes = static_cast<std::int64_t>(image.size() * sizeof(std::int32_t));
  memory_ = DeviceMemory(bytes, rank, fmt::format("{}'s tile schedules", who), no_fault);
  check_cuda(cudaMemcpyAsync(memory_.get(), image.data(), static_cast<std::size_t>(bytes), cudaMemcpyHostToDevice, stream),
             rank, [&] { return fmt::format("cudaMemcpy of {}'s tile schedules to the GPU", who); });
  wait_stream(stream, rank, fmt::format("upload of {}'s tile schedules", who), deadline);  // image outlives it
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
