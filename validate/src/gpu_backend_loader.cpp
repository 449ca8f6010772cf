// The executable's GPU backends, loaded from their module when `--backend cuda|nccl` asks for
// one. Linked into the executable, cuBLAS's libraries initialised in every process, whatever the
// command: 0.3-0.6 s and 200 MB on a 2-core machine without a GPU, for `stripesim tms` as for a
// validation run. The module (validate/cuda/gpu_backend_module.cpp) holds the same backends as
// the library stripesim::validate_backends links directly, and hands one out through one C symbol.
#include "gpu_backend_loader.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "stripesim/model/io/executable_path.hpp"
#include "stripesim/model/io/input_error.hpp"

namespace stripesim::validate {
namespace {

// Where the module is: STRIPESIM_GPU_MODULE_FROM_BIN, relative to the executable's folder, holds
// for the build tree and an installed copy alike (the build puts the module where an install
// does, relative to the executable); without /proc, the build tree's absolute path.
std::filesystem::path gpu_module_path() {
  return model::beside_executable(STRIPESIM_GPU_MODULE_FROM_BIN).value_or(STRIPESIM_GPU_MODULE_BUILT_AT);
}

}  // namespace

std::unique_ptr<RingBackend> load_gpu_backend(std::string_view name) {
  const std::string path = gpu_module_path().string();
  // Loaded once for the process (dlopen counts the later calls) and never closed: the backends it
  // makes run its code until the process exits.
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    const char* error = dlerror();
    std::string_view why = error == nullptr ? "no reason given" : error;
    if (why.starts_with(path + ": ")) why.remove_prefix(path.size() + 2);  // glibc names the file first
    throw model::InputError(fmt::format("--backend {}: cannot load the GPU backends' module {} ({}); build it with the executable "
                                        "(cmake --build) or install both (cmake --install)",
                                        name, path, why));
  }
  // POSIX: a function's address from dlsym converts to a pointer to function.
  const auto make = reinterpret_cast<decltype(&stripesim_make_gpu_backend)>(dlsym(module, kGpuBackendSymbol));
  if (make == nullptr) {
    throw model::InputError(fmt::format("--backend {}: the GPU backends' module {} has no {} (a module of another build?)", name,
                                        path, kGpuBackendSymbol));
  }
  return std::unique_ptr<RingBackend>(make(std::string(name).c_str()));
}

}  // namespace stripesim::validate
