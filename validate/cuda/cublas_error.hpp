#pragma once
// check_cuda's counterpart for cuBLAS, whose calls return their own status type: a failure is a
// DeviceFailure naming the rank and the operation, with cuBLAS's description of the status.
#include <cublas_v2.h>

#include "gpu_error.hpp"

namespace stripesim::validate::gpu {

template <typename Operation>
void check_cublas(cublasStatus_t status, Count rank, Operation&& operation) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    // A failed launch inside cuBLAS can leave a non-sticky error in the runtime's last-error
    // slot: clear it, as check_cuda does, so the next launch is not blamed for it.
    static_cast<void>(cudaGetLastError());
    throw DeviceFailure(rank, describe(operation), cublasGetStatusString(status));
  }
}

}  // namespace stripesim::validate::gpu
