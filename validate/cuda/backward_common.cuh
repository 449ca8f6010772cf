#pragma once
// What the two backward kernels (block_attention_backward.cu, wmma_backward.cu) share: the compiled
// variants (precision x head_dim; the tile is a run-time argument), the grid (a thread block per
// `block_keys` keys of every key tile, a grid row per query head), and on the device the keys a
// block owns, the query tiles it walks and each query step's per-row inputs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernel_common.cuh"
#include "stripesim/validate/block_attention_backward.hpp"
#include "stripesim/validate/tile_schedule.hpp"

namespace stripesim::validate::gpu {

// Calls `variant.template operator()<T, HeadDim>()` for the variant `shape` names.
template <typename Variant>
cudaError_t with_backward_variant(const KernelShape& shape, Variant&& variant) {
  auto head_dims = [&]<typename T>() -> cudaError_t {
    if (shape.head_dim == 64) return variant.template operator()<T, 64>();
    if (shape.head_dim == 128) return variant.template operator()<T, 128>();
    return cudaErrorInvalidValue;
  };
  switch (shape.precision) {
    case Precision::bf16: return head_dims.template operator()<__nv_bfloat16>();
    case Precision::fp16: return head_dims.template operator()<__half>();
    default: return cudaErrorInvalidValue;
  }
}

// With args == nullptr raises `kernel`'s dynamic shared memory limit to `bytes` (prepare); else
// launches it over the key tiles and returns the launch's error.
template <typename Kernel>
cudaError_t prepare_or_launch_backward(Kernel* kernel, std::size_t bytes, int threads, int block_keys, const KernelShape& shape,
                                       const BlockBackwardArgs* args, cudaStream_t stream) {
  if (args == nullptr) {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  }
  const auto tile_k = static_cast<int>(shape.tile.key);
  const std::int64_t key_tiles = (args->keys + tile_k - 1) / tile_k;
  const dim3 grid(static_cast<unsigned>(key_tiles * (tile_k / block_keys)), static_cast<unsigned>(args->heads));
  static_cast<void>(cudaGetLastError());  // drop a stale non-sticky error (block_attention's prepare_or_launch)
  kernel<<<grid, threads, bytes, stream>>>(*args, static_cast<int>(shape.tile.query), tile_k);
  return cudaGetLastError();
}

// The keys a thread block owns (block x % (tile_k / BlockKeys) of its key tile) and the schedule
// entries of that key tile: the query tiles that see it.
struct BackwardBlock {
  std::int64_t key0 = 0;
  int keys = 0;             // fewer in a short last tile
  int first = 0, last = 0;  // tile_entries[first, last)
  bool idle = true;         // past a short last tile, or a key tile no query sees
};

template <int BlockKeys>
__device__ inline BackwardBlock backward_block(const BlockBackwardArgs& a, int tile_k) {
  BackwardBlock b;
  const int per_tile = tile_k / BlockKeys;
  const int key_tile = a.tile_order[blockIdx.x / per_tile];
  b.key0 = static_cast<std::int64_t>(key_tile) * tile_k + (blockIdx.x % per_tile) * BlockKeys;
  b.first = a.tile_offsets[key_tile];
  b.last = a.tile_offsets[key_tile + 1];
  b.idle = b.key0 >= a.keys || b.first == b.last;
  b.keys = b.idle ? 0 : static_cast<int>(min64(BlockKeys, a.keys - b.key0));
  return b;
}

// Schedule entry e: its query tile's local rows [begin, end) and whether it is partial (the mask
// evaluated per element) or full.
struct QueryTile {
  std::int64_t begin = 0, end = 0;
  bool partial = false;
};

__device__ inline QueryTile query_tile(const BlockBackwardArgs& a, int e, int tile_q) {
  const int entry = a.tile_entries[e];
  QueryTile t;
  t.partial = entry_is_partial(entry);
  t.begin = static_cast<std::int64_t>(entry_tile(entry)) * tile_q;
  t.end = min64(a.queries, t.begin + tile_q);
  return t;
}

// A query step's per-row inputs of head `head`, rows [q0, q0 + rows), into shared memory (thread
// i < Count loads row i): lse2, delta and the query's allowed key interval; rows past `rows`
// allow no key.
template <int Count>
__device__ inline void load_query_rows(const BlockBackwardArgs& a, std::int64_t q0, int rows, int head, float* lse2, float* delta,
                                       std::int64_t* low, std::int64_t* high) {
  const int i = static_cast<int>(threadIdx.x);
  if (i >= Count) return;
  const bool inside = i < rows;
  const std::int64_t row = (q0 + i) * a.heads + head;
  lse2[i] = inside ? a.lse2[row] : 0.f;
  delta[i] = inside ? a.delta[row] : 0.f;
  low[i] = inside ? a.query_lowest[q0 + i] : 0;
  high[i] = inside ? a.query_highest[q0 + i] : -1;
}

}  // namespace stripesim::validate::gpu
