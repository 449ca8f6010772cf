// NEVER RUN: see nccl_over_mpi.hpp.
#include "nccl_over_mpi.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <mpi.h>

#include <chrono>
#include <thread>

#include "gpu_error.hpp"
#include "mpi_waits.hpp"

namespace stripesim::validate::gpu {

NcclOverMpi init_nccl_over_mpi(double timeout_s) {
  NcclOverMpi out;
  MPI_Comm_rank(MPI_COMM_WORLD, &out.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &out.ranks);
  // The ranks sharing this node, in world order: the i-th takes GPU i (mpirun and srun both place
  // a node's ranks together; CUDA_VISIBLE_DEVICES set per rank by the launcher leaves GPU 0).
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, out.rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &out.local_rank);
  MPI_Comm_free(&node);
  int gpus = 0;
  check_cuda(cudaGetDeviceCount(&gpus), out.rank, "cudaGetDeviceCount");
  if (gpus == 0) throw DeviceFailure(out.rank, "cudaGetDeviceCount", "no GPU on this node");
  const int device = out.local_rank % gpus;
  check_cuda(cudaSetDevice(device), out.rank, [&] { return fmt::format("cudaSetDevice({})", device); });

  ncclUniqueId id;
  if (out.rank == 0) {
    const ncclResult_t status = ncclGetUniqueId(&id);
    if (status != ncclSuccess) throw DeviceFailure(0, "ncclGetUniqueId", ncclGetErrorString(status));
  }
  MPI_Request broadcast;
  MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD, &broadcast);
  mpi::wait_within({&broadcast, 1}, mpi::Clock::now(), timeout_s, 0, "broadcast of the NCCL unique id");

  // Nonblocking, as in the one-process nccl backend: a peer that never joins is polled, not waited on.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t init = ncclCommInitRankConfig(&out.comm, out.ranks, id, out.rank, &config);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (init == ncclInProgress || (init == ncclSuccess && out.comm != nullptr)) {
    ncclResult_t state = ncclSuccess;
    init = ncclCommGetAsyncError(out.comm, &state);
    if (init != ncclSuccess) break;
    if (state == ncclSuccess) return out;
    if (state != ncclInProgress) {
      init = state;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ncclCommAbort(out.comm);
      throw DeviceFailure(out.rank, "ncclCommInitRankConfig", fmt::format("not ready within {} s", timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (out.comm != nullptr) ncclCommAbort(out.comm);
  throw DeviceFailure(out.rank, "ncclCommInitRankConfig", ncclGetErrorString(init));
}

void finalize_nccl_over_mpi(NcclOverMpi& nccl) {
  if (nccl.comm != nullptr) ncclCommDestroy(nccl.comm);
  nccl.comm = nullptr;
}

}  // namespace stripesim::validate::gpu
