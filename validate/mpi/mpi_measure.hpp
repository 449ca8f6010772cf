#pragma once
// The iteration loop every context parallelism shares on MPI ranks: the cpu backend's `measure`
// with a process per device. Rank 0 starts each iteration, every rank times its own part, and
// rank 0 gathers the times and the outputs point to point and records the iteration.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <span>

#include "mpi_exchange.hpp"
#include "mpi_waits.hpp"
#include "stripesim/validate/cpu_ring.hpp"

namespace stripesim::validate::mpi {

// The backend's message tags (mpi_waits.cpp and mpi_hosts.cpp keep their own, above 100). A K/V
// block travels as three messages; MPI keeps messages of one (source, tag) in order, so round
// r + 1's block never overtakes round r's.
enum Tag : int { kTagK = 1, kTagV, kTagPositions, kTagTimes, kTagRows };

template <typename T>
int byte_count(const std::vector<T>& values) {
  return static_cast<int>(values.size() * sizeof(T));
}

// TEST ONLY (tests/CMakeLists.txt's MPI failure tests): STRIPESIM_TEST_MPI_HANG_RANK=r makes rank
// r stop answering here, as a hung process would. Called at round 1 of a ring and before the first
// collective of an all-gather or Ulysses iteration. No other use.
void hang_if_told(int rank);

// What one rank measured in one iteration, as sent to rank 0: [round] its kernel call, [N + round]
// the hand-off it timed at `round`, [2N] its whole iteration.
inline std::vector<double> rank_times(Count devices) { return std::vector<double>(static_cast<size_t>(2 * devices + 1), 0.0); }

// The loop: `prepare()` (untimed) puts this rank's own data in place; `iterate(iteration, times)`
// fills its rank_times and is timed as its wall; `rows()` is then its shard's finished output
// ([(local * heads + h) * head_dim + i]). The hand-off a rank times is the cell of the device
// `handoff_from` places before it: 1 for the ring (the block its predecessor handed it), 0 for a
// collective (its own part). Only rank 0's measurement holds the results.
template <typename T, typename Prepare, typename Iterate, typename Rows>
RingMeasurement measure_ranks(const RingProblem& problem, const RunOptions& options, int rank, const std::string& device_name,
                              std::int64_t handoff_bytes, Count handoff_from, Prepare&& prepare, Iterate&& iterate,
                              Rows&& rows) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const auto cells = static_cast<size_t>(devices * devices);
  RingMeasurement m;
  m.backend = "mpi";
  m.device_name = device_name;
  m.handoff_bytes = handoff_bytes;
  for (Count iteration = 0; iteration < options.warmup + options.iterations; ++iteration) {
    prepare();
    start_iteration(rank, static_cast<int>(devices), iteration, options.timeout_s);
    std::vector<double> times = rank_times(devices);
    const auto start = Clock::now();
    iterate(iteration, times);
    times[static_cast<size_t>(2 * devices)] = cpu_ring::elapsed_us(start);
    const std::vector<T> mine = rows();
    const auto all_times = gather_to_rank0(std::as_bytes(std::span(times)), rank, static_cast<int>(devices), kTagTimes,
                                           options.timeout_s, fmt::format("iteration {}'s times", iteration));
    const auto all_rows = gather_to_rank0(std::as_bytes(std::span(mine)), rank, static_cast<int>(devices), kTagRows,
                                          options.timeout_s, fmt::format("iteration {}'s output rows", iteration));
    if (rank != 0) continue;
    std::vector<double> kernel_us(cells, 0.0), handoff_us(cells, 0.0);
    m.output.assign(static_cast<size_t>(c.seq_len * c.heads * c.head_dim), std::numeric_limits<double>::quiet_NaN());
    double wall = 0;
    for (Count source = 0; source < devices; ++source) {
      const std::vector<double> their_times = from_bytes<double>(all_times[static_cast<size_t>(source)]);
      const std::vector<T> theirs = from_bytes<T>(all_rows[static_cast<size_t>(source)]);
      const Count handed = (source + devices - handoff_from) % devices;
      for (Count round = 0; round < devices; ++round) {
        kernel_us[static_cast<size_t>(round * devices + source)] = their_times[static_cast<size_t>(round)];
        handoff_us[static_cast<size_t>(round * devices + handed)] = their_times[static_cast<size_t>(devices + round)];
      }
      wall = std::max(wall, their_times[static_cast<size_t>(2 * devices)]);
      cpu_ring::place_rows(theirs.data(), problem.shard(source).positions, c.heads, 0, c.heads, c.head_dim, m.output);
    }
    cpu_ring::record_iteration(m, iteration, options, std::move(kernel_us), std::move(handoff_us), wall);
  }
  m.iterations = options.iterations;
  return m;
}

}  // namespace stripesim::validate::mpi
