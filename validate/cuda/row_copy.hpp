#pragma once
// The copies of the all-gather and Ulysses on one GPU (cuda_collectives.cpp): rows of one buffer
// into rows of another, each row a slice of heads, with the row either side optionally taken
// from an index array on the device. That is what an all-to-all does to the tokens of one device
// (its heads of each token, to their place in the whole sequence) and back, without a copy per
// row from the host. Plain C++ over the CUDA runtime API.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "stripesim/validate/ring_case.hpp"

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

// A buffer of rows seen as a slice of each row: `row_bytes` from `offset` of every `pitch` bytes
// (the heads of one device in a [tokens][heads][head_dim] buffer; a dense buffer is the slice
// whose pitch is its row).
struct RowSlice {
  void* base = nullptr;
  std::int64_t pitch = 0;
  std::int64_t offset = 0;
  std::int64_t row_bytes = 0;
  [[nodiscard]] static RowSlice dense(void* base, std::int64_t row_bytes) { return {base, row_bytes, 0, row_bytes}; }
};

// `rows` rows from one slice to another of the same row size, row i of `from` at from_rows[i]
// and of `to` at to_rows[i] (i where null).
[[nodiscard]] inline RowCopy slice_copy(const RowSlice& from, const std::int64_t* from_rows, const RowSlice& to,
                                        const std::int64_t* to_rows, std::int64_t rows) {
  return {from.base, from.pitch, from.offset, from_rows, to.base, to.pitch, to.offset, to_rows, from.row_bytes, rows};
}

// Enqueues `copy` on `stream` in 16-byte words; cudaErrorInvalidValue when a pointer, pitch,
// offset or the row size is not a multiple of 16 bytes (a head of 64 or 128 elements of 2 or
// 4 bytes always is) or a size is negative.
[[nodiscard]] cudaError_t launch_copy_rows(const RowCopy& copy, cudaStream_t stream);

// The same, a failure a DeviceFailure of ring device `rank` naming "launch of the row copies of
// the <what>".
void enqueue_copy_rows(const RowCopy& copy, cudaStream_t stream, Count rank, const std::string& what);

}  // namespace stripesim::validate::gpu
