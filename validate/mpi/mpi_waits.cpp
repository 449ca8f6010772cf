#include "mpi_waits.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <thread>
#include <vector>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate::mpi {
namespace {

// A tag no data message uses: the failure notice, a line of text.
constexpr int kFailureTag = 999;
constexpr int kNoticeChars = 512;

// How long a rank that printed its line keeps running so that the notices reach every rank and
// each prints before MPI_Abort has mpirun kill the job.
constexpr std::chrono::milliseconds kGrace{1000};

void print_line(const char* message) {
  fmt::print(stderr, "stripesim: error: {}\n", message);
  std::fflush(stderr);
}

[[noreturn]] void abort_job() {
  MPI_Abort(MPI_COMM_WORLD, kExitDeviceFailure);
  std::_Exit(kExitDeviceFailure);  // MPI_Abort does not return; this is for the compiler
}

// This rank saw the failure first: notices to every other rank, its own line, the grace, abort.
[[noreturn]] void fail_job(const std::string& message) {
  static std::array<char, kNoticeChars> notice{};  // alive until the abort: the sends read it
  const std::string text = message.substr(0, kNoticeChars - 1);
  std::copy(text.begin(), text.end(), notice.begin());
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<MPI_Request> sends;
  for (int other = 0; other < size; ++other) {
    if (other == rank) continue;
    sends.emplace_back();
    MPI_Isend(notice.data(), static_cast<int>(text.size()) + 1, MPI_CHAR, other, kFailureTag, MPI_COMM_WORLD,
              &sends.back());
  }
  print_line(notice.data());
  const auto until = Clock::now() + kGrace;
  while (Clock::now() < until) {  // keep progressing the notices (a hung rank never takes its own)
    (void)test_all(sends);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  abort_job();
}

// Another rank's failure notice, if one arrived: print its line and wait for the abort.
void take_failure_notice() {
  int arrived = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, MPI_COMM_WORLD, &arrived, &status);
  if (arrived == 0) return;
  std::array<char, kNoticeChars> notice{};
  MPI_Recv(notice.data(), kNoticeChars, MPI_CHAR, status.MPI_SOURCE, kFailureTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  notice.back() = '\0';
  print_line(notice.data());
  std::this_thread::sleep_for(2 * kGrace);  // the noticing rank aborts the job meanwhile
  abort_job();
}

}  // namespace

bool test_all(std::span<MPI_Request> requests) {
  int done = 0;
  MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
  return done != 0;
}

void wait_within(std::span<MPI_Request> requests, Clock::time_point posted, double timeout_s, int peer,
                 const std::string& operation) {
  const auto deadline = posted + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  // Spin (yielding) for a while, then sleep between polls: with more ranks than cores
  // (--oversubscribe) a waiting rank must not take the core a computing rank needs.
  const auto spin_until = Clock::now() + std::chrono::milliseconds(1);
  while (!test_all(requests)) {
    take_failure_notice();
    const auto now = Clock::now();
    if (now > deadline) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      fail_job(DeviceFailure(peer, operation, fmt::format("no answer within {} s (noticed by rank {})", timeout_s, rank)).what());
    }
    if (now < spin_until) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

}  // namespace stripesim::validate::mpi
