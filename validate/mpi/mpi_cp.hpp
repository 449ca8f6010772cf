#pragma once
// One rank's part of each context parallelism the mpi backend runs, rank r playing device r, in
// float (T = float) or double. Each returns what measure_ranks (mpi_measure.hpp) records: the
// results on rank 0, nothing on the others.
#include <string>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate::mpi {

// mpi_ring.cpp: the ring, K/V blocks handed to rank r + 1 under the compute.
template <typename T>
RingMeasurement measure_ring(const RingProblem& problem, const RunOptions& options, int rank, const std::string& device_name);

// mpi_allgather.cpp: K/V all-gathered, then one call on this rank's queries.
template <typename T>
RingMeasurement measure_allgather(const RingProblem& problem, const RunOptions& options, int rank,
                                  const std::string& device_name);

// mpi_ulysses.cpp: Q, K, V to heads by all-to-all, one call over the whole sequence, output back.
template <typename T>
RingMeasurement measure_ulysses(const RingProblem& problem, const RunOptions& options, int rank,
                                const std::string& device_name);

}  // namespace stripesim::validate::mpi
