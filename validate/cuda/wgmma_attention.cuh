#pragma once
// The wgmma kernel: the flash kernel's algorithm (flash_attention.cuh) on Hopper's warpgroup
// tensor-core instructions (wgmma, sm_90a only; wgmma_ops.cuh). The flash kernel's mma.sync
// products are issued by each warp, 16 x 8 x 16 at a time, with every operand fragment loaded
// into registers first; at 255 registers a thread only 2 warps share a scheduler and the issue
// slots they leave bound the kernel near FlashAttention-2's speed. Here a warpgroup issues
// 64 x TileK x 16 and 64 x HeadDim x 16 products that read Q, K and V straight from shared
// memory and run asynchronously, and a 64-row block needs few enough registers and shared memory
// for two or three blocks an SM, whose softmax and products interleave. On an H200: 332-432
// TFLOP/s forward at n = 8k-32k (0.59-0.72x PyTorch SDPA's cuDNN kernel, 1.15-1.36x its
// FlashAttention-2 backend; the flash kernel 298-341), reports/validation/kernel-nvidia-h200.md.
//
// One thread block = TileQ / 64 warpgroups, one tile of TileQ local queries of one head; warpgroup
// g owns query rows [64 g, 64 g + 64), warp w of it rows [16 w, 16 w + 16) of those. Per key tile:
//   S = Q K^T     HeadDim / 16 wgmma (A = Q and B = K from shared memory), into 64 x TileK fp32
//                 accumulators in the m16n8 layout of the flash kernel;
//   mask, online softmax, probabilities packed into A fragments: flash_rows.cuh, as the flash kernel;
//   O += P V      TileK / 16 wgmma (A = P from registers, B = V from shared memory, transposed).
// K and V come through shared memory with cp.async as in the flash kernel (V of tile i during
// S of tile i, K of tile i + 1 during its softmax and P V), 128-byte swizzled: a tile's rows in
// atoms of 64 columns, the 16-byte chunk c of row r at chunk c ^ (r % 8), K and V alike (K read
// K-major, V MN-major). The host's TileSchedule gives each query tile its key tiles, full ones
// before partial ones; blocks start heaviest query tile first.
//
// Shared memory (T = 2-byte input type): Q TileQ x D, K and V TileK x D each, the query intervals
// 2 x TileQ int64, 1 KiB to align the atoms. 64x128 at D = 128: 82 KiB (two blocks an SM); 64x64:
// 50 KiB (three).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline_primitives.h>

#include <cstdint>

#include "flash_rows.cuh"
#include "kernel_common.cuh"
#include "scheduled_block.cuh"
#include "stripesim/validate/block_attention.hpp"
#include "stripesim/validate/tile_schedule.hpp"
#include "wgmma_ops.cuh"

namespace stripesim::validate::gpu {

// A 128-byte swizzle atom's row: 64 columns of 16 bits.
constexpr int kAtomColumns = 64;

// Element (row, col) of a 128-byte-swizzled tile of TileRows rows (wgmma_ops.cuh), in elements.
template <int TileRows>
__device__ __forceinline__ int swizzled_offset(int row, int col) {
  const int atom = col / kAtomColumns;
  const int chunk = (col % kAtomColumns) / 8;
  return atom * TileRows * kAtomColumns + row * kAtomColumns + ((chunk ^ (row % 8)) * 8) + col % 8;
}

template <int HeadDim, int TileQ, int TileK>
struct WgmmaLayout {
  static constexpr int kWarpgroups = TileQ / 64;
  static constexpr int kThreads = kWarpgroups * 128;
  static constexpr std::size_t kQuery = 0;
  static constexpr std::size_t kKeys = kQuery + std::size_t{TileQ} * HeadDim * 2;
  static constexpr std::size_t kValues = kKeys + std::size_t{TileK} * HeadDim * 2;
  static constexpr std::size_t kLowest = kValues + std::size_t{TileK} * HeadDim * 2;
  static constexpr std::size_t kHighest = kLowest + std::size_t{TileQ} * 8;
  // Plus the slack to start the tiles on a 1024-byte boundary, where the swizzle atoms must begin.
  static constexpr std::size_t kBytes = kHighest + std::size_t{TileQ} * 8 + 1024;
  static_assert(TileQ % 64 == 0 && (TileK == 64 || TileK == 128) && (HeadDim == 64 || HeadDim == 128),
                "wgmma m64 with N = TileK and N = HeadDim of 64 or 128");
  static_assert(kKeys % 1024 == 0 && kValues % 1024 == 0, "swizzle atoms start on 1024-byte boundaries");
};

// Copies `rows` rows of HeadDim elements (row r at src + r * src_stride) into a 128-byte-swizzled
// tile of TileRows rows (wgmma_ops.cuh) with cp.async, zero-filling rows [rows, TileRows). A warp
// reads whole rows and writes whole 128-byte atom rows (no bank conflict). A thread copies the
// same 16-byte piece of every kRowsPerPass-th row: a multiple of 8 rows apart, so its swizzled
// place in the row is the same each time and its addresses advance by constants.
template <typename T, int HeadDim, int TileRows, int Threads>
__device__ inline void copy_rows_swizzled_async(T* dst, const T* src, std::int64_t src_stride, int rows) {
  constexpr int kChunks = HeadDim / 8;  // 16-byte pieces per row
  constexpr int kRowsPerPass = Threads / kChunks;
  static_assert(Threads % kChunks == 0 && kRowsPerPass % 8 == 0 && TileRows % kRowsPerPass == 0,
                "every pass covers whole rows, a multiple of the swizzle's 8");
  const int piece = static_cast<int>(threadIdx.x) % kChunks;
  const int r0 = static_cast<int>(threadIdx.x) / kChunks;
  T* to = dst + swizzled_offset<TileRows>(r0, piece * 8);
  const T* from = src + r0 * src_stride + piece * 8;
#pragma unroll
  for (int pass = 0; pass < TileRows / kRowsPerPass; ++pass) {
    const bool inside = r0 + pass * kRowsPerPass < rows;
    // A zero-filled piece copies nothing, but still names a valid, aligned source address.
    __pipeline_memcpy_async(to, inside ? from : src, 16, inside ? 0 : 16);
    to += kRowsPerPass * kAtomColumns;
    from += kRowsPerPass * src_stride;
  }
}

template <typename T, int HeadDim, int TileQ, int TileK>
__global__ void __launch_bounds__(WgmmaLayout<HeadDim, TileQ, TileK>::kThreads)
    wgmma_attention_kernel(const BlockAttentionArgs args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = WgmmaLayout<HeadDim, TileQ, TileK>;
  constexpr int kKeyTiles8 = TileK / 8;     // n8 accumulator tiles of S
  constexpr int kDimTiles8 = HeadDim / 8;   // n8 accumulator tiles of O
  constexpr float kLog2e = 1.4426950408889634f;

  extern __shared__ __align__(128) unsigned char smem_unaligned[];
  const auto unaligned_address = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_unaligned));
  unsigned char* const smem = smem_unaligned + ((1024 - unaligned_address % 1024) % 1024);
  T* const q_s = reinterpret_cast<T*>(smem + L::kQuery);
  T* const k_s = reinterpret_cast<T*>(smem + L::kKeys);
  T* const v_s = reinterpret_cast<T*>(smem + L::kValues);
  std::int64_t* const low_s = reinterpret_cast<std::int64_t*>(smem + L::kLowest);
  std::int64_t* const high_s = reinterpret_cast<std::int64_t*>(smem + L::kHighest);

  const int warp = static_cast<int>(threadIdx.x) / 32;  // warp 4 g + w: warp w of warpgroup g
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warpgroup = warp / 4;
  using Block = ScheduledBlock<T, HeadDim, TileQ, TileK>;
  const Block block(args);
  if (block.idle()) return;
  const auto& [head, first, last, q0, q_count, q_stride, kv_stride, k_head, v_head] = block;
  const float scale_log2 = args.scale * kLog2e;

  // Descriptors (wgmma_ops.cuh): this warpgroup's 64 rows of Q and all of K, K-major, 16
  // dimensions a step: 32 bytes on within an atom, the next atom every 64; V MN-major, 16 keys
  // a step (two 8-row groups, 2 KiB), its atoms of 64 dimensions TileK x 128 B apart.
  const auto smem_address = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  // Built once; a step adds its byte offset / 16 to the address field (no carry: shared
  // addresses are below 2^18).
  const std::uint64_t q_descriptor = wgmma_swizzled_descriptor(smem_address + L::kQuery + warpgroup * 64 * 128, 16, 1024);
  const std::uint64_t k_descriptor = wgmma_swizzled_descriptor(smem_address + L::kKeys, 16, 1024);
  const std::uint64_t v_descriptor = wgmma_swizzled_descriptor(smem_address + L::kValues, TileK * 128, 1024);
  constexpr auto step = [](int kk, int tile_rows) { return std::uint64_t((kk / 4) * tile_rows * 128 + (kk % 4) * 32) >> 4; };

  copy_rows_swizzled_async<T, HeadDim, TileQ, L::kThreads>(
      q_s, static_cast<const T*>(args.q) + q0 * q_stride + head * HeadDim, q_stride, q_count);
  __pipeline_commit();
  auto load_keys = [&](int e) {  // K of schedule entry e into shared memory
    const std::int64_t k0 = Block::key_start(args.tile_entries[e]);
    copy_rows_swizzled_async<T, HeadDim, TileK, L::kThreads>(k_s, k_head + k0 * kv_stride, kv_stride, Block::key_count(args, k0));
  };
  load_keys(first);
  __pipeline_commit();
  for (int i = static_cast<int>(threadIdx.x); i < TileQ; i += L::kThreads) {
    low_s[i] = i < q_count ? args.query_lowest[q0 + i] : 0;
    high_s[i] = i < q_count ? args.query_highest[q0 + i] : -1;  // a missing row allows nothing
  }

  // This thread's rows (one m16 tile of the warp), their state from global memory.
  FlashRows<1, kDimTiles8> rows;
  rows.warp_row0 = warp * 16;
  rows.group = lane / 4;
  rows.quad = lane % 4;
  rows.load(args, q0, head, q_count);

  unsigned partial_seen = 0;
  for (int e = first; e < last; ++e) {
    const int entry = args.tile_entries[e];
    const std::int64_t k0 = Block::key_start(entry);
    const int k_count = Block::key_count(args, k0);
    const bool partial = Block::partial(entry);
    const bool masked = partial || k_count < TileK;
    partial_seen += partial ? 1 : 0;

    __pipeline_wait_prior(0);  // K of this tile (and, the first time, Q) is in
    fence_shared_for_wgmma();
    __syncthreads();  // ... for every thread; every warpgroup is done with the last tile's V
    copy_rows_swizzled_async<T, HeadDim, TileK, L::kThreads>(v_s, v_head + k0 * kv_stride, kv_stride, k_count);
    __pipeline_commit();

    // S = Q K^T, the first product overwriting the accumulators.
    float s[1][kKeyTiles8][4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HeadDim / 16; ++kk) {
      wgmma_ss<T, TileK>(s[0], q_descriptor + step(kk, TileQ), k_descriptor + step(kk, TileK), kk > 0 ? 1u : 0u);
    }
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_hold(s[0]);
    __syncthreads();  // every warpgroup has read all of K: the next tile's K may land
    if (e + 1 < last) load_keys(e + 1);
    __pipeline_commit();  // an empty group when there is no next tile keeps the wait counts right

    if (masked) rows.mask(s, args, k0, k_count, 0, low_s, high_s);
    rows.softmax(s, scale_log2);

    // O += P V, once V is in (the next K may still be on its way).
    std::uint32_t p[TileK / 16][4];
#pragma unroll
    for (int kk = 0; kk < TileK / 16; ++kk) probabilities_as_a<T>(p[kk], s, 0, kk);
    __pipeline_wait_prior(1);
    fence_shared_for_wgmma();
    __syncthreads();
    wgmma_hold(rows.out[0]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < TileK / 16; ++kk) {
      wgmma_rs_transposed_b<T, HeadDim>(rows.out[0], p[kk], v_descriptor + ((kk * 16 * 128) >> 4));
    }
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_hold(rows.out[0]);
  }

  block.count_tiles(args, partial_seen);
  rows.store(args, q0, head, q_count);
#elif defined(__CUDA_ARCH__)
  __trap();  // built for a GPU without wgmma: fail loudly rather than leave the state untouched
#endif
}

// Launches (or, with args == nullptr, prepares) the compiled variant of `shape`.
template <typename T>
cudaError_t dispatch_wgmma_attention(const KernelShape& shape, const BlockAttentionArgs* args, cudaStream_t stream) {
  return with_compiled_variant(
      shape,
      [&]<int HeadDim, int TileQ, int TileK>() {
        using L = WgmmaLayout<HeadDim, TileQ, TileK>;
        return prepare_or_launch_scheduled<TileQ>(&wgmma_attention_kernel<T, HeadDim, TileQ, TileK>, args, L::kThreads, L::kBytes, stream);
      },
      cudaErrorInvalidValue);
}

}  // namespace stripesim::validate::gpu
