#pragma once
// The small kernels of the GPU dense reference (gpu_reference.cpp does the rest with cuBLAS):
// widening the rounded inputs to fp32, the masked softmax of a chunk of score rows, and for the
// gradients the per-row dots and the softmax's backward. Plain
// C++ over the CUDA runtime API; each returns its launch's error.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "stripesim/validate/ring_case.hpp"

namespace stripesim::validate::gpu {

// dst[i] = float(src[i]) for `count` values of `precision` (bf16 or fp16, 2 bytes each).
[[nodiscard]] cudaError_t launch_widen_to_fp32(const void* src, Precision precision, float* dst, std::int64_t count,
                                               cudaStream_t stream);

// Softmax in place over `rows` columns of `scores`, each `keys` contiguous fp32 scores (already
// scaled) of keys first_key .. first_key + keys - 1. Row r sees only keys in
// [lowest[r], highest[r]]: its probabilities are written there and zeros everywhere else, so the
// next product with V sums exactly the allowed keys. A row that sees no key is all zeros.
[[nodiscard]] cudaError_t launch_masked_softmax(float* scores, std::int64_t rows, std::int64_t keys,
                                                std::int64_t first_key, const std::int64_t* lowest,
                                                const std::int64_t* highest, cudaStream_t stream);

// out[r] = sum_i a[r * ld + i] * b[r * ld + i] for `rows` rows of `dim` values (delta = rowsum(dO * O)).
[[nodiscard]] cudaError_t launch_row_dots(const float* a, const float* b, std::int64_t rows, int dim, std::int64_t ld,
                                          float* out, cudaStream_t stream);

// The softmax's backward in place over `rows` columns of `keys` contiguous values:
// grads = probs * (grads - delta[row]) * scale, turning dP into dS (scale folded in, so the
// products with K and Q that follow need none).
[[nodiscard]] cudaError_t launch_softmax_backward(const float* probs, float* grads, std::int64_t rows, std::int64_t keys,
                                                  const float* delta, float scale, cudaStream_t stream);

}  // namespace stripesim::validate::gpu
