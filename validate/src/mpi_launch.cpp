// Whether an MPI launcher started this process: in the core library, so that the checks of what
// a backend runs (validation_run.cpp) and the choice of backend (make_backend.cpp) ask the same.
#include <cstdlib>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate {

bool launched_as_mpi_rank() {
  for (const char* variable : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

}  // namespace stripesim::validate
