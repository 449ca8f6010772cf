#include "mpi_session.hpp"

#include <mpi.h>

namespace stripesim::validate::mpi {

Session::Session() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    owns_mpi_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
}

Session::~Session() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && finalized == 0) MPI_Finalize();
}

}  // namespace stripesim::validate::mpi
