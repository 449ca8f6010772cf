// Host side of the blockwise attention kernel: shape checks, dispatch to the compiled variants,
// and the small element-wise kernels around it (state init, normalise, fills, conversion).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "block_attention.cuh"
#include "block_attention_variants.hpp"
#include "flash_attention.cuh"
#include "wgmma_attention.cuh"
#include "stripesim/model/io/input_error.hpp"

namespace stripesim::validate::gpu {
namespace {

bool is_compiled_tile(const model::TileShape& tile) {
  return (tile.query == 64 || tile.query == 128) && (tile.key == 64 || tile.key == 128);
}

template <template <int, int, int> class Layout>
std::size_t shared_bytes_of(const KernelShape& shape) {
  return with_compiled_variant(
      // [&], not []: a lambda without captures converts to a function pointer, which nvcc warns about here.
      shape, [&]<int HeadDim, int TileQ, int TileK>() { return Layout<HeadDim, TileQ, TileK>::kBytes; }, std::size_t{0});
}

cudaError_t dispatch(const KernelShape& shape, const BlockAttentionArgs* args, cudaStream_t stream) {
  const bool bf16 = shape.precision == Precision::bf16;
  if (!bf16 && shape.precision != Precision::fp16) return cudaErrorInvalidValue;
  switch (shape.kernel) {
    case GpuKernel::flash:
      return bf16 ? dispatch_flash_attention_bf16(shape, args, stream) : dispatch_flash_attention_fp16(shape, args, stream);
    case GpuKernel::wgmma:
      return bf16 ? dispatch_wgmma_attention_bf16(shape, args, stream) : dispatch_wgmma_attention_fp16(shape, args, stream);
    case GpuKernel::wmma:
      return bf16 ? dispatch_block_attention_bf16(shape, args, stream) : dispatch_block_attention_fp16(shape, args, stream);
  }
  return cudaErrorInvalidValue;
}

// Grid-stride loops: any count fits a grid of at most this many blocks.
constexpr unsigned kBlocks = 1024;
constexpr unsigned kThreads = 256;
unsigned blocks_for(std::int64_t count) {
  const std::int64_t needed = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(needed < 1 ? 1 : (needed > kBlocks ? kBlocks : needed));
}

__global__ void init_state_kernel(float* out_acc, float* row_max, float* row_sum, std::int64_t rows, int head_dim) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::int64_t i = first; i < rows * head_dim; i += stride) out_acc[i] = 0.f;
  for (std::int64_t i = first; i < rows; i += stride) {
    row_max[i] = -__int_as_float(0x7f800000);
    row_sum[i] = 0.f;
  }
}

__global__ void normalise_kernel(const float* out_acc, const float* row_sum, float* out, std::int64_t rows,
                                 int head_dim) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * head_dim;
       i += stride) {
    const float sum = row_sum[i / head_dim];
    out[i] = sum > 0.f ? out_acc[i] / sum : 0.f;
  }
}

__global__ void fill_nan_kernel(float* data, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = __int_as_float(0x7fc00000);
  }
}

// SplitMix64 of (seed, index): independent of the launch shape.
__device__ inline float uniform_at(std::uint64_t seed, std::int64_t index) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;  // 24 bits into [-1, 1)
}

template <typename T>
__global__ void fill_uniform_kernel(T* data, std::int64_t count, std::uint64_t seed) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = from_float<T>(uniform_at(seed, i));
  }
}

}  // namespace

void check_kernel_shape(const KernelShape& shape) {
  if (shape.precision != Precision::bf16 && shape.precision != Precision::fp16) {
    throw model::InputError("--dtype " + std::string(precision_name(shape.precision)) +
                            ": the GPU kernel computes in bf16 or fp16");
  }
  if (shape.head_dim != 64 && shape.head_dim != 128) {
    throw model::InputError("--head-dim " + std::to_string(shape.head_dim) + ": the GPU kernel supports 64 or 128");
  }
  if (!is_compiled_tile(shape.tile)) {
    throw model::InputError("--tile " + std::to_string(shape.tile.query) + "x" + std::to_string(shape.tile.key) +
                            ": the GPU kernel supports 64x64, 64x128, 128x64 or 128x128");
  }
}

std::size_t kernel_shared_bytes(const KernelShape& shape) {
  check_kernel_shape(shape);
  switch (shape.kernel) {
    case GpuKernel::flash: return shared_bytes_of<FlashLayout>(shape);
    case GpuKernel::wgmma: return shared_bytes_of<WgmmaLayout>(shape);
    case GpuKernel::wmma: return shared_bytes_of<BlockAttentionLayout>(shape);
  }
  return 0;
}

cudaError_t prepare_block_attention(const KernelShape& shape) { return dispatch(shape, nullptr, nullptr); }

cudaError_t launch_block_attention(const KernelShape& shape, const BlockAttentionArgs& args, cudaStream_t stream) {
  if (args.queries <= 0 || args.keys <= 0 || args.heads <= 0 || args.kv_heads <= 0 || args.heads % args.kv_heads != 0) {
    return cudaErrorInvalidValue;
  }
  return dispatch(shape, &args, stream);
}

cudaError_t launch_init_state(float* out_acc, float* row_max, float* row_sum, std::int64_t rows, int head_dim,
                              cudaStream_t stream) {
  static_cast<void>(cudaGetLastError());  // see prepare_or_launch
  init_state_kernel<<<blocks_for(rows * head_dim), kThreads, 0, stream>>>(out_acc, row_max, row_sum, rows, head_dim);
  return cudaGetLastError();
}

cudaError_t launch_normalise(const float* out_acc, const float* row_sum, float* out, std::int64_t rows, int head_dim,
                             cudaStream_t stream) {
  static_cast<void>(cudaGetLastError());  // see prepare_or_launch
  normalise_kernel<<<blocks_for(rows * head_dim), kThreads, 0, stream>>>(out_acc, row_sum, out, rows, head_dim);
  return cudaGetLastError();
}

cudaError_t launch_fill_nan(float* data, std::int64_t count, cudaStream_t stream) {
  static_cast<void>(cudaGetLastError());  // see prepare_or_launch
  fill_nan_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count);
  return cudaGetLastError();
}

cudaError_t launch_fill_uniform(void* data, std::int64_t count, Precision precision, std::uint64_t seed,
                                cudaStream_t stream) {
  static_cast<void>(cudaGetLastError());  // see prepare_or_launch
  switch (precision) {
    case Precision::bf16:
      fill_uniform_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, seed);
      break;
    case Precision::fp16:
      fill_uniform_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<__half*>(data), count, seed);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

void convert_to_precision(const double* values, std::size_t count, Precision precision, void* out) {
  // The host halves of cuda_bf16.h / cuda_fp16.h round to nearest even, subnormals included.
  if (precision == Precision::bf16) {
    auto* dst = static_cast<__nv_bfloat16*>(out);
    for (std::size_t i = 0; i < count; ++i) dst[i] = __double2bfloat16(values[i]);
  } else if (precision == Precision::fp16) {
    auto* dst = static_cast<__half*>(out);
    for (std::size_t i = 0; i < count; ++i) dst[i] = __double2half(values[i]);
  } else {
    throw model::InputError("--dtype " + std::string(precision_name(precision)) +
                            ": the GPU kernel computes in bf16 or fp16");
  }
}

}  // namespace stripesim::validate::gpu
