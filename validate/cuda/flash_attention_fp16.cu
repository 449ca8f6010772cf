// The fp16 variants of the flash kernel (a file per precision and kernel, so that nvcc builds
// them in parallel).
#include "block_attention_variants.hpp"
#include "flash_attention.cuh"

namespace stripesim::validate::gpu {

cudaError_t dispatch_flash_attention_fp16(const KernelShape& shape, const BlockAttentionArgs* args,
                                          cudaStream_t stream) {
  return dispatch_flash_attention<__half>(shape, args, stream);
}

}  // namespace stripesim::validate::gpu
