// The bf16 variants of the blockwise attention kernel (a file per precision so that nvcc builds
// the two halves of the 16 variants in parallel).
#include "block_attention.cuh"
#include "block_attention_variants.hpp"

namespace stripesim::validate::gpu {

cudaError_t dispatch_block_attention_bf16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream) {
  return dispatch_block_attention<__nv_bfloat16>(shape, args, stream);
}

}  // namespace stripesim::validate::gpu
