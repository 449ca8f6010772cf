#pragma once
// The blockwise attention kernel (device code; included by block_attention_bf16.cu and
// block_attention_fp16.cu, which instantiate it for one precision each so that nvcc compiles
// the two halves in parallel).
//
// One thread block = one tile of TileQ local queries of one head; it walks over the K/V
// block's key tiles of TileK local keys. Warp w owns query rows [16w, 16w + 16) of the tile for
// the whole launch: its Q fragments stay in registers, and its rows of the scores, the
// probabilities and the fp32 output accumulator are touched by no other warp, so the online
// softmax needs only warp-level synchronisation; block barriers guard the shared K/V tile.
//
// Every key tile is classified EXACTLY from positions, like the work model counts tiles:
//   inactive - no (query, key) pair of the tile is allowed: skipped, nothing loaded;
//   full     - every pair is allowed: no mask is evaluated (only keys past a short last tile
//              are cut off);
//   partial  - some pairs are allowed, some not: the mask is applied per element.
// Bounds decide most tiles cheaply (all keys below every query's lowest allowed key, or all
// inside every query's interval); the rest are tested pair by pair and the block agrees with
// __syncthreads_or. Pairs with a query or key past the end of a short last tile belong to no
// tile of the work model and take no part in the classification.
//
// Shared memory (bytes, T = 2-byte input type), for TileQ x TileK and head_dim D:
//   K tile       TileK x (D + 8) T     rows padded by 16 bytes: the 16-row fragment loads
//   V tile       TileK x (D + 8) T     then hit distinct banks
//   scores       TileQ x (TileK + 4) fp32; each warp overwrites its rows in place with the
//                probabilities in T (row i's probabilities fill the first half of row i)
//   output acc   TileQ x (D + 4) fp32  (wmma accumulator fragments have no documented
//                element-to-row mapping, so rows are rescaled here, not in registers)
//   key positions TileK int64, query intervals 2 x TileQ int64
// 128x128 at D = 128: 200 KiB + 3 KiB (needs the H100's 227 KiB opt-in; an A100 allows 163).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline_primitives.h>
#include <mma.h>

#include <cstdint>

#include "kernel_common.cuh"
#include "stripesim/validate/block_attention.hpp"

namespace stripesim::validate::gpu {

template <int HeadDim, int TileQ, int TileK>
struct BlockAttentionLayout {
  static constexpr int kWarps = TileQ / 16;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kKvStride = HeadDim + 8;     // T elements
  static constexpr int kScoreStride = TileK + 4;    // floats
  static constexpr int kProbStride = 2 * kScoreStride;  // T elements: probabilities alias scores
  static constexpr int kOutStride = HeadDim + 4;    // floats
  static constexpr std::size_t kKeys = 0;
  static constexpr std::size_t kValues = kKeys + std::size_t{TileK} * kKvStride * 2;
  static constexpr std::size_t kScores = kValues + std::size_t{TileK} * kKvStride * 2;
  static constexpr std::size_t kOut = kScores + std::size_t{TileQ} * kScoreStride * 4;
  static constexpr std::size_t kKeyPositions = kOut + std::size_t{TileQ} * kOutStride * 4;
  static constexpr std::size_t kQueryLowest = kKeyPositions + std::size_t{TileK} * 8;
  static constexpr std::size_t kQueryHighest = kQueryLowest + std::size_t{TileQ} * 8;
  static constexpr std::size_t kBytes = kQueryHighest + std::size_t{TileQ} * 8;

  static_assert(TileQ % 16 == 0 && TileK % 32 == 0 && HeadDim % 32 == 0, "fragment and lane tiling");
  // The pair test gives every thread one fixed key column.
  static_assert(kThreads % TileK == 0, "threads must be a multiple of TileK");
  // wmma needs 32-byte aligned fragment pointers and a leading dimension that is a multiple of
  // 16 bytes; every region starts on a multiple of 32 bytes.
  static_assert(kValues % 32 == 0 && kScores % 32 == 0 && kOut % 32 == 0 && kKeyPositions % 32 == 0);
};

__device__ inline float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}
__device__ inline float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}
__device__ inline std::int64_t shfl_xor64(std::int64_t x, int offset) {
  return static_cast<std::int64_t>(__shfl_xor_sync(0xffffffffu, static_cast<long long>(x), offset));
}
__device__ inline std::int64_t warp_min64(std::int64_t x) {
  for (int offset = 16; offset > 0; offset /= 2) x = min64(x, shfl_xor64(x, offset));
  return x;
}
__device__ inline std::int64_t warp_max64(std::int64_t x) {
  for (int offset = 16; offset > 0; offset /= 2) x = max64(x, shfl_xor64(x, offset));
  return x;
}

template <typename T, int HeadDim, int TileQ, int TileK>
__global__ void __launch_bounds__(TileQ / 16 * 32) block_attention_kernel(const BlockAttentionArgs args) {
  using L = BlockAttentionLayout<HeadDim, TileQ, TileK>;
  namespace wmma = nvcuda::wmma;
  const float kInf = __int_as_float(0x7f800000);
  constexpr float kLog2e = 1.4426950408889634f;

  extern __shared__ __align__(128) unsigned char smem[];
  T* const keys_s = reinterpret_cast<T*>(smem + L::kKeys);
  T* const values_s = reinterpret_cast<T*>(smem + L::kValues);
  float* const scores_s = reinterpret_cast<float*>(smem + L::kScores);
  float* const out_s = reinterpret_cast<float*>(smem + L::kOut);
  std::int64_t* const key_pos_s = reinterpret_cast<std::int64_t*>(smem + L::kKeyPositions);
  std::int64_t* const q_low_s = reinterpret_cast<std::int64_t*>(smem + L::kQueryLowest);
  std::int64_t* const q_high_s = reinterpret_cast<std::int64_t*>(smem + L::kQueryHighest);

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int head = static_cast<int>(blockIdx.y);
  const int kv_head = head / (args.heads / args.kv_heads);
  const std::int64_t q0 = static_cast<std::int64_t>(blockIdx.x) * TileQ;
  const int q_count = static_cast<int>(min64(TileQ, args.queries - q0));
  // Elements between consecutive tokens.
  const std::int64_t q_stride = static_cast<std::int64_t>(args.heads) * HeadDim;
  const std::int64_t kv_stride = static_cast<std::int64_t>(args.kv_heads) * HeadDim;
  const float scale_log2 = args.scale * kLog2e;  // exp(s * scale) = exp2(s * scale_log2)

  // Query intervals, and their bounds over the tile's real queries (every warp reduces them
  // itself: the same numbers everywhere, so every branch on them is uniform).
  for (int i = static_cast<int>(threadIdx.x); i < TileQ; i += L::kThreads) {
    if (i < q_count) {
      q_low_s[i] = args.query_lowest[q0 + i];
      q_high_s[i] = args.query_highest[q0 + i];
    } else {
      q_low_s[i] = 0;
      q_high_s[i] = -1;
    }
  }
  __syncthreads();
  std::int64_t low_min = INT64_MAX, low_max = INT64_MIN, high_min = INT64_MAX, high_max = INT64_MIN;
  for (int i = lane; i < q_count; i += 32) {
    low_min = min64(low_min, q_low_s[i]);
    low_max = max64(low_max, q_low_s[i]);
    high_min = min64(high_min, q_high_s[i]);
    high_max = max64(high_max, q_high_s[i]);
  }
  low_min = warp_min64(low_min);
  low_max = warp_max64(low_max);
  high_min = warp_min64(high_min);
  high_max = warp_max64(high_max);

  // This warp's 16 query rows: Q staged through its own rows of the output accumulator into
  // register fragments, then the accumulator rows loaded from the state.
  const int row0 = warp * 16;
  const int warp_rows = max(0, min(16, q_count - row0));
  const T* const q_tile = static_cast<const T*>(args.q) + ((q0 + row0) * args.heads + head) * HeadDim;
  T* const q_stage = reinterpret_cast<T*>(out_s + row0 * L::kOutStride);
  constexpr int kQStageStride = L::kOutStride * 2;  // T elements per staged row
  {
    constexpr int kChunks = HeadDim * 2 / 16;
    for (int idx = lane; idx < 16 * kChunks; idx += 32) {
      const int r = idx / kChunks;
      const int piece = idx % kChunks;
      uint4 value = make_uint4(0, 0, 0, 0);
      if (r < warp_rows) value = *reinterpret_cast<const uint4*>(q_tile + r * q_stride + piece * 8);
      *reinterpret_cast<uint4*>(q_stage + r * kQStageStride + piece * 8) = value;
    }
  }
  __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> q_frag[HeadDim / 16];
#pragma unroll
  for (int kk = 0; kk < HeadDim / 16; ++kk) wmma::load_matrix_sync(q_frag[kk], q_stage + kk * 16, kQStageStride);
  __syncwarp();

  float* const out_rows = out_s + row0 * L::kOutStride;
  for (int idx = lane; idx < 16 * HeadDim / 4; idx += 32) {
    const int r = idx / (HeadDim / 4);
    const int c = (idx % (HeadDim / 4)) * 4;
    float4 value = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < warp_rows) value = *reinterpret_cast<const float4*>(args.out_acc + ((q0 + row0 + r) * args.heads + head) * HeadDim + c);
    *reinterpret_cast<float4*>(out_rows + r * L::kOutStride + c) = value;
  }
  // Running maximum (every lane holds it) and this lane's share of the running sum (lane 0
  // starts from the stored sum; the shares are added up once, at the end).
  float row_max[16];
  float sum_share[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const std::int64_t row = (q0 + row0 + i) * args.heads + head;
    row_max[i] = i < warp_rows ? args.row_max[row] : -kInf;
    sum_share[i] = (i < warp_rows && lane == 0) ? args.row_sum[row] : 0.f;
  }
  __syncwarp();

  const T* const k_head = static_cast<const T*>(args.k) + kv_head * HeadDim;
  const T* const v_head = static_cast<const T*>(args.v) + kv_head * HeadDim;
  const std::int64_t key_tiles = (args.keys + TileK - 1) / TileK;
  float* const score_rows = scores_s + row0 * L::kScoreStride;
  T* const prob_rows = reinterpret_cast<T*>(score_rows);

  for (std::int64_t kt = 0; kt < key_tiles; ++kt) {
    const std::int64_t k0 = kt * TileK;
    const int k_count = static_cast<int>(min64(TileK, args.keys - k0));

    // --- classify the tile (no barrier unless the bounds cannot decide) ---
    std::int64_t key_min = INT64_MAX, key_max = INT64_MIN;
    for (int j = lane; j < k_count; j += 32) {
      const std::int64_t p = args.key_positions[k0 + j];
      key_min = min64(key_min, p);
      key_max = max64(key_max, p);
    }
    key_min = warp_min64(key_min);
    key_max = warp_max64(key_max);
    bool active = true;
    bool partial = false;
    if (key_max < low_min || key_min > high_max) {
      active = false;  // every key lies outside every query's interval
    } else if (!(key_min >= low_max && key_max <= high_min)) {
      // Not surely full: test every real pair. Each thread owns one key column.
      bool any_allowed = false;
      bool any_masked = false;
      const int j = static_cast<int>(threadIdx.x) % TileK;
      if (j < k_count) {
        const std::int64_t p = args.key_positions[k0 + j];
        for (int i = static_cast<int>(threadIdx.x) / TileK; i < q_count; i += L::kThreads / TileK) {
          const bool allowed = q_low_s[i] <= p && p <= q_high_s[i];
          any_allowed |= allowed;
          any_masked |= !allowed;
        }
      }
      // Both barriers on every thread (no short-circuit around a barrier).
      const bool block_allowed = __syncthreads_or(any_allowed) != 0;
      const bool block_masked = __syncthreads_or(any_masked) != 0;
      active = block_allowed;
      partial = block_allowed && block_masked;
    }
    if (args.tile_counts != nullptr && head == 0 && threadIdx.x == 0) {
      if (active) atomicAdd(&args.tile_counts[0], 1ull);
      if (partial) atomicAdd(&args.tile_counts[1], 1ull);
    }
    if (!active) continue;

    // --- load the tile: K first (needed first), V behind it while QK^T runs ---
    __syncthreads();  // every warp is done with the previous tile's K, V and key positions
    copy_rows_async<T, HeadDim, L::kThreads>(keys_s, L::kKvStride, k_head + k0 * kv_stride, kv_stride, k_count, TileK);
    __pipeline_commit();
    copy_rows_async<T, HeadDim, L::kThreads>(values_s, L::kKvStride, v_head + k0 * kv_stride, kv_stride, k_count, TileK);
    __pipeline_commit();
    for (int j = static_cast<int>(threadIdx.x); j < TileK; j += L::kThreads) {
      key_pos_s[j] = j < k_count ? args.key_positions[k0 + j] : 0;
    }
    __pipeline_wait_prior(1);
    __syncthreads();

    // --- scores of this warp's rows: S = Q K^T (K^T is K read column-major) ---
#pragma unroll
    for (int n = 0; n < TileK / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int kk = 0; kk < HeadDim / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> k_frag;
        wmma::load_matrix_sync(k_frag, keys_s + n * 16 * L::kKvStride + kk * 16, L::kKvStride);
        wmma::mma_sync(acc, q_frag[kk], k_frag, acc);
      }
      wmma::store_matrix_sync(score_rows + n * 16, acc, L::kScoreStride, wmma::mem_row_major);
    }
    __syncwarp();

    // --- online softmax, row by row; lane l holds columns l, l + 32, ... ---
    const bool cut_short = k_count < TileK;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      float* const srow = score_rows + i * L::kScoreStride;
      float x[TileK / 32];
      float tile_max = -kInf;
      const std::int64_t low = q_low_s[row0 + i];
      const std::int64_t high = q_high_s[row0 + i];
#pragma unroll
      for (int t = 0; t < TileK / 32; ++t) {
        const int j = lane + 32 * t;
        bool allowed = true;
        if (cut_short) allowed = j < k_count;
        if (partial) allowed = allowed && low <= key_pos_s[j] && key_pos_s[j] <= high;
        x[t] = allowed ? srow[j] * scale_log2 : -kInf;
        tile_max = fmaxf(tile_max, x[t]);
      }
      tile_max = warp_max(tile_max);
      const float new_max = fmaxf(row_max[i], tile_max);
      // A row with no allowed key so far keeps max -inf; subtracting 0 then keeps exp2 at 0
      // instead of NaN (-inf - -inf).
      const float base = new_max == -kInf ? 0.f : new_max;
      const float alpha = exp2f(row_max[i] - base);
      row_max[i] = new_max;
      __syncwarp();  // every lane has read row i's scores before any lane overwrites them
      float share = 0.f;
#pragma unroll
      for (int t = 0; t < TileK / 32; ++t) {
        const float p = exp2f(x[t] - base);
        share += p;
        prob_rows[i * L::kProbStride + lane + 32 * t] = from_float<T>(p);
      }
      sum_share[i] = alpha * sum_share[i] + share;
      float* const orow = out_rows + i * L::kOutStride;
#pragma unroll
      for (int t = 0; t < HeadDim / 32; ++t) orow[lane + 32 * t] *= alpha;
    }

    __pipeline_wait_prior(0);
    __syncthreads();  // V (loaded by every thread) is in; this warp's probabilities and rescaled rows too

    // --- O += P V on this warp's rows ---
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> p_frag[TileK / 16];
#pragma unroll
    for (int kk = 0; kk < TileK / 16; ++kk) wmma::load_matrix_sync(p_frag[kk], prob_rows + kk * 16, L::kProbStride);
#pragma unroll
    for (int n = 0; n < HeadDim / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, out_rows + n * 16, L::kOutStride, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < TileK / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> v_frag;
        wmma::load_matrix_sync(v_frag, values_s + kk * 16 * L::kKvStride + n * 16, L::kKvStride);
        wmma::mma_sync(acc, p_frag[kk], v_frag, acc);
      }
      wmma::store_matrix_sync(out_rows + n * 16, acc, L::kOutStride, wmma::mem_row_major);
    }
    __syncwarp();  // the next tile rescales these rows element by element
  }

  // --- write the state back (real rows only) ---
  for (int idx = lane; idx < warp_rows * HeadDim / 4; idx += 32) {
    const int r = idx / (HeadDim / 4);
    const int c = (idx % (HeadDim / 4)) * 4;
    *reinterpret_cast<float4*>(args.out_acc + ((q0 + row0 + r) * args.heads + head) * HeadDim + c) =
        *reinterpret_cast<const float4*>(out_rows + r * L::kOutStride + c);
  }
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const float total = warp_sum(sum_share[i]);
    if (lane == 0 && i < warp_rows) {
      const std::int64_t row = (q0 + row0 + i) * args.heads + head;
      args.row_max[row] = row_max[i];
      args.row_sum[row] = total;
    }
  }
}

// Launches (or, with args == nullptr, prepares) one compiled variant.
template <typename T, int HeadDim, int TileQ, int TileK>
cudaError_t run_block_attention(const BlockAttentionArgs* args, cudaStream_t stream) {
  using L = BlockAttentionLayout<HeadDim, TileQ, TileK>;
  const dim3 grid = args == nullptr ? dim3()
                                    : dim3(static_cast<unsigned>((args->queries + TileQ - 1) / TileQ),
                                           static_cast<unsigned>(args->heads));
  return prepare_or_launch(&block_attention_kernel<T, HeadDim, TileQ, TileK>, args, grid, L::kThreads, L::kBytes, stream);
}

// The variants of one precision (with_compiled_variant lists them).
template <typename T>
cudaError_t dispatch_block_attention(const KernelShape& shape, const BlockAttentionArgs* args, cudaStream_t stream) {
  return with_compiled_variant(
      shape, [&]<int HeadDim, int TileQ, int TileK>() { return run_block_attention<T, HeadDim, TileQ, TileK>(args, stream); },
      cudaErrorInvalidValue);
}

}  // namespace stripesim::validate::gpu
