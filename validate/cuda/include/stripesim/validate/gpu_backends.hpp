#pragma once
// The GPU backends of the validator (validate/cuda): `cuda` runs all N ring devices on one GPU
// (device 0) one after another, `nccl` gives every ring device its own GPU and moves K/V with
// ncclSend/ncclRecv while the next block computes. Both compute in bf16 or fp16 with fp32
// accumulation. This header is plain C++: host code includes it without the CUDA toolkit.
#include <memory>
#include <vector>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate {

[[nodiscard]] std::unique_ptr<RingBackend> make_cuda_backend();
// Throws model::InputError when this build found no NCCL.
[[nodiscard]] std::unique_ptr<RingBackend> make_nccl_backend();
#if defined(STRIPESIM_WITH_NCCL) && defined(STRIPESIM_WITH_MPI)
// The nccl backend when an MPI launcher started this process as one rank of the ring
// (validate/cuda/nccl_rank_backend.cpp): its own GPU, one communicator over all ranks, rank 0
// gathering the times and the output. Initialises MPI unless it already is.
[[nodiscard]] std::unique_ptr<RingBackend> make_nccl_rank_backend();
#endif

// CUDA devices visible to this process; 0 when there is no driver or no device. Never throws.
[[nodiscard]] int gpu_count() noexcept;
// Whether GPU 0 is a Hopper GPU (compute capability 9.0), the only one the wgmma kernel runs on.
// False without a GPU. Never throws.
[[nodiscard]] bool gpu_is_hopper() noexcept;

// The tiles the CUDA kernel itself classified at every [round * devices + device] (one head's
// count; every head sees the same tiles): active tiles it computed and, of those, partial tiles
// it masked element by element. Runs the ring once on GPU 0. Lets tests hold the kernel to the
// work model's active_tiles and partial_tiles at the same tile shape.
struct KernelTileCounts {
  std::vector<Count> active;
  std::vector<Count> partial;
};
[[nodiscard]] KernelTileCounts count_kernel_tiles(const RingProblem& problem);

// Dense attention of `problem` on GPU 0 in fp32 with cuBLAS, in original order
// [(p * heads + h) * head_dim + i]: the GPU backends' dense_reference. The inputs are rounded to
// the case's precision first (what the ring computes on). Each device wait is bounded by
// `timeout_s`; failures are DeviceFailures of rank 0 naming the operation. Costs about
// 4 n^2 head_dim heads FLOPs for a bidirectional mask (half that causal) at fp32 SGEMM rate.
// `chunk_rows`: query rows per chunk, 0 for gpu_reference_chunk_rows(seq_len); tests pass fewer
// to run several chunks (and their key ranges) on a small problem.
[[nodiscard]] std::vector<double> gpu_reference_attention(const RingProblem& problem, double timeout_s,
                                                          Count chunk_rows = 0);
// The gradients of a backward case the same way (reference_gradients's layout: dQ, then dK and
// dV), dO rounded like the inputs; about two and a half times the output's FLOPs.
[[nodiscard]] std::vector<double> gpu_reference_gradients(const RingProblem& problem, double timeout_s,
                                                          Count chunk_rows = 0);
// Query rows per chunk by default: one head's fp32 scores of a chunk stay within 1 GiB.
[[nodiscard]] Count gpu_reference_chunk_rows(Count seq_len);

}  // namespace stripesim::validate
