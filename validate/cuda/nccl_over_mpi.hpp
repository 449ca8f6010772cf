#pragma once
// NEVER RUN: written and compiled on a machine without a GPU (issue 17); no test exercises it.
// The launch the nccl backend needs under mpirun or srun (one process per GPU): MPI already runs,
// rank 0 creates the NCCL unique id and broadcasts it over MPI, every rank binds the GPU of its
// rank within its node and joins one communicator over all ranks. Not yet used by the nccl
// backend, which still drives every GPU from one process.
#include <nccl.h>

namespace stripesim::validate::gpu {

struct NcclOverMpi {
  ncclComm_t comm = nullptr;
  int rank = 0;        // in MPI_COMM_WORLD = in the communicator = the ring device it plays
  int ranks = 1;
  int local_rank = 0;  // among the ranks of its node: which GPU it takes
};

// Call after MPI_Init. Every wait (the broadcast, the nonblocking communicator set-up) is bounded
// by `timeout_s`: past it, a DeviceFailure names the rank and the operation (and the MPI wait
// ends the job the way the mpi backend's waits do).
[[nodiscard]] NcclOverMpi init_nccl_over_mpi(double timeout_s);

// ncclCommDestroy; the communicator is unusable afterwards.
void finalize_nccl_over_mpi(NcclOverMpi& nccl);

}  // namespace stripesim::validate::gpu
