#pragma once
// The nccl backend's launch under mpirun or srun (one process per GPU): the rank takes the GPU of
// its place among the ranks of its node, rank 0 creates the NCCL unique id and broadcasts it over
// MPI, and every rank joins one communicator over all ranks. Written and compiled without a GPU:
// it has not yet run (README.md, "Over MPI ranks").
#include "nccl_common.hpp"

namespace stripesim::validate::gpu {

struct LocalGpu {
  int local_rank = 0;  // among the ranks of this node, in world order
  int device = 0;      // the CUDA device it takes (made current)
};

// Call after MPI_Init. mpirun and srun place a node's ranks together; where the launcher gives
// each rank one GPU (CUDA_VISIBLE_DEVICES per rank) every rank takes device 0. Failures are
// DeviceFailures of `rank`.
[[nodiscard]] LocalGpu take_local_gpu(int rank);

// Adds this rank's communicator over all `ranks` to `comms` (made with first_rank = rank):
// nonblocking, as in the one-process nccl backend, so a peer that never joins is polled until
// `timeout_s` and aborted, never waited on. The id's broadcast is bounded the same way.
void join_communicator(Communicators& comms, int rank, int ranks, double timeout_s);

}  // namespace stripesim::validate::gpu
