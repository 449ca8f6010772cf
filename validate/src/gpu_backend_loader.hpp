#pragma once
// The GPU backends of the executable, from a module loaded on first use (gpu_backend_loader.cpp).
#include <memory>
#include <string_view>

#include "stripesim/validate/ring_backend.hpp"

// The module's one exported function (validate/cuda/gpu_backend_module.cpp): the backend
// make_backend(name) makes for "cuda" or "nccl", owned by the caller; it throws as make_backend.
extern "C" stripesim::validate::RingBackend* stripesim_make_gpu_backend(const char* name);

namespace stripesim::validate {

// The name dlsym looks that function up by.
inline constexpr const char* kGpuBackendSymbol = "stripesim_make_gpu_backend";

// make_backend("cuda" or "nccl") through the module; an InputError naming the module when it
// cannot be loaded.
[[nodiscard]] std::unique_ptr<RingBackend> load_gpu_backend(std::string_view name);

}  // namespace stripesim::validate
