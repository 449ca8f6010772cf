#include "mpi_measure.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace stripesim::validate::mpi {

void hang_if_told(int rank) {
  const char* value = std::getenv("STRIPESIM_TEST_MPI_HANG_RANK");
  if (value != nullptr && std::atoi(value) == rank) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace stripesim::validate::mpi
