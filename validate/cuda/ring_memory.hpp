#pragma once
// Device memory of ring devices, shared by both GPU backends: per device its queries (local
// order), its query intervals, the online-softmax state and output, and three K/V slots. A slot
// is one contiguous [K | V | positions] block, exactly what travels to the next device, so a
// hand-off is one copy or one ncclSend. Slot 0 holds the device's own block (round 0) and is
// never overwritten; rounds r >= 1 alternate between the two receive slots 1 and 2 (double
// buffering): round r's block arrives while round r - 1's block is still being computed on.
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "device_resources.hpp"
#include "stripesim/validate/block_attention.hpp"
#include "stripesim/validate/handoff_bytes.hpp"
#include "stripesim/validate/ring_problem.hpp"

namespace stripesim::validate::gpu {

// The slot holding the block a device computes on at `round`.
[[nodiscard]] constexpr int kv_slot(Count round) { return round == 0 ? 0 : 1 + static_cast<int>(round % 2); }

// The GPU ring's inputs (Q, K, V) are bf16 or fp16: an element of this size, whichever.
using InputElement = std::uint16_t;
inline constexpr std::int64_t kInputBytes = sizeof(InputElement);

struct BlockGeometry {
  Count tokens = 0;  // c = n / N
  Count heads = 0;
  Count kv_heads = 0;
  Count head_dim = 0;
  [[nodiscard]] static BlockGeometry of(const RingProblem& problem);
  [[nodiscard]] std::int64_t q_bytes() const { return tokens * heads * head_dim * kInputBytes; }
  [[nodiscard]] std::int64_t kv_bytes() const { return tokens * kv_heads * head_dim * kInputBytes; }  // K or V alone
  // One slot: K, V and positions; what a hand-off moves.
  [[nodiscard]] std::int64_t slot_bytes() const { return block_bytes<InputElement>(tokens, kv_heads * head_dim); }
  [[nodiscard]] std::int64_t rows() const { return tokens * heads; }  // softmax rows
};

// Pointers into one device's buffers.
struct DeviceSlots {
  void* q = nullptr;
  std::byte* slot[3] = {nullptr, nullptr, nullptr};
  std::int64_t* lowest = nullptr;
  std::int64_t* highest = nullptr;
  float* out_acc = nullptr;
  float* row_max = nullptr;
  float* row_sum = nullptr;
  float* out = nullptr;
  BlockGeometry geometry;

  [[nodiscard]] void* k(int s) const { return slot[s]; }
  [[nodiscard]] void* v(int s) const { return slot[s] + geometry.kv_bytes(); }
  [[nodiscard]] std::int64_t* positions(int s) const {
    return reinterpret_cast<std::int64_t*>(slot[s] + 2 * geometry.kv_bytes());
  }
  // The kernel's arguments for computing on slot `s`.
  [[nodiscard]] BlockAttentionArgs kernel_args(int s, float scale) const;
  // What the forward and backward kernels' arguments share: the queries, the block on slot `s`,
  // the intervals and the sizes.
  template <typename Args>
  void fill_shared_args(Args& args, int s, float scale) const {
    args.q = q;
    args.k = k(s);
    args.v = v(s);
    args.query_lowest = lowest;
    args.query_highest = highest;
    args.key_positions = positions(s);
    args.queries = geometry.tokens;
    args.keys = geometry.tokens;
    args.heads = static_cast<int>(geometry.heads);
    args.kv_heads = static_cast<int>(geometry.kv_heads);
    args.scale = scale;
  }
};

// The keys an all-gather leaves on a device: K, V and positions of `geometry.tokens` keys, each
// back to back from `base` in rank order (device 0's block first).
struct GatheredKv {
  std::byte* base = nullptr;
  BlockGeometry geometry;
  [[nodiscard]] std::byte* k() const { return base; }
  [[nodiscard]] std::byte* v() const { return base + geometry.kv_bytes(); }
  [[nodiscard]] std::byte* positions() const { return base + 2 * geometry.kv_bytes(); }
  // A block's kernel arguments pointed at all of these keys.
  void point(BlockAttentionArgs& args) const {
    args.k = k();
    args.v = v();
    args.key_positions = reinterpret_cast<const std::int64_t*>(positions());
    args.keys = geometry.tokens;
  }
  // The geometry of every token's K/V: a block's, with all n tokens.
  [[nodiscard]] static BlockGeometry of(const RingProblem& problem);
};

// One contiguous copy of an all-gather: `bytes` from `from` to `to`.
struct BlockCopy {
  std::byte* to = nullptr;
  const void* from = nullptr;
  std::int64_t bytes = 0;
  const char* what = "";  // "K", "V" or "positions", for a failure
};
// Device `rank`'s own block (slot 0 of `block`) into its place in `gathered`: K, V and positions,
// each after the blocks of the ranks before it (where ncclAllGather puts them, and what the cuda
// backend's copies do).
[[nodiscard]] std::array<BlockCopy, 3> gather_block(const DeviceSlots& block, Count rank, const GatheredKv& gathered);

class RingMemory {
 public:
  // Allocates on the CURRENT device the buffers of `devices` ring devices, in three
  // allocations (queries, K/V slots, state) so that a failure names what did not fit.
  // `kv_slots`: 3 for a ring (own + 2 receive); 1 where a device holds one K/V block only
  // (Ulysses' whole sequence of its heads); the slots past it are null.
  RingMemory(const BlockGeometry& geometry, Count devices, Count rank, bool& inject_oom, int kv_slots = 3);
  [[nodiscard]] DeviceSlots device(Count index) const;
  void abandon() noexcept;

 private:
  BlockGeometry geometry_;
  Count devices_;
  int kv_slots_;
  DeviceMemory queries_, kv_, state_;
};

// Uploads ring device `device`'s queries, query intervals and own K/V block (converted to the
// case's precision, in local order) into `slots` (its slot 0), and waits for the copies.
void upload_shard(const RingProblem& problem, Count device, const DeviceSlots& slots, cudaStream_t stream, Count rank,
                  const Deadline& deadline);

// Downloads `slots.out` and writes it into `output` in ORIGINAL order.
void download_output(const RingProblem& problem, Count device, const DeviceSlots& slots, cudaStream_t stream,
                     Count rank, const Deadline& deadline, std::vector<double>& output);
// On `stream`, for ring device `rank` (named in failures): `slots`' online-softmax state before
// its first block; its output NaN (poisoned before every iteration); its state normalised into
// its output.
void reset_softmax_state(const DeviceSlots& slots, cudaStream_t stream, Count rank);
void poison_output(const DeviceSlots& slots, cudaStream_t stream, Count rank);
void normalise_output(const DeviceSlots& slots, cudaStream_t stream, Count rank);

// Every device's output in ORIGINAL order, NaN where none was written: `device(d)` returns device
// d's (slots, stream) with its GPU current.
template <typename Device>
[[nodiscard]] std::vector<double> download_outputs(const RingProblem& problem, double timeout_s, Device&& device) {
  const RingCase& c = problem.ring_case();
  std::vector<double> output(static_cast<std::size_t>(c.seq_len * c.heads * c.head_dim),
                             std::numeric_limits<double>::quiet_NaN());
  const Deadline deadline = Deadline::after(timeout_s);
  for (Count d = 0; d < c.devices; ++d) {
    const std::pair<const DeviceSlots*, cudaStream_t> at = device(d);
    download_output(problem, d, *at.first, at.second, d, deadline, output);
  }
  return output;
}

// The same in two steps, for a process that sends its device's rows to another: `slots.out` in
// the device's local order, then those rows written into `output` in ORIGINAL order.
[[nodiscard]] std::vector<float> download_local_output(const RingProblem& problem, Count device, const DeviceSlots& slots,
                                                       cudaStream_t stream, Count rank, const Deadline& deadline);
void scatter_output(const RingProblem& problem, Count device, const std::vector<float>& local, std::vector<double>& output);

// Throws model::InputError when the case cannot run on the GPU kernel (precision, head_dim,
// tile, heads beyond the grid's limit).
[[nodiscard]] KernelShape gpu_kernel_shape(const RingProblem& problem);

}  // namespace stripesim::validate::gpu
