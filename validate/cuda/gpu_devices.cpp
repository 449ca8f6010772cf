#include "gpu_devices.hpp"

#include <fmt/format.h>

#include "gpu_error.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/validate/gpu_backends.hpp"

namespace stripesim::validate {

int gpu_count() noexcept {
  int count = 0;
  // Without a driver this returns an error (cudaErrorInsufficientDriver / cudaErrorNoDevice)
  // at once; either way there is nothing to run on.
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

namespace {

// A device's compute capability into major and minor; the first error of the two queries.
cudaError_t compute_capability(int device, int& major, int& minor) noexcept {
  const cudaError_t status = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  return status != cudaSuccess ? status : cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
}

// Hopper (H100, H200): the only compute capability the wgmma kernel is built for (sm_90a).
bool is_hopper(int major, int minor) noexcept { return major == 9 && minor == 0; }

}  // namespace

bool gpu_is_hopper() noexcept {
  int major = 0, minor = 0;
  return gpu_count() > 0 && compute_capability(0, major, minor) == cudaSuccess && is_hopper(major, minor);
}

namespace gpu {

int visible_gpus() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    throw DeviceFailure(0, "cudaGetDeviceCount", fmt::format("no CUDA device is visible: {}", cudaGetErrorString(status)));
  }
  if (count <= 0) throw DeviceFailure(0, "cudaGetDeviceCount", "no CUDA device is visible: the driver reports 0 devices");
  return count;
}

std::string gpu_name(int device) noexcept {
  try {
    cudaDeviceProp properties{};
    const cudaError_t status = cudaGetDeviceProperties(&properties, device);
    if (status != cudaSuccess) return fmt::format("(no CUDA device {}: {})", device, cudaGetErrorString(status));
    return properties.name;
  } catch (...) {
    return "(unknown CUDA device)";
  }
}

void prepare_gpu(int device, const KernelShape& shape, Count rank) {
  check_cuda(cudaSetDevice(device), rank, [&] { return fmt::format("cudaSetDevice({})", device); });
  int optin = 0;
  check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), rank,
             "cudaDeviceGetAttribute(max shared memory per block)");
  if (shape.kernel == GpuKernel::wgmma) {
    int major = 0, minor = 0;
    check_cuda(compute_capability(device, major, minor), rank, "cudaDeviceGetAttribute(compute capability)");
    if (!is_hopper(major, minor)) {
      throw model::InputError(fmt::format("--gpu-kernel wgmma: needs a Hopper GPU (compute capability 9.0); {} is {}.{} "
                                          "(use --gpu-kernel flash)",
                                          gpu_name(device), major, minor));
    }
  }
  const std::size_t needed = kernel_shared_bytes(shape);
  if (needed > static_cast<std::size_t>(optin)) {
    throw DeviceFailure(rank, "kernel shared memory check",
                        fmt::format("tile {}x{} at head_dim {} needs {} KiB of shared memory per block, {} allows "
                                    "{} KiB: use a smaller --tile",
                                    shape.tile.query, shape.tile.key, shape.head_dim, (needed + 1023) / 1024,
                                    gpu_name(device), optin / 1024));
  }
  check_cuda(prepare_block_attention(shape), rank, "cudaFuncSetAttribute(kernel dynamic shared memory)");
}

void check_run_options(const RunOptions& options) {
  if (options.iterations < 1) throw model::InputError(fmt::format("--iterations {}: at least 1", options.iterations));
  if (options.warmup < 0) throw model::InputError(fmt::format("--warmup {}: at least 0", options.warmup));
  if (!(options.timeout_s > 0)) throw model::InputError(fmt::format("--timeout {}: must be positive", options.timeout_s));
}

}  // namespace gpu
}  // namespace stripesim::validate
