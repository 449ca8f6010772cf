#pragma once
// The flash kernel: the validator's fast forward attention kernel, FlashAttention-2's design
// on Ampere/Hopper tensor cores (device code; included by flash_attention_{bf16,fp16}.cu).
//
// One thread block = one tile of TileQ local queries of one head; TileQ / 32 warps, warp w owns
// query rows [32w, 32w + 32) as two m16 tiles (every K and V fragment feeds both). Everything a
// row needs lives in that warp's registers:
//   - the scores S = Q K^T of 64 keys at a time as mma.sync m16n8k16 accumulators (a 128-key
//     tile runs as two sub-tiles; the Q fragments are re-read from shared memory with ldmatrix);
//   - the running maximum and sum (a row is spread over the 4 threads of a quad: reductions
//     are two shuffles);
//   - the probabilities, converted in place into A operands of P V (the accumulator layout of
//     two m16n8 tiles is the A layout of one m16k16 tile), and the fp32 output accumulator.
// K and V tiles come through shared memory with cp.async: V of tile i loads while Q K^T of
// tile i runs, K of tile i + 1 while its softmax and P V run. Rows are padded by 16 bytes so
// the 8 rows an ldmatrix reads fall on distinct bank groups. ldmatrix takes 32-bit shared
// addresses: one per lane and operand, computed once, plus compile-time offsets (generic
// pointers converted at every read held more registers, and a thread is at the 255 limit).
// The softmax rescales the accumulators only when a row's maximum has grown by more than 2^8
// since they were last rescaled (see kRescaleSlack), as later FlashAttention versions do.
//
// The kernel classifies nothing: the host's TileSchedule (tile_schedule.hpp) lists, per query
// tile, the key tiles to compute, full ones (no mask evaluated) before partial ones (mask per
// element). A key tile cut short by the end of the block also takes the masked path, which
// drops the missing keys. Blocks start in the schedule's order, heaviest query tile first,
// all heads of a tile before the next tile.
//
// Shared memory (T = 2-byte input type): Q TileQ x (D + 8) T, K and V TileK x (D + 8) T each,
// the query intervals 2 x TileQ int64. 128x128 at D = 128: 104 KiB.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline_primitives.h>

#include <cstdint>
#include <type_traits>

#include "flash_rows.cuh"
#include "kernel_common.cuh"
#include "scheduled_block.cuh"
#include "stripesim/validate/block_attention.hpp"
#include "stripesim/validate/tile_schedule.hpp"

namespace stripesim::validate::gpu {

template <int HeadDim, int TileQ, int TileK>
struct FlashLayout {
  // Each warp owns 32 query rows (two m16 tiles) so that every K and V fragment read from shared
  // memory feeds two mma instead of one (shared memory bandwidth bounds a 16-row warp).
  static constexpr int kRowTiles = 2;
  static constexpr int kWarps = TileQ / (16 * kRowTiles);
  static constexpr int kThreads = kWarps * 32;
  // Scores are held for 64 keys at a time (a 128-key tile runs as two sub-tiles): 2 x 64 x 32
  // rows of fp32 scores and 2 x 128 x 32 of output fit the 255 registers of a thread.
  static constexpr int kSubKeys = TileK < 64 ? TileK : 64;
  static constexpr int kStride = HeadDim + 8;  // T elements per shared row
  static constexpr std::size_t kQuery = 0;
  static constexpr std::size_t kKeys = kQuery + std::size_t{TileQ} * kStride * 2;
  static constexpr std::size_t kValues = kKeys + std::size_t{TileK} * kStride * 2;
  static constexpr std::size_t kLowest = kValues + std::size_t{TileK} * kStride * 2;
  static constexpr std::size_t kHighest = kLowest + std::size_t{TileQ} * 8;
  static constexpr std::size_t kBytes = kHighest + std::size_t{TileQ} * 8;
  static_assert(TileQ % (16 * kRowTiles) == 0 && TileK % kSubKeys == 0 && kSubKeys % 16 == 0 && HeadDim % 16 == 0,
                "m16n8k16 tiling");
  static_assert(kKeys % 16 == 0 && kValues % 16 == 0 && kLowest % 8 == 0, "cp.async and ldmatrix need 16-byte rows");
};

// Four 8x8 matrices of 16-bit elements from shared memory; lane l names row l % 8 of matrix l / 8
// by its shared-memory address.
__device__ inline void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
// The same, each matrix transposed (V is stored key-major, P V wants it dimension-major).
__device__ inline void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// d += a * b, one m16n8k16 tile with fp32 accumulation.
template <typename T>
__device__ inline void mma_16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

template <typename T, int HeadDim, int TileQ, int TileK>
__global__ void __launch_bounds__(FlashLayout<HeadDim, TileQ, TileK>::kThreads) flash_attention_kernel(const BlockAttentionArgs args) {
  using L = FlashLayout<HeadDim, TileQ, TileK>;
  constexpr int kM = L::kRowTiles;          // m16 row tiles per warp
  constexpr int kSub = L::kSubKeys;         // keys per sub-tile (scores held at once)
  constexpr int kSubTiles = TileK / kSub;
  constexpr int kKeyTiles8 = kSub / 8;      // n8 accumulator tiles of S per sub-tile
  constexpr int kDimTiles8 = HeadDim / 8;   // n8 accumulator tiles of O
  constexpr float kLog2e = 1.4426950408889634f;

  extern __shared__ __align__(128) unsigned char smem[];
  T* const q_s = reinterpret_cast<T*>(smem + L::kQuery);
  T* const k_s = reinterpret_cast<T*>(smem + L::kKeys);
  T* const v_s = reinterpret_cast<T*>(smem + L::kValues);
  std::int64_t* const low_s = reinterpret_cast<std::int64_t*>(smem + L::kLowest);
  std::int64_t* const high_s = reinterpret_cast<std::int64_t*>(smem + L::kHighest);

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int group = lane / 4;  // accumulator rows group and group + 8 of each m16 tile
  const int quad = lane % 4;   // accumulator columns 2 quad, 2 quad + 1 of every n8 tile
  using Block = ScheduledBlock<T, HeadDim, TileQ, TileK>;
  const Block block(args);
  if (block.idle()) return;
  const auto& [head, first, last, q0, q_count, q_stride, kv_stride, k_head, v_head] = block;
  const float scale_log2 = args.scale * kLog2e;
  const int warp_row0 = warp * 16 * kM;  // this warp's rows: [warp_row0, warp_row0 + 16 kM)
  // The row each lane names for ldmatrix: Q rows of this warp (A operand), K rows as the
  // col-major B operand, V rows read transposed.
  constexpr std::uint32_t kRowBytes = L::kStride * sizeof(T);
  const auto smem_address = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  const std::uint32_t q_lane = smem_address + L::kQuery + (warp_row0 + lane % 16) * kRowBytes + (lane / 16) * 16;
  const std::uint32_t k_lane = smem_address + L::kKeys + ((lane / 16) * 8 + lane % 8) * kRowBytes + ((lane / 8) % 2) * 16;
  const std::uint32_t v_lane = smem_address + L::kValues + (lane % 16) * kRowBytes + (lane / 16) * 16;

  // Q, then the first K tile, in flight together; the query intervals beside them.
  copy_rows_async<T, HeadDim, L::kThreads>(q_s, L::kStride, static_cast<const T*>(args.q) + q0 * q_stride + head * HeadDim,
                                           q_stride, q_count, TileQ);
  __pipeline_commit();
  auto load_keys = [&](int e) {  // K of schedule entry e into shared memory
    const std::int64_t k0 = Block::key_start(args.tile_entries[e]);
    copy_rows_async<T, HeadDim, L::kThreads>(k_s, L::kStride, k_head + k0 * kv_stride, kv_stride, Block::key_count(args, k0), TileK);
  };
  load_keys(first);
  __pipeline_commit();
  for (int i = static_cast<int>(threadIdx.x); i < TileQ; i += L::kThreads) {
    low_s[i] = i < q_count ? args.query_lowest[q0 + i] : 0;
    high_s[i] = i < q_count ? args.query_highest[q0 + i] : -1;  // a missing row allows nothing
  }

  // This thread's rows, their state from global memory.
  FlashRows<kM, kDimTiles8> rows;
  rows.warp_row0 = warp_row0;
  rows.group = group;
  rows.quad = quad;
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
    __syncthreads();           // ... for every thread; every warp is done with the last tile's V
    copy_rows_async<T, HeadDim, L::kThreads>(v_s, L::kStride, v_head + k0 * kv_stride, kv_stride, k_count, TileK);
    __pipeline_commit();

#pragma unroll
    for (int sub = 0; sub < kSubTiles; ++sub) {
      const int key0 = sub * kSub;  // first key of the sub-tile within the tile
      // S = Q K^T: K is stored key-major, the col-major B operand as it stands; each K
      // fragment feeds all kM row tiles.
      float s[kM][kKeyTiles8][4];
#pragma unroll
      for (int m = 0; m < kM; ++m) {
#pragma unroll
        for (int j = 0; j < kKeyTiles8; ++j) s[m][j][0] = s[m][j][1] = s[m][j][2] = s[m][j][3] = 0.f;
      }
#pragma unroll
      for (int kk = 0; kk < HeadDim / 16; ++kk) {
        std::uint32_t a[kM][4];
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          ldmatrix_x4(a[m], q_lane + 16 * m * kRowBytes + kk * 32);
        }
#pragma unroll
        for (int jp = 0; jp < kSub / 16; ++jp) {
          std::uint32_t b[4];
          ldmatrix_x4(b, k_lane + (key0 + jp * 16) * kRowBytes + kk * 32);
#pragma unroll
          for (int m = 0; m < kM; ++m) {
            mma_16816<T>(s[m][2 * jp], a[m], b[0], b[1]);
            mma_16816<T>(s[m][2 * jp + 1], a[m], b[2], b[3]);
          }
        }
      }
      if (sub == kSubTiles - 1) {
        __syncthreads();  // every warp has read all of K: the next tile's K may land
        if (e + 1 < last) load_keys(e + 1);
        __pipeline_commit();  // an empty group when there is no next tile keeps the wait counts right
      }

      if (masked) rows.mask(s, args, k0, k_count, key0, low_s, high_s);
      rows.softmax(s, scale_log2);

      if (sub == 0) {
        // V of this tile is in (with one sub-tile, the next K may still be on its way).
        if constexpr (kSubTiles == 1) {
          __pipeline_wait_prior(1);
        } else {
          __pipeline_wait_prior(0);
        }
        __syncthreads();
      }
      // O += P V: the accumulators of keys [16 kk, 16 kk + 16) are the A operand as they stand;
      // V is key-major, so it is read transposed; each V fragment feeds all kM row tiles.
#pragma unroll
      for (int kk = 0; kk < kSub / 16; ++kk) {
        std::uint32_t p_frag[kM][4];
#pragma unroll
        for (int m = 0; m < kM; ++m) probabilities_as_a<T>(p_frag[m], s, m, kk);
#pragma unroll
        for (int jp = 0; jp < HeadDim / 16; ++jp) {
          std::uint32_t b[4];
          ldmatrix_x4_trans(b, v_lane + (key0 + kk * 16) * kRowBytes + jp * 32);
#pragma unroll
          for (int m = 0; m < kM; ++m) {
            mma_16816<T>(rows.out[m][2 * jp], p_frag[m], b[0], b[1]);
            mma_16816<T>(rows.out[m][2 * jp + 1], p_frag[m], b[2], b[3]);
          }
        }
      }
    }
  }

  block.count_tiles(args, partial_seen);
  rows.store(args, q0, head, q_count);
}

// Launches (or, with args == nullptr, prepares) the compiled variant of `shape`.
template <typename T>
cudaError_t dispatch_flash_attention(const KernelShape& shape, const BlockAttentionArgs* args, cudaStream_t stream) {
  return with_compiled_variant(
      shape,
      [&]<int HeadDim, int TileQ, int TileK>() {
        using L = FlashLayout<HeadDim, TileQ, TileK>;
        return prepare_or_launch_scheduled<TileQ>(&flash_attention_kernel<T, HeadDim, TileQ, TileK>, args, L::kThreads, L::kBytes, stream);
      },
      cudaErrorInvalidValue);
}

}  // namespace stripesim::validate::gpu
