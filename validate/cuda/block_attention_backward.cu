// The ring's scalar backward kernel (block_attention_backward.hpp says what one launch computes),
// the dispatch to it or to the tensor-core one (wmma_backward.cu), and the element-wise
// preparation before either. A thread block of 128 threads owns 32 keys of
// one key tile and one query head; for every query tile the schedule lists for that key tile it
// takes the queries 32 at a time and, all in shared memory and fp32:
//   1. loads Q and dO of those queries, with their lse2 and delta;
//   2. S = Q K^T, P = exp2(S * scale * log2(e) - lse2) (0 where masked, only on partial tiles,
//      and outside the block), dP = dO V^T, dS = P * (dP - delta) * scale: one (query, key) pair
//      per thread and step;
//   3. dV += P^T dO and dK += dS^T Q in shared memory (each thread its own (key, element) cells);
//      dQ += dS K added to global memory with atomics (other key tiles add to the same rows).
// At the end the block's dK and dV are added to the travelling accumulators (atomics: the query
// heads of a K/V head group add to the same rows).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backward_common.cuh"
#include "kernel_common.cuh"
#include "stripesim/validate/block_attention_backward.hpp"
#include "stripesim/validate/tile_schedule.hpp"
#include "wmma_backward.hpp"

namespace stripesim::validate::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int kRows = gpu_backward_block_keys(GpuBackwardKernel::scalar);  // queries per step, keys per block
constexpr float kLog2e = 1.4426950408889634f;

__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float to_float(__half x) { return __half2float(x); }

// Shared memory of one block: six [kRows][HeadDim + 1] row tiles (the +1 spreads a column
// over the banks), P and dS [kRows][kRows + 1], and per row lse2 and delta.
template <int HeadDim>
struct BackwardLayout {
  static constexpr int kStride = HeadDim + 1;
  static constexpr int kTile = kRows * kStride;
  static constexpr int kPairs = kRows * (kRows + 1);
  static constexpr std::size_t kBytes = sizeof(float) * (6 * kTile + 2 * kPairs + 2 * kRows);
};

// `count` rows of HeadDim values from `src` (row r at src + r * stride) into dst[r][*] as fp32;
// rows [count, kRows) read as zeros.
template <typename T, int HeadDim>
__device__ inline void load_rows(float* dst, const T* src, std::int64_t stride, int count) {
  for (int idx = threadIdx.x; idx < kRows * HeadDim; idx += kThreads) {
    const int r = idx / HeadDim;
    const int i = idx % HeadDim;
    dst[r * BackwardLayout<HeadDim>::kStride + i] = r < count ? to_float(src[r * stride + i]) : 0.f;
  }
}

template <typename T, int HeadDim>
__global__ void __launch_bounds__(kThreads) block_backward_kernel(BlockBackwardArgs a, int tile_q, int tile_k) {
  using L = BackwardLayout<HeadDim>;
  constexpr int S = L::kStride;
  extern __shared__ float smem[];
  float* k_s = smem;
  float* v_s = k_s + L::kTile;
  float* dk_s = v_s + L::kTile;
  float* dv_s = dk_s + L::kTile;
  float* q_s = dv_s + L::kTile;
  float* do_s = q_s + L::kTile;
  float* p_s = do_s + L::kTile;
  float* ds_s = p_s + L::kPairs;
  float* lse_s = ds_s + L::kPairs;
  float* delta_s = lse_s + kRows;
  __shared__ std::int64_t key_pos[kRows];
  __shared__ std::int64_t low[kRows];
  __shared__ std::int64_t high[kRows];

  const BackwardBlock block = backward_block<kRows>(a, tile_k);
  if (block.idle) return;
  const std::int64_t key0 = block.key0;
  const int keys = block.keys;
  const int head = static_cast<int>(blockIdx.y);
  const int kv_head = head / (a.heads / a.kv_heads);
  const std::int64_t q_stride = static_cast<std::int64_t>(a.heads) * HeadDim;
  const std::int64_t kv_stride = static_cast<std::int64_t>(a.kv_heads) * HeadDim;
  const T* q = static_cast<const T*>(a.q) + head * HeadDim;
  const T* dout = static_cast<const T*>(a.dout) + head * HeadDim;
  const std::int64_t kv_at = key0 * kv_stride + kv_head * HeadDim;

  load_rows<T, HeadDim>(k_s, static_cast<const T*>(a.k) + kv_at, kv_stride, keys);
  load_rows<T, HeadDim>(v_s, static_cast<const T*>(a.v) + kv_at, kv_stride, keys);
  for (int idx = threadIdx.x; idx < kRows * HeadDim; idx += kThreads) {
    const int at = (idx / HeadDim) * S + idx % HeadDim;
    dk_s[at] = 0.f;
    dv_s[at] = 0.f;
  }
  if (threadIdx.x < kRows) key_pos[threadIdx.x] = threadIdx.x < keys ? a.key_positions[key0 + threadIdx.x] : 0;
  const float scale_log2 = a.scale * kLog2e;

  for (int e = block.first; e < block.last; ++e) {
    const QueryTile tile = query_tile(a, e, tile_q);
    const bool partial = tile.partial;
    for (std::int64_t q0 = tile.begin; q0 < tile.end; q0 += kRows) {
      const int rows = static_cast<int>(min64(kRows, tile.end - q0));
      __syncthreads();  // the previous step is done with q_s, do_s, p_s, ds_s
      load_rows<T, HeadDim>(q_s, q + q0 * q_stride, q_stride, rows);
      load_rows<T, HeadDim>(do_s, dout + q0 * q_stride, q_stride, rows);
      load_query_rows<kRows>(a, q0, rows, head, lse_s, delta_s, low, high);
      __syncthreads();
      // 2. P and dS, one (query, key) pair per thread and step; a warp shares its query.
      for (int idx = threadIdx.x; idx < kRows * kRows; idx += kThreads) {
        const int i = idx / kRows;
        const int j = idx % kRows;
        bool allowed = i < rows && j < keys;
        if (partial) allowed = allowed && low[i] <= key_pos[j] && key_pos[j] <= high[i];
        float s = 0.f, dp = 0.f;
        for (int d = 0; d < HeadDim; ++d) {
          s += q_s[i * S + d] * k_s[j * S + d];
          dp += do_s[i * S + d] * v_s[j * S + d];
        }
        const float p = allowed ? exp2f(s * scale_log2 - lse_s[i]) : 0.f;
        p_s[i * (kRows + 1) + j] = p;
        ds_s[i * (kRows + 1) + j] = p * (dp - delta_s[i]) * a.scale;
      }
      __syncthreads();
      // 3. dV += P^T dO, dK += dS^T Q: a thread per (key, element); dQ += dS K: per (query, element).
      for (int idx = threadIdx.x; idx < kRows * HeadDim; idx += kThreads) {
        const int j = idx / HeadDim;
        const int d = idx % HeadDim;
        float dv = 0.f, dk = 0.f;
        for (int i = 0; i < rows; ++i) {
          dv += p_s[i * (kRows + 1) + j] * do_s[i * S + d];
          dk += ds_s[i * (kRows + 1) + j] * q_s[i * S + d];
        }
        dv_s[j * S + d] += dv;
        dk_s[j * S + d] += dk;
      }
      for (int idx = threadIdx.x; idx < rows * HeadDim; idx += kThreads) {
        const int i = idx / HeadDim;
        const int d = idx % HeadDim;
        float dq = 0.f;
        for (int j = 0; j < keys; ++j) dq += ds_s[i * (kRows + 1) + j] * k_s[j * S + d];
        atomicAdd(&a.dq[(q0 + i) * q_stride + head * HeadDim + d], dq);
      }
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < keys * HeadDim; idx += kThreads) {
    const int j = idx / HeadDim;
    const int d = idx % HeadDim;
    const std::int64_t at = (key0 + j) * kv_stride + kv_head * HeadDim + d;
    atomicAdd(&a.dk[at], dk_s[j * S + d]);
    atomicAdd(&a.dv[at], dv_s[j * S + d]);
  }
}

template <typename T>
__global__ void backward_prepare_kernel(const float* out, const T* dout, const float* row_max, const float* row_sum,
                                        float* lse2, float* delta, std::int64_t rows, int head_dim) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += stride) {
    float dot = 0.f;
    for (int i = 0; i < head_dim; ++i) dot += out[r * head_dim + i] * to_float(dout[r * head_dim + i]);
    delta[r] = dot;
    lse2[r] = row_sum[r] > 0.f ? row_max[r] + log2f(row_sum[r]) : __int_as_float(0x7f800000);
  }
}

// With args == nullptr, prepare instead of launching.
cudaError_t dispatch(const KernelShape& shape, const BlockBackwardArgs* args, cudaStream_t stream) {
  if (shape.backward == GpuBackwardKernel::wmma) return dispatch_wmma_backward(shape, args, stream);
  return with_backward_variant(shape, [&]<typename T, int HeadDim>() {
    return prepare_or_launch_backward(&block_backward_kernel<T, HeadDim>, BackwardLayout<HeadDim>::kBytes, kThreads, kRows, shape,
                                      args, stream);
  });
}

}  // namespace

std::size_t backward_shared_bytes(const KernelShape& shape) {
  check_kernel_shape(shape);
  if (shape.backward == GpuBackwardKernel::wmma) return wmma_backward_shared_bytes(shape.head_dim);
  return shape.head_dim == 64 ? BackwardLayout<64>::kBytes : BackwardLayout<128>::kBytes;
}

cudaError_t prepare_block_attention_backward(const KernelShape& shape) { return dispatch(shape, nullptr, nullptr); }

cudaError_t launch_block_attention_backward(const KernelShape& shape, const BlockBackwardArgs& args, cudaStream_t stream) {
  if (args.queries <= 0 || args.keys <= 0 || args.heads <= 0 || args.kv_heads <= 0 || args.heads % args.kv_heads != 0 ||
      args.tile_order == nullptr || args.tile_offsets == nullptr || args.tile_entries == nullptr ||
      shape.tile.key % gpu_backward_block_keys(shape.backward) != 0) {
    return cudaErrorInvalidValue;
  }
  return dispatch(shape, &args, stream);
}

cudaError_t launch_backward_prepare(const float* out, const void* dout, Precision precision, const float* row_max,
                                    const float* row_sum, float* lse2, float* delta, std::int64_t rows, int head_dim,
                                    cudaStream_t stream) {
  constexpr unsigned threads = 256;
  const auto blocks = static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(1024, (rows + threads - 1) / threads)));
  static_cast<void>(cudaGetLastError());  // see prepare_or_launch
  switch (precision) {
    case Precision::bf16:
      backward_prepare_kernel<<<blocks, threads, 0, stream>>>(out, static_cast<const __nv_bfloat16*>(dout), row_max, row_sum,
                                                              lse2, delta, rows, head_dim);
      break;
    case Precision::fp16:
      backward_prepare_kernel<<<blocks, threads, 0, stream>>>(out, static_cast<const __half*>(dout), row_max, row_sum, lse2,
                                                              delta, rows, head_dim);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace stripesim::validate::gpu
