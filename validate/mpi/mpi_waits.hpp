#pragma once
// Every wait of the mpi backend goes through wait_within: it polls (MPI_Test) instead of blocking,
// so that a peer which never answers is noticed at the --timeout deadline instead of hanging the
// job. The rank that notices tells every other rank (a failure notice message), prints one line
// naming the peer and the operation, and aborts the job with exit code 3 (MPI_Abort); a rank
// that receives the notice prints the same line (when several notice, all print the one whose
// wait began first: the rank that stopped). No rank returns normally afterwards, so no rank
// writes a partial report.
#include <mpi.h>

#include <chrono>
#include <span>
#include <string>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate::mpi {

using Clock = std::chrono::steady_clock;

// Exit code of a job ended by a failed or hung rank: the CLI's device-failure code.
inline constexpr int kExitDeviceFailure = 3;

// True once every request completed (MPI_Testall; progresses the transfers).
[[nodiscard]] bool test_all(std::span<MPI_Request> requests);

// Waits for `requests`, posted at `posted`, until `posted + timeout_s`. Past it, ends the job
// naming `peer` (the rank the wait depends on) and `operation` ("hand-off of round 1's K/V block
// to rank 3"). A failure notice from another rank ends it too, with that rank's line.
void wait_within(std::span<MPI_Request> requests, Clock::time_point posted, double timeout_s, int peer,
                 const std::string& operation);

// Ends the job for a failure this rank found itself (a GPU error, a transfer past its deadline)
// the way an expired wait does: every rank prints `failure`'s line, exit code 3. `posted`: when
// the failed operation began.
[[noreturn]] void end_job(const DeviceFailure& failure, Clock::time_point posted);

// Ends this rank if another rank's failure notice has arrived (call it in every polling loop
// that does not go through wait_within).
void take_failure_notice();

// Before a collective (`operation`: "all-gather of iteration 0's K/V blocks"): every rank tells
// every other one it has arrived (an empty message) and waits for each of theirs by name. A
// collective cannot say which member is missing; this names the rank that never reaches it the way
// a ring names a missing hand-off ("rank 2: arrival at the all-gather of ... failed"). Every
// member is ready when it returns, which is when the simulator starts a collective.
void meet(const std::string& operation, double timeout_s);

}  // namespace stripesim::validate::mpi
