#pragma once
// Device helpers shared by the validator's two attention kernels (block_attention.cuh, the simple
// wmma kernel, and flash_attention.cuh) and the element-wise kernels of block_attention.cu.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline_primitives.h>

#include <cstdint>

#include "stripesim/validate/block_attention.hpp"

namespace stripesim::validate::gpu {

// Own 64-bit min/max: the CUDA overload set of min/max differs between long and long long.
__device__ inline std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
__device__ inline std::int64_t max64(std::int64_t a, std::int64_t b) { return a < b ? b : a; }
template <typename T>
__device__ inline T from_float(float x);
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ inline __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

// Copies `rows` rows of HeadDim elements (row r at src + r * src_stride) into shared memory at
// dst + r * dst_stride with cp.async, zero-filling rows [rows, tile_rows): a short last tile
// must read as zeros, not as stale data (0 * NaN would poison the output).
template <typename T, int HeadDim, int Threads>
__device__ inline void copy_rows_async(T* dst, int dst_stride, const T* src, std::int64_t src_stride, int rows,
                                       int tile_rows) {
  constexpr int kChunks = HeadDim * 2 / 16;  // 16-byte pieces per row
  for (int idx = threadIdx.x; idx < tile_rows * kChunks; idx += Threads) {
    const int r = idx / kChunks;
    const int piece = idx % kChunks;
    const bool inside = r < rows;
    // A zero-filled piece copies nothing, but still names a valid, aligned source address.
    const T* from = src + (inside ? r * src_stride : 0) + piece * 8;
    __pipeline_memcpy_async(dst + r * dst_stride + piece * 8, from, 16, inside ? 0 : 16);
  }
}

// One compiled variant of either kernel: with args == nullptr, raises its dynamic shared memory
// limit to `shared_bytes` (prepare); else launches it on `grid` and returns the launch's error.
template <typename Kernel>
cudaError_t prepare_or_launch(Kernel* kernel, const BlockAttentionArgs* args, dim3 grid, int threads,
                              std::size_t shared_bytes, cudaStream_t stream) {
  if (args == nullptr) {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes));
  }
  // Drop a stale non-sticky error of an earlier call, so that the status returned is this
  // launch's (a sticky error comes back from the launch itself).
  static_cast<void>(cudaGetLastError());
  kernel<<<grid, threads, shared_bytes, stream>>>(*args);
  return cudaGetLastError();
}

// A kernel that runs the host's TileSchedule (the flash and wgmma kernels): one block per (query
// tile of TileQ rows, head) on one grid axis. Launches it, or with args == nullptr prepares it.
template <int TileQ, typename Kernel>
cudaError_t prepare_or_launch_scheduled(Kernel* kernel, const BlockAttentionArgs* args, int threads,
                                        std::size_t shared_bytes, cudaStream_t stream) {
  std::int64_t blocks = 0;
  if (args != nullptr) {
    if (args->tile_order == nullptr || args->tile_offsets == nullptr || args->tile_entries == nullptr) {
      return cudaErrorInvalidValue;  // it runs the host's schedule only
    }
    blocks = (args->queries + TileQ - 1) / TileQ * args->heads;
    if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
  }
  return prepare_or_launch(kernel, args, dim3(static_cast<unsigned>(blocks)), threads, shared_bytes, stream);
}

// The compiled variants of both kernels: head_dim {64, 128} x tile {64, 128}^2. Calls
// `variant.template operator()<HeadDim, TileQ, TileK>()` for the one `shape` names, or returns
// `otherwise` for a shape outside them (check_kernel_shape rejects those first).
template <typename Variant, typename Result>
Result with_compiled_variant(const KernelShape& shape, Variant&& variant, Result otherwise) {
  const auto tq = shape.tile.query;
  const auto tk = shape.tile.key;
  auto tiles = [&]<int HeadDim>() -> Result {
    if (tq == 64 && tk == 64) return variant.template operator()<HeadDim, 64, 64>();
    if (tq == 64 && tk == 128) return variant.template operator()<HeadDim, 64, 128>();
    if (tq == 128 && tk == 64) return variant.template operator()<HeadDim, 128, 64>();
    if (tq == 128 && tk == 128) return variant.template operator()<HeadDim, 128, 128>();
    return otherwise;
  };
  if (shape.head_dim == 64) return tiles.template operator()<64>();
  if (shape.head_dim == 128) return tiles.template operator()<128>();
  return otherwise;
}

}  // namespace stripesim::validate::gpu
