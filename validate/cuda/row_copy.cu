#include "row_copy.hpp"

#include "gpu_error.hpp"

namespace stripesim::validate::gpu {
namespace {

constexpr std::int64_t kWord = 16;  // bytes a thread moves at once (uint4)
constexpr unsigned kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;  // a grid-stride loop covers any count

__global__ void copy_rows_kernel(RowCopy c) {
  const std::int64_t words_per_row = c.row_bytes / kWord;
  const std::int64_t words = words_per_row * c.rows;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < words; w += stride) {
    const std::int64_t i = w / words_per_row;
    const std::int64_t word = w - i * words_per_row;
    const std::int64_t src_row = c.src_rows != nullptr ? c.src_rows[i] : i;
    const std::int64_t dst_row = c.dst_rows != nullptr ? c.dst_rows[i] : i;
    const auto* from = reinterpret_cast<const uint4*>(static_cast<const char*>(c.src) + src_row * c.src_pitch + c.src_offset);
    auto* to = reinterpret_cast<uint4*>(static_cast<char*>(c.dst) + dst_row * c.dst_pitch + c.dst_offset);
    to[word] = from[word];
  }
}

bool aligned(std::int64_t bytes) { return bytes >= 0 && bytes % kWord == 0; }
bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kWord == 0; }

}  // namespace

cudaError_t launch_copy_rows(const RowCopy& copy, cudaStream_t stream) {
  if (!aligned(copy.src) || !aligned(copy.dst) || !aligned(copy.src_pitch) || !aligned(copy.dst_pitch) ||
      !aligned(copy.src_offset) || !aligned(copy.dst_offset) || !aligned(copy.row_bytes) || copy.rows < 0) {
    return cudaErrorInvalidValue;
  }
  const std::int64_t words = copy.row_bytes / kWord * copy.rows;
  if (words == 0) return cudaSuccess;
  static_cast<void>(cudaGetLastError());  // a stale error must not be blamed on this launch
  const std::int64_t needed = (words + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(needed > kMaxBlocks ? kMaxBlocks : needed);
  copy_rows_kernel<<<blocks, kThreads, 0, stream>>>(copy);
  return cudaGetLastError();
}

void enqueue_copy_rows(const RowCopy& copy, cudaStream_t stream, Count rank, const std::string& what) {
  check_cuda(launch_copy_rows(copy, stream), rank, [&] { return "launch of the row copies of the " + what; });
}

}  // namespace stripesim::validate::gpu
