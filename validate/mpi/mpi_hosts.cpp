#include "mpi_hosts.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "mpi_waits.hpp"

namespace stripesim::validate::mpi {
namespace {

// Tags no other message of the backend uses.
constexpr int kTagHost = 101;
constexpr int kTagHostList = 102;
constexpr int kNameChars = MPI_MAX_PROCESSOR_NAME;

// TEST ONLY (tests/CMakeLists.txt's MPI placement test): STRIPESIM_TEST_MPI_HOSTS="a,a,b,b" gives
// rank r the r-th name, so that one machine can play a job spread over nodes. No other use.
std::string own_host(int rank) {
  if (const char* fake = std::getenv("STRIPESIM_TEST_MPI_HOSTS")) {
    std::istringstream names(fake);
    std::string name;
    for (int r = 0; std::getline(names, name, ','); ++r) {
      if (r == rank) return name;
    }
  }
  std::array<char, kNameChars> name{};
  int length = 0;
  MPI_Get_processor_name(name.data(), &length);
  return std::string(name.data(), static_cast<size_t>(length));
}

}  // namespace

std::vector<std::string> gather_hosts(int rank, int ranks, double timeout_s) {
  std::vector<char> names(static_cast<size_t>(ranks) * kNameChars, '\0');
  const std::string mine = own_host(rank);
  std::memcpy(names.data() + static_cast<size_t>(rank) * kNameChars, mine.data(), std::min<size_t>(mine.size(), kNameChars - 1));
  if (rank == 0) {
    for (int other = 1; other < ranks; ++other) {
      MPI_Request request;
      MPI_Irecv(names.data() + static_cast<size_t>(other) * kNameChars, kNameChars, MPI_CHAR, other, kTagHost, MPI_COMM_WORLD,
                &request);
      wait_within({&request, 1}, Clock::now(), timeout_s, other, "report of its host name to rank 0");
    }
    for (int other = 1; other < ranks; ++other) {
      MPI_Request request;
      MPI_Isend(names.data(), static_cast<int>(names.size()), MPI_CHAR, other, kTagHostList, MPI_COMM_WORLD, &request);
      wait_within({&request, 1}, Clock::now(), timeout_s, other, "receive of the job's host names from rank 0");
    }
  } else {
    MPI_Request request;
    MPI_Isend(names.data() + static_cast<size_t>(rank) * kNameChars, kNameChars, MPI_CHAR, 0, kTagHost, MPI_COMM_WORLD,
              &request);
    wait_within({&request, 1}, Clock::now(), timeout_s, 0, fmt::format("receive of rank {}'s host name", rank));
    MPI_Irecv(names.data(), static_cast<int>(names.size()), MPI_CHAR, 0, kTagHostList, MPI_COMM_WORLD, &request);
    wait_within({&request, 1}, Clock::now(), timeout_s, 0, fmt::format("sending the job's host names to rank {}", rank));
  }
  std::vector<std::string> hosts;
  for (int r = 0; r < ranks; ++r) hosts.emplace_back(names.data() + static_cast<size_t>(r) * kNameChars);
  return hosts;
}

}  // namespace stripesim::validate::mpi
