// The one place that knows which backends this build has: the CPU backend always, the GPU
// backends when CMake found the CUDA toolkit (and NCCL).
#include <fmt/format.h>

#include "stripesim/model/input_error.hpp"
#include "stripesim/validate/cpu_backend.hpp"
#include "stripesim/validate/ring_backend.hpp"
#ifdef STRIPESIM_WITH_CUDA
#include "stripesim/validate/gpu_backends.hpp"
#endif

namespace stripesim::validate {

std::vector<std::string> built_backends() {
#ifdef STRIPESIM_WITH_CUDA
  return {"cpu", "cuda", "nccl"};
#else
  return {"cpu"};
#endif
}

std::unique_ptr<RingBackend> make_backend(std::string_view name) {
  if (name == "cpu") return make_cpu_backend();
#ifdef STRIPESIM_WITH_CUDA
  if (name == "cuda") return make_cuda_backend();
  if (name == "nccl") return make_nccl_backend();
#else
  if (name == "cuda" || name == "nccl") {
    throw model::InputError(fmt::format(
        "--backend {}: this stripesim was built without the CUDA toolkit (configure with nvcc on the PATH or "
        "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)",
        name));
  }
#endif
  throw model::InputError(fmt::format("--backend '{}': expected cpu, cuda or nccl", name));
}

}  // namespace stripesim::validate
