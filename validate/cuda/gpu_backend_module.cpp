// The GPU backends as a loadable module: the executable opens it when `validate --backend
// cuda|nccl` asks for one (validate/src/gpu_backend_loader.cpp), so that only those runs load
// cuBLAS. What it makes is make_backend's own backend, the one the library links directly.
#include "gpu_backend_loader.hpp"

// The one symbol the module exports (the rest is hidden: the target's visibility preset and
// --exclude-libs). C linkage for dlsym's plain name; exceptions still reach the caller, which
// catches them by type as it would from a direct call.
extern "C" __attribute__((visibility("default"))) stripesim::validate::RingBackend* stripesim_make_gpu_backend(const char* name) {
  return stripesim::validate::make_backend(name).release();
}
