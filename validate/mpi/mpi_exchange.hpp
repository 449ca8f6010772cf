#pragma once
// The two exchanges every MPI ring needs around its timed iterations, each wait bounded by the
// run's timeout and naming the rank it waits on (mpi_waits.hpp): rank 0 starting an iteration on
// every rank, and every rank's results gathered to rank 0. Point to point rather than a barrier
// and MPI_Gather, so that a rank that never answers is named by the wait on it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace stripesim::validate::mpi {

// Rank 0 tells every rank to begin iteration `iteration`; the others wait for it. Rank 0 calls it
// once it holds the previous iteration's results, so every rank has finished that one: the
// ring's barrier.
void start_iteration(int rank, int ranks, std::int64_t iteration, double timeout_s);

// Every rank's `bytes` (the same size on every rank) to rank 0: rank 0 gets all of them in rank
// order, its own first; the others get nothing. `what` names the data in failures
// ("iteration 2's results"); `tag` keeps different gathers of one iteration apart.
[[nodiscard]] std::vector<std::vector<std::byte>> gather_to_rank0(std::span<const std::byte> bytes, int rank, int ranks,
                                                                  int tag, double timeout_s, const std::string& what);

// The values a rank sent as bytes.
template <typename T>
[[nodiscard]] std::vector<T> from_bytes(const std::vector<std::byte>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace stripesim::validate::mpi
