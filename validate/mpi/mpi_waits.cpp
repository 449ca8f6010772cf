#include "mpi_waits.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate::mpi {
namespace {

// Tags no data message uses (mpi_measure.hpp's are below 100): the failure notice, a line of
// text, and the empty message of meet().
constexpr int kFailureTag = 999;
constexpr int kMeetTag = 998;
constexpr int kNoticeChars = 512;

// How long a rank keeps running after the failure so that the notices reach every rank and each
// prints before MPI_Abort has mpirun kill the job.
constexpr std::chrono::milliseconds kGrace{1000};
// Several ranks may time out: both neighbours of a hung rank, and ranks further on that wait on
// a rank that is itself waiting on the hung one. For this long every rank collects the notices
// and all print the one whose wait began first: a wait that depends on a stuck rank began after
// that rank's own wait did (it waits for something the stuck rank would have sent later), so the
// earliest wait names the rank that stopped. Times are steady_clock, one clock per node; across
// nodes they are not synchronised and a rank waiting on the stuck one may be named instead.
constexpr std::chrono::milliseconds kSettle{500};

struct Notice {
  double posted_s = 0;  // when the wait that expired began, steady_clock seconds
  int from = 0;         // the rank that noticed
  std::string line;
  [[nodiscard]] bool before(const Notice& other) const {
    return posted_s < other.posted_s || (posted_s == other.posted_s && from < other.from);
  }
};

// On the wire: the posting time, then the line, NUL-terminated.
constexpr size_t kLineOffset = sizeof(double);

// A failure notice that has arrived, if any.
std::optional<Notice> receive_notice() {
  int arrived = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, MPI_COMM_WORLD, &arrived, &status);
  if (arrived == 0) return std::nullopt;
  std::array<char, kNoticeChars> bytes{};
  MPI_Recv(bytes.data(), kNoticeChars, MPI_CHAR, status.MPI_SOURCE, kFailureTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  bytes.back() = '\0';
  Notice notice;
  std::memcpy(&notice.posted_s, bytes.data(), sizeof(double));
  notice.from = status.MPI_SOURCE;
  notice.line = bytes.data() + kLineOffset;
  return notice;
}

// Settles on one notice, prints it, keeps `sends` (this rank's own notices) moving through the
// grace, and ends the job.
[[noreturn]] void conclude(Notice chosen, std::span<MPI_Request> sends) {
  const auto settled = Clock::now() + kSettle;
  while (Clock::now() < settled) {
    (void)test_all(sends);
    while (auto other = receive_notice()) {
      if (other->before(chosen)) chosen = std::move(*other);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  fmt::print(stderr, "stripesim: error: {}\n", chosen.line);
  std::fflush(stderr);
  const auto until = Clock::now() + kGrace;
  while (Clock::now() < until) {  // a hung rank never takes its notice: do not wait for that send
    (void)test_all(sends);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  MPI_Abort(MPI_COMM_WORLD, kExitDeviceFailure);
  std::_Exit(kExitDeviceFailure);  // MPI_Abort does not return; this is for the compiler
}

double seconds(Clock::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// This rank's wait (begun at `posted`) expired: a notice to every other rank, then conclude.
[[noreturn]] void fail_job(const std::string& message, Clock::time_point posted) {
  static std::array<char, kNoticeChars> notice{};  // alive until the abort: the sends read it
  const std::string text = message.substr(0, kNoticeChars - kLineOffset - 1);
  const double posted_s = seconds(posted);
  std::memcpy(notice.data(), &posted_s, sizeof(double));
  std::copy(text.begin(), text.end(), notice.begin() + kLineOffset);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<MPI_Request> sends;
  for (int other = 0; other < size; ++other) {
    if (other == rank) continue;
    sends.emplace_back();
    MPI_Isend(notice.data(), static_cast<int>(kLineOffset + text.size()) + 1, MPI_CHAR, other, kFailureTag,
              MPI_COMM_WORLD, &sends.back());
  }
  conclude(Notice{posted_s, rank, text}, sends);
}

}  // namespace

void take_failure_notice() {
  if (auto notice = receive_notice()) conclude(std::move(*notice), {});
}

void end_job(const DeviceFailure& failure, Clock::time_point posted) { fail_job(failure.what(), posted); }

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
    const auto now = Clock::now();
    // Its own expiry first: a rank whose wait began earlier than a notice's must send its own.
    if (now > deadline) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      fail_job(DeviceFailure(peer, operation, fmt::format("no answer within {} s (noticed by rank {})", timeout_s, rank)).what(),
               posted);
    }
    take_failure_notice();
    if (now < spin_until) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

void meet(const std::string& operation, double timeout_s) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static char nothing = 0;  // the messages are empty; MPI wants a buffer all the same
  std::vector<MPI_Request> receives(static_cast<size_t>(size), MPI_REQUEST_NULL), sends = receives;
  for (int other = 0; other < size; ++other) {
    if (other == rank) continue;
    MPI_Irecv(&nothing, 0, MPI_CHAR, other, kMeetTag, MPI_COMM_WORLD, &receives[static_cast<size_t>(other)]);
    MPI_Isend(&nothing, 0, MPI_CHAR, other, kMeetTag, MPI_COMM_WORLD, &sends[static_cast<size_t>(other)]);
  }
  const auto posted = Clock::now();
  const std::string arrival = fmt::format("arrival at the {}", operation);
  for (int other = 0; other < size; ++other) {
    wait_within({&receives[static_cast<size_t>(other)], 1}, posted, timeout_s, other, arrival);
  }
  for (int other = 0; other < size; ++other) {
    wait_within({&sends[static_cast<size_t>(other)], 1}, posted, timeout_s, other, arrival);
  }
}

}  // namespace stripesim::validate::mpi
