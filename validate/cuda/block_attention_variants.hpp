#pragma once
// The per-precision entry points of the two kernels' compiled variants; block_attention.cu picks
// one. With args == nullptr they prepare (raise the shared memory limit) instead of launching.
#include <cuda_runtime_api.h>

#include "stripesim/validate/block_attention.hpp"

namespace stripesim::validate::gpu {

cudaError_t dispatch_block_attention_bf16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream);
cudaError_t dispatch_block_attention_fp16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream);
cudaError_t dispatch_flash_attention_bf16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream);
cudaError_t dispatch_flash_attention_fp16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream);
// Compiled for sm_90a only (wgmma_attention_*.cu): elsewhere the launch fails (no kernel image).
cudaError_t dispatch_wgmma_attention_bf16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream);
cudaError_t dispatch_wgmma_attention_fp16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream);

}  // namespace stripesim::validate::gpu
