// The bf16 variants of the wgmma kernel (compiled for sm_90a only: see CMakeLists.txt).
#include "block_attention_variants.hpp"
#include "wgmma_attention.cuh"

namespace stripesim::validate::gpu {

cudaError_t dispatch_wgmma_attention_bf16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream) {
  return dispatch_wgmma_attention<__nv_bfloat16>(shape, args, stream);
}

}  // namespace stripesim::validate::gpu
