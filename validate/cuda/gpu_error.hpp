#pragma once
// Every CUDA call of the GPU backends goes through check_cuda: a failure becomes a DeviceFailure
// naming the rank and what was being done. The operation is passed as a callable so that hot
// paths (a launch per round and device) format no text unless something failed.
#include <cuda_runtime_api.h>

#include <string>
#include <type_traits>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate::gpu {

template <typename Operation>
std::string describe(Operation&& operation) {
  if constexpr (std::is_invocable_v<Operation>) {
    return std::string(operation());
  } else {
    return std::string(operation);
  }
}

template <typename Operation>
void check_cuda(cudaError_t status, Count rank, Operation&& operation) {
  if (status != cudaSuccess) {
    // Reset the runtime's last-error slot: a non-sticky failure (an allocation too large) would
    // otherwise surface again at the next launch's cudaGetLastError, blaming the wrong operation.
    static_cast<void>(cudaGetLastError());
    throw DeviceFailure(rank, describe(operation), cudaGetErrorString(status));
  }
}

// "384 MiB", "12 KiB", "800 B": sizes in failure messages.
[[nodiscard]] std::string format_bytes(std::int64_t bytes);

}  // namespace stripesim::validate::gpu
