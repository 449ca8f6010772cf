#pragma once
// What both NCCL ring backends share (nccl_backend.cpp: every GPU driven by this one process;
// nccl_rank_backend.cpp: one process per GPU under an MPI launcher): the communicators, their
// polling and abort, NCCL groups that always end, and a timed operation's two events.
#include <fmt/format.h>
#include <nccl.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device_resources.hpp"

namespace stripesim::validate::gpu {

inline std::string nccl_detail(ncclResult_t status, ncclComm_t comm) {
  const char* last = ncclGetLastError(comm);
  if (last == nullptr || *last == '\0') return ncclGetErrorString(status);
  return fmt::format("{} ({})", ncclGetErrorString(status), last);
}

struct TimedOp {
  Event start, end;
  bool launched = false;  // kernels: false where the host skipped the block (0 us)
};

// The communicators this process drives: all of the ring's, or its own one. Ranks in failures are
// `first_rank` + the communicator's index. Destruction finalizes them cleanly when the run ended
// well and aborts them otherwise.
class Communicators {
 public:
  Communicators() = default;
  explicit Communicators(Count first_rank) : first_rank_(first_rank) {}
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  ~Communicators() {
    if (!comms_.empty() && !aborted_) shut_down();
  }

  [[nodiscard]] std::vector<ncclComm_t>& comms() { return comms_; }
  [[nodiscard]] ncclComm_t operator[](Count rank) const { return comms_[static_cast<std::size_t>(rank)]; }

  // Aborts every communicator: in-flight NCCL kernels stop, nothing waits for a dead peer.
  void abort_all() noexcept {
    if (aborted_) return;
    aborted_ = true;
    for (ncclComm_t comm : comms_) {
      // Nothing useful can be done if the abort itself fails: the run is already failing.
      if (comm != nullptr) static_cast<void>(ncclCommAbort(comm));
    }
  }

  // Polls every communicator until none is ncclInProgress (a nonblocking call has finished
  // its host-side work). An error, or the deadline, aborts them all and throws.
  void wait_ready(const Deadline& deadline, const std::function<std::string(Count)>& operation) {
    for (std::size_t rank = 0; rank < comms_.size(); ++rank) {
      for (;;) {
        ncclResult_t state = ncclSuccess;
        const ncclResult_t status = ncclCommGetAsyncError(comms_[rank], &state);
        if (status != ncclSuccess) state = status;
        if (state == ncclSuccess) break;
        const auto r = first_rank_ + static_cast<Count>(rank);
        if (state != ncclInProgress) {
          const std::string detail = nccl_detail(state, comms_[rank]);
          abort_all();
          throw DeviceFailure(r, operation(r), detail);
        }
        if (deadline.passed()) {
          abort_all();
          throw DeviceFailure(r, operation(r), gpu::timeout_detail(deadline) + "; every communicator was aborted");
        }
        gpu::poll_pause();
      }
    }
  }

  // The first rank whose communicator reports an asynchronous error, with the error.
  [[nodiscard]] std::optional<std::pair<Count, std::string>> async_error() const {
    for (std::size_t rank = 0; rank < comms_.size(); ++rank) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t status = ncclCommGetAsyncError(comms_[rank], &state);
      if (status != ncclSuccess) state = status;
      if (state != ncclSuccess && state != ncclInProgress) {
        return std::pair{first_rank_ + static_cast<Count>(rank), nccl_detail(state, comms_[rank])};
      }
    }
    return std::nullopt;
  }

 private:
  void shut_down() noexcept {
    // Finalize flushes outstanding work; nonblocking, so poll it briefly, and abort what does
    // not finish (a destructor must not hang either).
    const Deadline deadline = Deadline::after(10);
    bool clean = true;
    for (ncclComm_t comm : comms_) {
      if (comm == nullptr) continue;
      const ncclResult_t status = ncclCommFinalize(comm);
      if (status != ncclSuccess && status != ncclInProgress) clean = false;
    }
    for (ncclComm_t comm : comms_) {
      if (comm == nullptr || !clean) continue;
      ncclResult_t state = ncclInProgress;
      while (clean) {
        if (ncclCommGetAsyncError(comm, &state) != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
          clean = false;
        } else if (state == ncclSuccess) {
          break;
        } else if (deadline.passed()) {
          clean = false;
        } else {
          gpu::poll_pause();
        }
      }
    }
    if (!clean) {
      abort_all();
      return;
    }
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) static_cast<void>(ncclCommDestroy(comm));
    }
    comms_.clear();
  }

  std::vector<ncclComm_t> comms_;
  Count first_rank_ = 0;
  bool aborted_ = false;
};

// Ends an NCCL group on every path: an exception between ncclGroupStart and ncclGroupEnd would
// otherwise leave this thread inside the group for every later NCCL call.
class GroupScope {
 public:
  GroupScope(Count rank, const std::string& operation) {
    const ncclResult_t status = ncclGroupStart();
    if (status != ncclSuccess) throw DeviceFailure(rank, "ncclGroupStart for " + operation, ncclGetErrorString(status));
  }
  GroupScope(const GroupScope&) = delete;
  GroupScope& operator=(const GroupScope&) = delete;
  // ncclGroupEnd's status: ncclSuccess, ncclInProgress (nonblocking) or an error.
  [[nodiscard]] ncclResult_t end() {
    open_ = false;
    return ncclGroupEnd();
  }
  ~GroupScope() {
    if (open_) static_cast<void>(ncclGroupEnd());  // unwinding: the error being thrown is the one to report
  }

 private:
  bool open_ = true;
};

// One process driving all `devices` GPUs (the nccl backend's ring and collectives): one
// nonblocking communicator per device, made inside one NCCL group (rank d's with GPU d current:
// `make_current(d)`), then polled until ready within the deadline. Failures abort them all.
inline void init_communicators_in_process(Communicators& comms, Count devices, const std::function<void(Count)>& make_current,
                                          const Deadline& deadline) {
  ncclUniqueId id;
  const ncclResult_t status = ncclGetUniqueId(&id);
  if (status != ncclSuccess) throw DeviceFailure(0, "ncclGetUniqueId", ncclGetErrorString(status));
  comms.comms().assign(static_cast<std::size_t>(devices), nullptr);
  try {
    GroupScope group(0, "ncclCommInitRankConfig");
    for (Count d = 0; d < devices; ++d) {
      make_current(d);
      // Nonblocking: no later NCCL call can block this thread; a hang is polled and aborted.
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      const ncclResult_t init = ncclCommInitRankConfig(&comms.comms()[static_cast<std::size_t>(d)], static_cast<int>(devices),
                                                       id, static_cast<int>(d), &config);
      if (init != ncclSuccess && init != ncclInProgress) {
        throw DeviceFailure(d, "ncclCommInitRankConfig", ncclGetErrorString(init));
      }
    }
    const ncclResult_t end = group.end();
    if (end != ncclSuccess && end != ncclInProgress) {
      comms.abort_all();
      throw DeviceFailure(0, "ncclGroupEnd of ncclCommInitRankConfig", ncclGetErrorString(end));
    }
  } catch (...) {
    comms.abort_all();  // half-made communicators cannot be finalized
    throw;
  }
  comms.wait_ready(deadline, [](Count) { return std::string("ncclCommInitRankConfig"); });
}

}  // namespace stripesim::validate::gpu
