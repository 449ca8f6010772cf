// The ring's backward on the tensor cores (--gpu-backward-kernel wmma): the same computation as
// the scalar kernel of block_attention_backward.cu (block_attention_backward.hpp says what one
// launch computes), its matrix products on wmma fragments (bf16 or fp16 in, fp32 accumulation),
// FlashAttention-2's backward loop order. A thread block of 4 warps owns kWmmaKeys keys of one key
// tile and one query head; warp w owns keys [16w, 16w + 16) of them and keeps their dK and dV in
// accumulator fragments (registers) for the whole launch. For every query tile the schedule
// lists for its key tile (TileSchedule by_key_tile: exactly the work model's tiles, a partial
// one masked per element) it takes the queries 64 at a time:
//   1. Q and dO of those queries to shared memory (cp.async), their lse2 and delta;
//   2. per warp: S^T = K Q^T and dP^T = V dO^T for its 16 keys (fp32, to shared memory);
//   3. per warp, element-wise: P^T = exp2(S^T * scale * log2(e) - lse2) (0 where masked, only on
//      partial tiles, and outside the block), dS^T = P^T * (dP^T - delta) * scale, both rounded
//      to the input type as the A operand of the next products (as FlashAttention-2 rounds P);
//   4. per warp: dV += P^T dO, dK += dS^T Q in its fragments;
//   5. after a block barrier (dQ needs every warp's keys): warp w's 16 queries' dQ = dS K over
//      the block's keys, staged in shared memory and added to global memory with atomics (other
//      key blocks add to the same rows).
// At the end every warp adds its keys' dK and dV to the travelling accumulators (atomics: the
// query heads of a K/V head group add to the same rows).
//
// Shared memory (bytes, T = 2-byte input type), head_dim D:
//   K, V       64 x (D + 8) T each      rows padded by 16 bytes (fragment loads hit distinct banks)
//   Q, dO      64 x (D + 8) T each
//   S^T, dP^T  64 x (64 + 4) fp32 each  the dQ / dK / dV staging, 64 x (D + 4) fp32, aliases them
//   P^T, dS^T  64 x (64 + 8) T each
// D = 128: 120 KiB (an A100 allows 163, an H100 227); D = 64: 88 KiB.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline_primitives.h>
#include <mma.h>

#include <cstdint>

#include "backward_common.cuh"
#include "kernel_common.cuh"
#include "stripesim/validate/tile_schedule.hpp"
#include "wmma_backward.hpp"

namespace stripesim::validate::gpu {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kKeys = gpu_backward_block_keys(GpuBackwardKernel::wmma);  // 16 per warp
constexpr int kQueries = 64;                                         // per step
constexpr float kLog2e = 1.4426950408889634f;
static_assert(kKeys == 16 * kWarps, "a warp owns 16 keys");

template <int HeadDim>
struct WmmaBackwardLayout {
  static constexpr int kRowStride = HeadDim + 8;      // T elements: K, V, Q, dO
  static constexpr int kPairStride = kQueries + 4;    // floats: S^T, dP^T
  static constexpr int kHalfPairStride = kQueries + 8;  // T elements: P^T, dS^T
  static constexpr int kStageStride = HeadDim + 4;    // floats: dQ, dK, dV on their way out
  static constexpr std::size_t kK = 0;
  static constexpr std::size_t kV = kK + std::size_t{kKeys} * kRowStride * 2;
  static constexpr std::size_t kQ = kV + std::size_t{kKeys} * kRowStride * 2;
  static constexpr std::size_t kDout = kQ + std::size_t{kQueries} * kRowStride * 2;
  static constexpr std::size_t kScores = kDout + std::size_t{kQueries} * kRowStride * 2;
  static constexpr std::size_t kDp = kScores + std::size_t{kKeys} * kPairStride * 4;
  static constexpr std::size_t kPairBytes = 2 * std::size_t{kKeys} * kPairStride * 4;
  static constexpr std::size_t kStageBytes = static_cast<std::size_t>(kQueries > kKeys ? kQueries : kKeys) * kStageStride * 4;
  static constexpr std::size_t kP = kScores + (kPairBytes > kStageBytes ? kPairBytes : kStageBytes);
  static constexpr std::size_t kDs = kP + std::size_t{kKeys} * kHalfPairStride * 2;
  static constexpr std::size_t kBytes = kDs + std::size_t{kKeys} * kHalfPairStride * 2;

  static_assert(HeadDim % 16 == 0, "fragment tiling");
  // wmma needs 32-byte aligned fragment pointers (every region, and every 16-row, 16-column
  // offset inside one, lands on a multiple of 32 bytes) and leading dimensions of 16 bytes.
  static_assert(kV % 32 == 0 && kQ % 32 == 0 && kDout % 32 == 0 && kScores % 32 == 0 && kDp % 32 == 0 && kP % 32 == 0 &&
                kDs % 32 == 0);
  static_assert(kRowStride % 8 == 0 && kHalfPairStride % 8 == 0 && kPairStride % 4 == 0 && kStageStride % 4 == 0);
};

// The sizes the header states: one block per SM fits on an A100 as on an H100.
static_assert(WmmaBackwardLayout<128>::kBytes == 120 * 1024 && WmmaBackwardLayout<64>::kBytes == 88 * 1024);

template <typename T>
using RowA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <typename T>
using ColA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::col_major>;
template <typename T>
using RowB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major>;
template <typename T>
using ColB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major>;
using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Adds a warp's 16 staged rows (row r of `stage` at stage + r * stride) of HeadDim values to
// global rows (row r at to + r * to_stride), the first `count` of them.
template <int HeadDim, int Stride>
__device__ inline void add_rows(float* to, std::int64_t to_stride, const float* stage, int count, int lane) {
  for (int idx = lane; idx < 16 * HeadDim; idx += 32) {
    const int r = idx / HeadDim;
    const int d = idx % HeadDim;
    if (r < count) atomicAdd(&to[r * to_stride + d], stage[r * Stride + d]);
  }
}

template <typename T, int HeadDim>
__global__ void __launch_bounds__(kThreads) wmma_backward_kernel(const BlockBackwardArgs a, int tile_q, int tile_k) {
  using L = WmmaBackwardLayout<HeadDim>;
  constexpr int RS = L::kRowStride;
  constexpr int PS = L::kPairStride;
  constexpr int HS = L::kHalfPairStride;
  constexpr int SS = L::kStageStride;
  constexpr int kDimFragments = HeadDim / 16;

  extern __shared__ __align__(128) unsigned char smem[];
  T* const k_s = reinterpret_cast<T*>(smem + L::kK);
  T* const v_s = reinterpret_cast<T*>(smem + L::kV);
  T* const q_s = reinterpret_cast<T*>(smem + L::kQ);
  T* const do_s = reinterpret_cast<T*>(smem + L::kDout);
  float* const st_s = reinterpret_cast<float*>(smem + L::kScores);
  float* const dpt_s = reinterpret_cast<float*>(smem + L::kDp);
  float* const stage_s = st_s;  // used only between the barriers that end one step's S^T, dP^T
  T* const pt_s = reinterpret_cast<T*>(smem + L::kP);
  T* const dst_s = reinterpret_cast<T*>(smem + L::kDs);
  __shared__ float lse_s[kQueries];
  __shared__ float delta_s[kQueries];
  __shared__ std::int64_t low_s[kQueries];
  __shared__ std::int64_t high_s[kQueries];
  __shared__ std::int64_t key_pos_s[kKeys];

  const BackwardBlock block = backward_block<kKeys>(a, tile_k);
  if (block.idle) return;
  const std::int64_t key0 = block.key0;
  const int keys = block.keys;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int my_keys = 16 * warp;  // the warp's first key within the block
  const int head = static_cast<int>(blockIdx.y);
  const int kv_head = head / (a.heads / a.kv_heads);
  const std::int64_t q_stride = static_cast<std::int64_t>(a.heads) * HeadDim;
  const std::int64_t kv_stride = static_cast<std::int64_t>(a.kv_heads) * HeadDim;
  const T* const q = static_cast<const T*>(a.q) + head * HeadDim;
  const T* const dout = static_cast<const T*>(a.dout) + head * HeadDim;
  const std::int64_t kv_at = key0 * kv_stride + kv_head * HeadDim;
  const float scale_log2 = a.scale * kLog2e;

  // K and V of the block's keys (rows past a short last tile read as zeros); waited for with
  // the first step's Q and dO.
  copy_rows_async<T, HeadDim, kThreads>(k_s, RS, static_cast<const T*>(a.k) + kv_at, kv_stride, keys, kKeys);
  copy_rows_async<T, HeadDim, kThreads>(v_s, RS, static_cast<const T*>(a.v) + kv_at, kv_stride, keys, kKeys);
  __pipeline_commit();
  if (threadIdx.x < kKeys) key_pos_s[threadIdx.x] = static_cast<int>(threadIdx.x) < keys ? a.key_positions[key0 + threadIdx.x] : 0;

  Acc dk_acc[kDimFragments];
  Acc dv_acc[kDimFragments];
  for (int c = 0; c < kDimFragments; ++c) {
    wmma::fill_fragment(dk_acc[c], 0.f);
    wmma::fill_fragment(dv_acc[c], 0.f);
  }

  for (int e = block.first; e < block.last; ++e) {
    const QueryTile tile = query_tile(a, e, tile_q);
    const bool partial = tile.partial;
    for (std::int64_t q0 = tile.begin; q0 < tile.end; q0 += kQueries) {
      const int rows = static_cast<int>(min64(kQueries, tile.end - q0));
      __syncthreads();  // every warp is done with the previous step's Q, dO, dS^T and staging
      copy_rows_async<T, HeadDim, kThreads>(q_s, RS, q + q0 * q_stride, q_stride, rows, kQueries);
      copy_rows_async<T, HeadDim, kThreads>(do_s, RS, dout + q0 * q_stride, q_stride, rows, kQueries);
      __pipeline_commit();
      load_query_rows<kQueries>(a, q0, rows, head, lse_s, delta_s, low_s, high_s);
      __pipeline_wait_prior(0);
      __syncthreads();

      // 2. S^T and dP^T of the warp's keys against the step's queries.
      for (int n = 0; n < kQueries / 16; ++n) {
        Acc s_acc;
        Acc dp_acc;
        wmma::fill_fragment(s_acc, 0.f);
        wmma::fill_fragment(dp_acc, 0.f);
        for (int kk = 0; kk < kDimFragments; ++kk) {
          RowA<T> k_frag;
          ColB<T> q_frag;  // Q^T: element (d, query) of the column-major view is Q[query][d]
          wmma::load_matrix_sync(k_frag, k_s + my_keys * RS + kk * 16, RS);
          wmma::load_matrix_sync(q_frag, q_s + n * 16 * RS + kk * 16, RS);
          wmma::mma_sync(s_acc, k_frag, q_frag, s_acc);
          RowA<T> v_frag;
          ColB<T> do_frag;
          wmma::load_matrix_sync(v_frag, v_s + my_keys * RS + kk * 16, RS);
          wmma::load_matrix_sync(do_frag, do_s + n * 16 * RS + kk * 16, RS);
          wmma::mma_sync(dp_acc, v_frag, do_frag, dp_acc);
        }
        wmma::store_matrix_sync(st_s + my_keys * PS + n * 16, s_acc, PS, wmma::mem_row_major);
        wmma::store_matrix_sync(dpt_s + my_keys * PS + n * 16, dp_acc, PS, wmma::mem_row_major);
      }
      __syncwarp();

      // 3. P^T and dS^T of the warp's keys, element by element.
      for (int idx = lane; idx < 16 * kQueries; idx += 32) {
        const int j = my_keys + idx / kQueries;
        const int i = idx % kQueries;
        bool allowed = i < rows && j < keys;
        if (partial) allowed = allowed && low_s[i] <= key_pos_s[j] && key_pos_s[j] <= high_s[i];
        const float p = allowed ? exp2f(st_s[j * PS + i] * scale_log2 - lse_s[i]) : 0.f;
        pt_s[j * HS + i] = from_float<T>(p);
        dst_s[j * HS + i] = from_float<T>(p * (dpt_s[j * PS + i] - delta_s[i]) * a.scale);
      }
      __syncwarp();

      // 4. dV += P^T dO and dK += dS^T Q for the warp's keys.
      for (int kk = 0; kk < kQueries / 16; ++kk) {
        RowA<T> p_frag;
        RowA<T> ds_frag;
        wmma::load_matrix_sync(p_frag, pt_s + my_keys * HS + kk * 16, HS);
        wmma::load_matrix_sync(ds_frag, dst_s + my_keys * HS + kk * 16, HS);
        for (int c = 0; c < kDimFragments; ++c) {
          RowB<T> do_frag;
          wmma::load_matrix_sync(do_frag, do_s + kk * 16 * RS + c * 16, RS);
          wmma::mma_sync(dv_acc[c], p_frag, do_frag, dv_acc[c]);
          RowB<T> q_frag;
          wmma::load_matrix_sync(q_frag, q_s + kk * 16 * RS + c * 16, RS);
          wmma::mma_sync(dk_acc[c], ds_frag, q_frag, dk_acc[c]);
        }
      }
      __syncthreads();  // every warp's dS^T is written and nobody reads S^T or dP^T any more

      // 5. dQ of the warp's 16 queries over the block's keys: dS = (dS^T)^T read column-major.
      const int my_queries = 16 * warp;
      if (my_queries < rows) {
        for (int c = 0; c < kDimFragments; ++c) {
          Acc dq_acc;
          wmma::fill_fragment(dq_acc, 0.f);
          for (int kk = 0; kk < kKeys / 16; ++kk) {
            ColA<T> ds_frag;  // element (query, key) of the column-major view is dS^T[key][query]
            RowB<T> k_frag;
            wmma::load_matrix_sync(ds_frag, dst_s + kk * 16 * HS + my_queries, HS);
            wmma::load_matrix_sync(k_frag, k_s + kk * 16 * RS + c * 16, RS);
            wmma::mma_sync(dq_acc, ds_frag, k_frag, dq_acc);
          }
          wmma::store_matrix_sync(stage_s + my_queries * SS + c * 16, dq_acc, SS, wmma::mem_row_major);
        }
        __syncwarp();
        add_rows<HeadDim, SS>(a.dq + (q0 + my_queries) * q_stride + head * HeadDim, q_stride, stage_s + my_queries * SS,
                              rows - my_queries, lane);
      }
    }
  }

  // The warp's dK and dV, through its own rows of the staging area.
  __syncthreads();  // every warp's last dQ is added: the staging area is free
  float* const own = stage_s + my_keys * SS;
  const int own_keys = keys - my_keys;
  float* const dk = a.dk + (key0 + my_keys) * kv_stride + kv_head * HeadDim;
  float* const dv = a.dv + (key0 + my_keys) * kv_stride + kv_head * HeadDim;
  for (int c = 0; c < kDimFragments; ++c) wmma::store_matrix_sync(own + c * 16, dk_acc[c], SS, wmma::mem_row_major);
  __syncwarp();
  add_rows<HeadDim, SS>(dk, kv_stride, own, own_keys, lane);
  __syncwarp();
  for (int c = 0; c < kDimFragments; ++c) wmma::store_matrix_sync(own + c * 16, dv_acc[c], SS, wmma::mem_row_major);
  __syncwarp();
  add_rows<HeadDim, SS>(dv, kv_stride, own, own_keys, lane);
}

}  // namespace

std::size_t wmma_backward_shared_bytes(Count head_dim) {
  return head_dim == 64 ? WmmaBackwardLayout<64>::kBytes : WmmaBackwardLayout<128>::kBytes;
}

cudaError_t dispatch_wmma_backward(const KernelShape& shape, const BlockBackwardArgs* args, cudaStream_t stream) {
  return with_backward_variant(shape, [&]<typename T, int HeadDim>() {
    return prepare_or_launch_backward(&wmma_backward_kernel<T, HeadDim>, WmmaBackwardLayout<HeadDim>::kBytes, kThreads, kKeys,
                                      shape, args, stream);
  });
}

}  // namespace stripesim::validate::gpu
