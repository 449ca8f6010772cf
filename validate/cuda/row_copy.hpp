#pragma once
// The copies of the all-gather and Ulysses on one GPU (cuda_collectives.cpp): rows of one buffer
// into rows of another, each row a slice of heads, with the row either side optionally taken
// from an index array on the device. That is what an all-to-all does to the tokens of one device
// (its heads of each token, to their place in the whole sequence) and back, without a copy per
// row from the host. Plain C++ over the CUDA runtime API.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace stripesim::validate::gpu {

struct RowCopy {
  // Row i copies `row_bytes` from src + src_row * src_pitch + src_offset to
  // dst + dst_row * dst_pitch + dst_offset, where src_row = src_rows[i] (i when null) and
  // dst_row = dst_rows[i] (likewise), for i in [0, rows).
  const void* src = nullptr;
  std::int64_t src_pitch = 0;
  std::int64_t src_offset = 0;
  const std::int64_t* src_rows = nullptr;
  void* dst = nullptr;
  std::int64_t dst_pitch = 0;
  std::int64_t dst_offset = 0;
  const std::int64_t* dst_rows = nullptr;
  std::int64_t row_bytes = 0;
  std::int64_t rows = 0;
};

// Enqueues `copy` on `stream` in 16-byte words; cudaErrorInvalidValue when a pointer, pitch,
// offset or the row size is not a multiple of 16 bytes (a head of 64 or 128 elements of 2 or
// 4 bytes always is) or a size is negative.
[[nodiscard]] cudaError_t launch_copy_rows(const RowCopy& copy, cudaStream_t stream);

}  // namespace stripesim::validate::gpu
