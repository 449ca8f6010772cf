// The fp16 variants of the blockwise attention kernel (see block_attention_bf16.cu).
#include "block_attention.cuh"
#include "block_attention_variants.hpp"

namespace stripesim::validate::gpu {

cudaError_t dispatch_block_attention_fp16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream) {
  return dispatch_block_attention<__half>(shape, args, stream);
}

}  // namespace stripesim::validate::gpu
