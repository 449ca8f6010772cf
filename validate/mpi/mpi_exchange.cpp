#include "mpi_exchange.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include "mpi_waits.hpp"

namespace stripesim::validate::mpi {
namespace {

constexpr int kTagStart = 110;  // no other message of the MPI rings uses it

}  // namespace

void start_iteration(int rank, int ranks, std::int64_t iteration, double timeout_s) {
  char start_byte = 0;
  if (rank == 0) {
    std::vector<MPI_Request> starts(static_cast<size_t>(ranks > 0 ? ranks - 1 : 0));
    for (int other = 1; other < ranks; ++other) {
      MPI_Isend(&start_byte, 1, MPI_CHAR, other, kTagStart, MPI_COMM_WORLD, &starts[static_cast<size_t>(other - 1)]);
    }
    const auto posted = Clock::now();
    for (int other = 1; other < ranks; ++other) {
      wait_within({&starts[static_cast<size_t>(other - 1)], 1}, posted, timeout_s, other,
                  fmt::format("start of iteration {}", iteration));
    }
    return;
  }
  MPI_Request start;
  MPI_Irecv(&start_byte, 1, MPI_CHAR, 0, kTagStart, MPI_COMM_WORLD, &start);
  wait_within({&start, 1}, Clock::now(), timeout_s, 0, fmt::format("start of iteration {}", iteration));
}

std::vector<std::vector<std::byte>> gather_to_rank0(std::span<const std::byte> bytes, int rank, int ranks, int tag,
                                                    double timeout_s, const std::string& what) {
  const int count = static_cast<int>(bytes.size());
  if (rank != 0) {
    MPI_Request send;
    MPI_Isend(bytes.data(), count, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &send);
    wait_within({&send, 1}, Clock::now(), timeout_s, 0, fmt::format("receive of rank {}'s {}", rank, what));
    return {};
  }
  std::vector<std::vector<std::byte>> all(static_cast<size_t>(ranks), std::vector<std::byte>(bytes.size()));
  all[0].assign(bytes.begin(), bytes.end());
  for (int source = 1; source < ranks; ++source) {
    MPI_Request receive;
    MPI_Irecv(all[static_cast<size_t>(source)].data(), count, MPI_BYTE, source, tag, MPI_COMM_WORLD, &receive);
    wait_within({&receive, 1}, Clock::now(), timeout_s, source, fmt::format("sending its {} to rank 0", what));
  }
  return all;
}

}  // namespace stripesim::validate::mpi
