// Kernels of the GPU dense reference: bf16/fp16 -> fp32 widening, the masked row softmax, and
// for the gradients the row dots (delta) and the softmax's backward.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cub/block/block_reduce.cuh>

#include "gpu_reference_kernels.hpp"

namespace stripesim::validate::gpu {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 1024;  // grid-stride loops cover any count

unsigned widen_blocks(std::int64_t count) {
  const std::int64_t needed = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(needed < 1 ? 1 : (needed > kMaxBlocks ? kMaxBlocks : needed));
}

__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float to_float(__half x) { return __half2float(x); }

template <typename T>
__global__ void widen_kernel(const T* src, float* dst, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    dst[i] = to_float(src[i]);
  }
}

struct MaxOf {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// One block per row: the row's maximum over its allowed keys, then exp and sum, then 1 / sum.
// Three passes over the row in global memory; the rows are long (up to n keys) and the pass
// count is what keeps this simple next to the two SGEMMs that dominate the cost.
__global__ void __launch_bounds__(kThreads) masked_softmax_kernel(float* scores, std::int64_t keys,
                                                                  std::int64_t first_key, const std::int64_t* lowest,
                                                                  const std::int64_t* highest) {
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ float broadcast;
  float* row = scores + static_cast<std::int64_t>(blockIdx.x) * keys;
  const std::int64_t lo = max(lowest[blockIdx.x] - first_key, std::int64_t{0});
  const std::int64_t hi = min(highest[blockIdx.x] - first_key, keys - 1);

  float local_max = -__int_as_float(0x7f800000);
  for (std::int64_t j = lo + threadIdx.x; j <= hi; j += kThreads) local_max = fmaxf(local_max, row[j]);
  const float block_max = Reduce(storage).Reduce(local_max, MaxOf{});  // valid in thread 0
  if (threadIdx.x == 0) broadcast = block_max;
  __syncthreads();
  const float row_max = broadcast;

  float local_sum = 0.f;
  for (std::int64_t j = threadIdx.x; j < keys; j += kThreads) {
    const float weight = lo <= j && j <= hi ? expf(row[j] - row_max) : 0.f;
    row[j] = weight;
    local_sum += weight;
  }
  __syncthreads();  // `storage` and `broadcast` are reused
  const float block_sum = Reduce(storage).Sum(local_sum);
  if (threadIdx.x == 0) broadcast = block_sum;
  __syncthreads();  // also orders every thread's writes above before the rescale below
  const float inverse = broadcast > 0.f ? 1.f / broadcast : 0.f;
  for (std::int64_t j = lo + threadIdx.x; j <= hi; j += kThreads) row[j] *= inverse;
}

__global__ void row_dots_kernel(const float* a, const float* b, std::int64_t rows, int dim, std::int64_t ld, float* out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += stride) {
    float dot = 0.f;
    for (int i = 0; i < dim; ++i) dot += a[r * ld + i] * b[r * ld + i];
    out[r] = dot;
  }
}

__global__ void softmax_backward_kernel(const float* probs, float* grads, std::int64_t rows, std::int64_t keys,
                                        const float* delta, float scale) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * keys; i += stride) {
    grads[i] = probs[i] * (grads[i] - delta[i / keys]) * scale;
  }
}

}  // namespace

cudaError_t launch_row_dots(const float* a, const float* b, std::int64_t rows, int dim, std::int64_t ld, float* out,
                            cudaStream_t stream) {
  if (rows <= 0 || dim <= 0) return cudaErrorInvalidValue;
  static_cast<void>(cudaGetLastError());
  row_dots_kernel<<<widen_blocks(rows), kThreads, 0, stream>>>(a, b, rows, dim, ld, out);
  return cudaGetLastError();
}

cudaError_t launch_softmax_backward(const float* probs, float* grads, std::int64_t rows, std::int64_t keys,
                                    const float* delta, float scale, cudaStream_t stream) {
  if (rows <= 0 || keys <= 0) return cudaErrorInvalidValue;
  static_cast<void>(cudaGetLastError());
  softmax_backward_kernel<<<widen_blocks(rows * keys), kThreads, 0, stream>>>(probs, grads, rows, keys, delta, scale);
  return cudaGetLastError();
}

cudaError_t launch_widen_to_fp32(const void* src, Precision precision, float* dst, std::int64_t count,
                                 cudaStream_t stream) {
  static_cast<void>(cudaGetLastError());  // a stale non-sticky error must not be blamed on this launch
  switch (precision) {
    case Precision::bf16:
      widen_kernel<<<widen_blocks(count), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(src), dst, count);
      break;
    case Precision::fp16:
      widen_kernel<<<widen_blocks(count), kThreads, 0, stream>>>(static_cast<const __half*>(src), dst, count);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_masked_softmax(float* scores, std::int64_t rows, std::int64_t keys, std::int64_t first_key,
                                  const std::int64_t* lowest, const std::int64_t* highest, cudaStream_t stream) {
  if (rows <= 0 || keys <= 0) return cudaErrorInvalidValue;
  static_cast<void>(cudaGetLastError());
  masked_softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(scores, keys, first_key, lowest, highest);
  return cudaGetLastError();
}

}  // namespace stripesim::validate::gpu
