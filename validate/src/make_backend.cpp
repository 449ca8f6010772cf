// The one place that knows which backends this build has: the CPU backend always, the GPU
// backends when CMake found the CUDA toolkit (and NCCL), the mpi backend when it found MPI.
// Compiled twice: linking the GPU backends (the library stripesim::validate_backends, and the
// module that holds them), and, for the executable, loading that module when one is asked for
// (STRIPESIM_GPU_MODULE_FROM_BIN, gpu_backend_loader.hpp).
#include <fmt/format.h>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/validate/cpu_backend.hpp"
#include "stripesim/validate/ring_backend.hpp"
#if defined(STRIPESIM_GPU_MODULE_FROM_BIN)
#include "gpu_backend_loader.hpp"
#elif defined(STRIPESIM_WITH_CUDA)
#include "stripesim/validate/gpu_backends.hpp"
#endif
#ifdef STRIPESIM_WITH_MPI
#include "stripesim/validate/mpi_backend.hpp"
#endif

namespace stripesim::validate {

std::vector<std::string> built_backends() {
  std::vector<std::string> names{"cpu"};
#if defined(STRIPESIM_WITH_CUDA) || defined(STRIPESIM_GPU_MODULE_FROM_BIN)
  names.insert(names.end(), {"cuda", "nccl"});
#endif
#ifdef STRIPESIM_WITH_MPI
  names.emplace_back("mpi");
#endif
  return names;
}

std::unique_ptr<RingBackend> make_backend(std::string_view name) {
  if (name == "cpu") return make_cpu_backend();
#if defined(STRIPESIM_GPU_MODULE_FROM_BIN)
  if (name == "cuda" || name == "nccl") return load_gpu_backend(name);
#elif defined(STRIPESIM_WITH_CUDA)
  if (name == "cuda") return make_cuda_backend();
  if (name == "nccl") {
    if (!launched_as_mpi_rank()) return make_nccl_backend();
#if defined(STRIPESIM_WITH_NCCL) && defined(STRIPESIM_WITH_MPI)
    return make_nccl_rank_backend();
#else
    throw model::InputError(
        "--backend nccl: started as one rank of an MPI job (mpirun, srun), but this stripesim was built without MPI or "
        "NCCL (apt-get install openmpi-bin libopenmpi-dev, then configure again), or run it without the launcher");
#endif
  }
#else
  if (name == "cuda" || name == "nccl") {
    throw model::InputError(fmt::format(
        "--backend {}: this stripesim was built without the CUDA toolkit (configure with nvcc on the PATH or "
        "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)",
        name));
  }
#endif
#ifdef STRIPESIM_WITH_MPI
  if (name == "mpi") return make_mpi_backend();
#else
  if (name == "mpi") {
    throw model::InputError(
        "--backend mpi: this stripesim was built without MPI (apt-get install openmpi-bin libopenmpi-dev, then configure again)");
  }
#endif
  throw model::InputError(fmt::format("--backend '{}': expected cpu, cuda, nccl or mpi", name));
}

}  // namespace stripesim::validate
