#pragma once
// Fault injection for the GPU backends' failure paths, read from the environment on every run so
// that tests on a GPU machine can set it per test:
//   STRIPESIM_INJECT_FAULT=oom          the run's first device allocation asks for 1 TiB, so the
//                                       out-of-memory path (DeviceFailure naming the cudaMalloc)
//                                       runs on any GPU;
//   STRIPESIM_INJECT_FAULT=skip-send:R  (nccl) rank R does not post its ncclSend in round 0 of
//                                       every pass after the first: its successor's ncclRecv never
//                                       completes, so the timeout path runs (every communicator
//                                       aborted, DeviceFailure naming the rank that did not complete
//                                       and the transfer). The first pass (give a warm-up) runs
//                                       whole because NCCL connects a pair of ranks inside their
//                                       first send/recv group: a send missing there leaves the two
//                                       ranks disagreeing on the connection, a bootstrap error or
//                                       hang on the host, not the kernel-side hang to be tested.
// Unset or empty: no fault. Anything else is an InputError, so a typo cannot silently test nothing.
#include <optional>

#include <string_view>

#include "stripesim/validate/ring_backend.hpp"
#include "stripesim/validate/ring_case.hpp"

namespace stripesim::validate::gpu {

struct InjectedFault {
  bool oom = false;
  std::optional<Count> skip_send_rank;
};

[[nodiscard]] InjectedFault injected_fault();

// Refuses (InputError) a fault the run would never reach, so that a test cannot pass without
// injecting it: skip-send into a backend other than nccl, or into a run of a single pass.
void check_fault_reached(const InjectedFault& fault, std::string_view backend, const RunOptions& options);

// The size the injected out-of-memory allocation asks for.
inline constexpr std::int64_t kInjectedAllocationBytes = std::int64_t{1} << 40;

}  // namespace stripesim::validate::gpu
