#include "mpi_measure.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace stripesim::validate::mpi {

void hang_if_told(int rank) {
  const char* value = std::getenv("STRIPESIM_TEST_MPI_HANG_RANK");
  if (value != nullptr && std::atoi(value) == rank) std::this_thread::sleep_for(std::chrono::hours(1));
}

void start_iteration(int rank, int ranks, Count iteration, double timeout_s) {
  static char start_byte = 0;  // alive while the sends are
  const std::string operation = fmt::format("start of iteration {}", iteration);
  if (rank != 0) {
    MPI_Request start;
    MPI_Irecv(&start_byte, 1, MPI_CHAR, 0, kTagStart, MPI_COMM_WORLD, &start);
    wait_within({&start, 1}, Clock::now(), timeout_s, 0, operation);
    return;
  }
  std::vector<MPI_Request> starts(static_cast<size_t>(ranks - 1));
  for (int other = 1; other < ranks; ++other) {
    MPI_Isend(&start_byte, 1, MPI_CHAR, other, kTagStart, MPI_COMM_WORLD, &starts[static_cast<size_t>(other - 1)]);
  }
  const auto posted = Clock::now();
  for (int other = 1; other < ranks; ++other) {
    wait_within({&starts[static_cast<size_t>(other - 1)], 1}, posted, timeout_s, other, operation);
  }
}

// Point to point rather than MPI_Gather: a rank that never sends is named by rank 0's own receive.
void send_results(const std::vector<double>& times, const void* rows, int bytes, Count iteration, double timeout_s) {
  std::array<MPI_Request, 2> sends{};
  MPI_Isend(times.data(), static_cast<int>(times.size()), MPI_DOUBLE, 0, kTagTimes, MPI_COMM_WORLD, &sends[0]);
  MPI_Isend(rows, bytes, MPI_BYTE, 0, kTagRows, MPI_COMM_WORLD, &sends[1]);
  wait_within(sends, Clock::now(), timeout_s, 0, fmt::format("gather of iteration {}'s results", iteration));
}

void receive_results(int source, std::vector<double>& times, void* rows, int bytes, Count iteration, double timeout_s) {
  std::array<MPI_Request, 2> receives{};
  MPI_Irecv(times.data(), static_cast<int>(times.size()), MPI_DOUBLE, source, kTagTimes, MPI_COMM_WORLD, &receives[0]);
  MPI_Irecv(rows, bytes, MPI_BYTE, source, kTagRows, MPI_COMM_WORLD, &receives[1]);
  wait_within(receives, Clock::now(), timeout_s, source, fmt::format("sending iteration {}'s results to rank 0", iteration));
}

}  // namespace stripesim::validate::mpi
