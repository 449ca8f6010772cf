#pragma once
// Host interface of the ring's backward kernel (validate/cuda/block_attention_backward.cu). Plain
// C++ over the CUDA runtime API. One launch computes the backward of one (query block, K/V block)
// pair of the ring: with P = softmax of the forward's scores (recomputed from its log-sum-exp),
//   dV += P^T dO,  dS = P * (dO V^T - delta) * scale,  dK += dS^T Q,  dQ += dS K,
// dQ accumulated in the device's fp32 buffer, dK and dV in the fp32 accumulators that travel with
// the K/V block around the ring. A thread block owns 32 keys of one key tile and one query head:
// it walks the query tiles that see its key tile (TileSchedule by_key_tile: exactly the tiles
// the work model counts, a partial tile masked per element, a full one not), keeps its keys' dK
// and dV and adds them to the accumulators once; dQ is added with atomics. Two implementations,
// chosen by the shape's `backward` (--gpu-backward-kernel): `scalar`, 32 keys a block in fp32
// scalar arithmetic, written to be right first (the default until the other one has run on a
// GPU); `wmma`, 64 keys a block on the tensor cores, FlashAttention-2's backward loop
// (wmma_backward.cu).
#include <cstdint>

#include <cuda_runtime_api.h>

#include "stripesim/validate/block_attention.hpp"

namespace stripesim::validate::gpu {

struct BlockBackwardArgs {
  // Inputs in the shape's precision, in local (layout) order, as the forward's.
  const void* q = nullptr;     // [queries][heads][head_dim]
  const void* dout = nullptr;  // [queries][heads][head_dim] the upstream gradient dO
  const void* k = nullptr;     // [keys][kv_heads][head_dim]
  const void* v = nullptr;     // [keys][kv_heads][head_dim]
  const std::int64_t* query_lowest = nullptr;   // [queries]
  const std::int64_t* query_highest = nullptr;  // [queries]
  const std::int64_t* key_positions = nullptr;  // [keys]
  // From the forward, per [query][head]: log2 of the softmax denominator in the forward's log2
  // units (row_max + log2(row_sum)), and delta = sum_i dO * O over the head's row.
  const float* lse2 = nullptr;
  const float* delta = nullptr;
  float* dq = nullptr;  // [queries][heads][head_dim], added to
  float* dk = nullptr;  // [keys][kv_heads][head_dim], added to (every query head of the group)
  float* dv = nullptr;  // [keys][kv_heads][head_dim], added to
  std::int64_t queries = 0;
  std::int64_t keys = 0;
  int heads = 0;
  int kv_heads = 0;
  float scale = 0;
  // The key tiles' schedule (by_key_tile of the forward's TileSchedule, on the device): rows are
  // key tiles, entries query tiles | kPartialTile.
  const std::int32_t* tile_order = nullptr;    // [key tiles]
  const std::int32_t* tile_offsets = nullptr;  // [key tiles + 1]
  const std::int32_t* tile_entries = nullptr;
};


// Dynamic shared memory of one thread block, bytes.
[[nodiscard]] std::size_t backward_shared_bytes(const KernelShape& shape);
// Raises the backward kernel's dynamic shared memory limit on the CURRENT device.
[[nodiscard]] cudaError_t prepare_block_attention_backward(const KernelShape& shape);
// One (query block, K/V block) pair's backward on `stream`; returns the launch's error.
[[nodiscard]] cudaError_t launch_block_attention_backward(const KernelShape& shape, const BlockBackwardArgs& args,
                                                          cudaStream_t stream);

// Before the backward ring, per row (queries * heads of them): lse2 = row_max + log2(row_sum)
// (+inf for a row that saw no key, so its P is 0) and delta = sum_i dout * out, with `out` the
// normalised forward output (fp32) and `dout` in `precision`.
[[nodiscard]] cudaError_t launch_backward_prepare(const float* out, const void* dout, Precision precision,
                                                  const float* row_max, const float* row_sum, float* lse2, float* delta,
                                                  std::int64_t rows, int head_dim, cudaStream_t stream);

}  // namespace stripesim::validate::gpu
