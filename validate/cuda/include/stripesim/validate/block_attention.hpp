#pragma once
// Host interface of the blockwise attention kernel (validate/cuda/block_attention*.cu). Plain
// C++ over the CUDA runtime API, so the backends and the kernel benchmark include it without
// nvcc. One launch computes one (query block, K/V block) pair of the ring and folds it into an
// online-softmax state kept in global memory across rounds: an fp32 output accumulator and, per
// query row and head, the running maximum and running sum. A final normalise divides by the sum.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "stripesim/validate/ring_case.hpp"

namespace stripesim::validate::gpu {

// The compiled variants of each: precision bf16 | fp16, head_dim 64 | 128, tile 64x64 | 64x128 |
// 128x64 | 128x128. Tiles need not divide the block: the last tiles are smaller.
struct KernelShape {
  Precision precision = Precision::bf16;
  Count head_dim = 128;
  model::TileShape tile{128, 128};
  GpuKernel kernel = GpuKernel::flash;
  GpuBackwardKernel backward = GpuBackwardKernel::scalar;  // --pass fwdbwd only
};

// Throws model::InputError (one line naming the flag and the supported values) for a shape
// with no compiled variant.
void check_kernel_shape(const KernelShape& shape);

// Dynamic shared memory one thread block of this shape uses, bytes.
[[nodiscard]] std::size_t kernel_shared_bytes(const KernelShape& shape);

// Raises the kernel's dynamic shared memory limit on the CURRENT device (a per-device
// attribute: call it once on every device before the first launch there).
[[nodiscard]] cudaError_t prepare_block_attention(const KernelShape& shape);

struct BlockAttentionArgs {
  // Inputs in the shape's precision, in local (layout) order.
  const void* q = nullptr;  // [queries][heads][head_dim]
  const void* k = nullptr;  // [keys][kv_heads][head_dim]
  const void* v = nullptr;  // [keys][kv_heads][head_dim]
  // Query local index l may see the key at original position p iff lowest[l] <= p <= highest[l].
  const std::int64_t* query_lowest = nullptr;   // [queries]
  const std::int64_t* query_highest = nullptr;  // [queries]
  const std::int64_t* key_positions = nullptr;  // [keys] original position of each key
  // Online softmax state, [queries][heads][head_dim] and [queries][heads]; row_max is kept in
  // log2 units (scores times scale * log2(e)). It is the reference out_acc and row_sum are
  // relative to: the wmma kernel keeps it at the row's maximum, the flash kernel lets the
  // maximum pass it by up to 8 before rescaling. Either way row_max + log2(row_sum) is the
  // row's log-sum-exp and out_acc / row_sum its output.
  float* out_acc = nullptr;
  float* row_max = nullptr;
  float* row_sum = nullptr;
  std::int64_t queries = 0;
  std::int64_t keys = 0;
  int heads = 0;
  int kv_heads = 0;  // head h reads K/V head h / (heads / kv_heads)
  float scale = 0;   // softmax scale, 1 / sqrt(head_dim)
  // The key tiles each query tile computes (TileSchedule of tile_schedule.hpp, on the device):
  // required by the flash kernel, ignored by wmma (which classifies tiles itself).
  const std::int32_t* tile_order = nullptr;    // [query tiles]
  const std::int32_t* tile_offsets = nullptr;  // [query tiles + 1]
  const std::int32_t* tile_entries = nullptr;  // key tile | kPartialTile
  // Optional [2]: thread blocks of head 0 add the key tiles they computed (active) and, of
  // those, the ones they masked per element (partial). Null: nothing is counted.
  unsigned long long* tile_counts = nullptr;
};

// One (query block, K/V block) pair on `stream`; returns the launch's error.
[[nodiscard]] cudaError_t launch_block_attention(const KernelShape& shape, const BlockAttentionArgs& args,
                                                 cudaStream_t stream);

// Online softmax state before the first block: accumulator 0, maximum -inf, sum 0.
[[nodiscard]] cudaError_t launch_init_state(float* out_acc, float* row_max, float* row_sum, std::int64_t rows,
                                            int head_dim, cudaStream_t stream);
// out = out_acc / row_sum per row (rows = queries * heads); a row that saw no key gets 0, as
// FlashAttention writes for a fully masked row.
[[nodiscard]] cudaError_t launch_normalise(const float* out_acc, const float* row_sum, float* out,
                                           std::int64_t rows, int head_dim, cudaStream_t stream);
// Fills `count` floats with NaN (the output is poisoned before every iteration).
[[nodiscard]] cudaError_t launch_fill_nan(float* data, std::int64_t count, cudaStream_t stream);
// Uniform values in [-1, 1) from `seed` in the given precision (the benchmark's inputs).
[[nodiscard]] cudaError_t launch_fill_uniform(void* data, std::int64_t count, Precision precision,
                                              std::uint64_t seed, cudaStream_t stream);

// Host conversion of doubles to bf16 or fp16 (round to nearest even), `count` elements of
// 2 bytes written to `out`.
void convert_to_precision(const double* values, std::size_t count, Precision precision, void* out);

}  // namespace stripesim::validate::gpu
