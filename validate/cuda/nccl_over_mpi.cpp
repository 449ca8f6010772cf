// Not yet run on a GPU: see nccl_over_mpi.hpp.
#include "nccl_over_mpi.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <mpi.h>

#include "gpu_error.hpp"
#include "mpi_waits.hpp"

namespace stripesim::validate::gpu {

LocalGpu take_local_gpu(int rank) {
  LocalGpu out;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local_ranks = 1;
  MPI_Comm_rank(node, &out.local_rank);
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  int gpus = 0;
  check_cuda(cudaGetDeviceCount(&gpus), rank, "cudaGetDeviceCount");
  if (gpus == 0) throw DeviceFailure(rank, "cudaGetDeviceCount", "no GPU is visible to this rank");
  // One GPU seen by each of several ranks is the launcher binding a GPU per rank (srun
  // --gpus-per-task, CUDA_VISIBLE_DEVICES per rank); several GPUs seen by more ranks than that
  // would put two ranks on one GPU, which NCCL refuses deep inside its initialisation.
  if (gpus > 1 && local_ranks > gpus) {
    throw DeviceFailure(rank, "cudaGetDeviceCount",
                        fmt::format("{} ranks on this node share its {} GPUs: launch one rank per GPU", local_ranks, gpus));
  }
  out.device = out.local_rank % gpus;
  check_cuda(cudaSetDevice(out.device), rank, [&] { return fmt::format("cudaSetDevice({})", out.device); });
  return out;
}

void join_communicator(Communicators& comms, int rank, int ranks, double timeout_s) {
  ncclUniqueId id;
  if (rank == 0) {
    const ncclResult_t status = ncclGetUniqueId(&id);
    if (status != ncclSuccess) throw DeviceFailure(0, "ncclGetUniqueId", ncclGetErrorString(status));
  }
  MPI_Request broadcast;
  MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD, &broadcast);
  mpi::wait_within({&broadcast, 1}, mpi::Clock::now(), timeout_s, 0, "broadcast of the NCCL unique id");

  const Deadline deadline = Deadline::after(timeout_s);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  comms.comms().assign(1, nullptr);
  const ncclResult_t init = ncclCommInitRankConfig(&comms.comms()[0], ranks, id, rank, &config);
  if (init != ncclSuccess && init != ncclInProgress) {
    comms.abort_all();
    throw DeviceFailure(rank, "ncclCommInitRankConfig", ncclGetErrorString(init));
  }
  comms.wait_ready(deadline, [](Count) { return std::string("ncclCommInitRankConfig"); });
}

}  // namespace stripesim::validate::gpu
