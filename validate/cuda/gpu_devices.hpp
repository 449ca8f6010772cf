#pragma once
// What the GPU backends ask about the machine before touching a device.
#include <string>

#include "stripesim/validate/block_attention.hpp"
#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate::gpu {

// The number of visible CUDA devices; none (or no driver) is a DeviceFailure of rank 0,
// operation "cudaGetDeviceCount", detail "no CUDA device is visible: ...".
[[nodiscard]] int visible_gpus();

// cudaGetDeviceProperties' name of `device`, or a note saying why there is none. Never throws.
[[nodiscard]] std::string gpu_name(int device) noexcept;

// Makes `device` current, checks that the kernel variant fits its shared memory and raises the
// variant's shared memory limit there. Failures are DeviceFailures of `rank`.
void prepare_gpu(int device, const KernelShape& shape, Count rank);

// Throws model::InputError for options no backend can honour (no timed iteration, a timeout
// that is not positive).
void check_run_options(const RunOptions& options);

}  // namespace stripesim::validate::gpu
