#pragma once
// The mpi backend: the CPU backend's ring, all-gather and Ulysses (its kernel, problem and host
// reference) with each device a process, launched as `mpirun -np N stripesim validate --backend
// mpi ...`. Rank r plays device r. The ring: it holds its queries and its K/V block, and every
// round computes on the block it holds while handing it to rank r + 1 (MPI_Isend / MPI_Irecv,
// progressed between query tiles). All-gather: K/V gathered by MPI_Iallgather, then one call.
// Ulysses: Q, K, V to heads by MPI_Ialltoall, one call over the whole sequence, the output back by
// another. Rank 0 gathers every (round, device) time and the output, checks it and writes the
// report. Every wait has the --timeout deadline: a rank that hangs ends the job (exit 3) with one
// line naming it and the operation, printed by every rank still alive.
#include <memory>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate {

// Initialises MPI (MPI_Init_thread) unless it already is; the backend finalises it when destroyed.
[[nodiscard]] std::unique_ptr<RingBackend> make_mpi_backend();

}  // namespace stripesim::validate
