#pragma once
// The tensor-core backward kernel (wmma_backward.cu), reached through the public backward API of
// block_attention_backward.hpp, which picks it for a shape whose backward is GpuBackwardKernel::wmma.
#include <cstddef>

#include <cuda_runtime_api.h>

#include "stripesim/validate/block_attention_backward.hpp"

namespace stripesim::validate::gpu {

// Dynamic shared memory of one thread block at this head size, bytes.
[[nodiscard]] std::size_t wmma_backward_shared_bytes(Count head_dim);
// With args == nullptr raises the kernel's shared memory limit on the current device; else
// launches one (query block, K/V block) pair's backward on `stream` and returns its error.
[[nodiscard]] cudaError_t dispatch_wmma_backward(const KernelShape& shape, const BlockBackwardArgs* args,
                                                 cudaStream_t stream);

}  // namespace stripesim::validate::gpu
