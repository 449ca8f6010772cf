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
enum Tag : int { kTagK = 1, kTagV, kTagPositions, kTagTimes, kTagRows, kTagDk, kTagDv, kTagGradients };

template <typename T>
int byte_count(const std::vector<T>& values) {
  return static_cast<int>(values.size() * sizeof(T));
}

// TEST ONLY (tests/CMakeLists.txt's MPI failure tests): STRIPESIM_TEST_MPI_HANG_RANK=r makes rank
// r stop answering here, as a hung process would. Called at round 1 of a ring and before the first
// collective of an all-gather or Ulysses iteration. No other use.
void hang_if_told(int rank);

// What one rank measured in one iteration, as sent to rank 0: [round] its kernel call, [N + round]
// the hand-off it timed at `round`, [2N] its whole iteration; with the backward, also
// [kBackwardTimes N + round] its backward call and [kBackwardTimes N + N + round] the backward
// hand-off it timed.
inline constexpr Count kBackwardTimes = 2;  // x N + 1: where the backward's times start
inline std::vector<double> rank_times(Count devices, bool backward) {
  return std::vector<double>(static_cast<size_t>((backward ? 4 : 2) * devices + 1), 0.0);
}
inline size_t backward_kernel_at(Count devices, Count round) { return static_cast<size_t>(kBackwardTimes * devices + 1 + round); }
inline size_t backward_handoff_at(Count devices, Count round) { return backward_kernel_at(devices, round) + static_cast<size_t>(devices); }

// Rank 0, a backward case: every rank's backward calls and hand-offs into `m`'s cells (a rank
// times the accumulator its predecessor handed it) unless the iteration was a warm-up, and their
// gradients, in ORIGINAL order, into m.gradients.
template <typename T>
void record_backward(const RingProblem& problem, const RunOptions& options, Count iteration,
                     const std::vector<std::vector<std::byte>>& all_times, const std::vector<std::vector<std::byte>>& all_gradients,
                     RingMeasurement& m) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const auto cells = static_cast<size_t>(devices * devices);
  std::vector<double> kernel_us(cells, 0.0), handoff_us(cells, 0.0);
  m.gradients.assign(static_cast<size_t>(gradient_count(c)), std::numeric_limits<double>::quiet_NaN());
  for (Count source = 0; source < devices; ++source) {
    const std::vector<double> times = from_bytes<double>(all_times[static_cast<size_t>(source)]);
    const Count handed = (source + devices - 1) % devices;
    for (Count round = 0; round < devices; ++round) {
      kernel_us[static_cast<size_t>(round * devices + source)] = times[backward_kernel_at(devices, round)];
      handoff_us[static_cast<size_t>(round * devices + handed)] = times[backward_handoff_at(devices, round)];
    }
    const std::vector<T> theirs = from_bytes<T>(all_gradients[static_cast<size_t>(source)]);
    const auto& positions = problem.shard(source).positions;
    const T* dq = theirs.data();
    const T* dk = dq + positions.size() * static_cast<size_t>(c.heads * c.head_dim);
    const T* dv = dk + positions.size() * static_cast<size_t>(c.kv_heads * c.head_dim);
    cpu_ring::place_gradient_rows(dq, dk, dv, positions, c, m.gradients);
  }
  if (iteration < options.warmup) return;
  m.backward_kernel_us.push_back(std::move(kernel_us));
  m.backward_handoff_us.push_back(std::move(handoff_us));
}

// The loop: `prepare()` (untimed) puts this rank's own data in place; `iterate(iteration, times)`
// fills its rank_times and is timed as its wall; `rows()` is then its shard's finished output
// ([(local * heads + h) * head_dim + i]) and, for a backward case (the ring), `gradients()` its
// dQ rows and its own block's dK and dV, one after the other in local order. The hand-off a
// rank times is the cell of the device `handoff_from` places before it: 1 for the ring (the
// block its predecessor handed it), 0 for a collective (its own part). Only rank 0's
// measurement holds the results.
template <typename T, typename Prepare, typename Iterate, typename Rows, typename Gradients>
RingMeasurement measure_ranks(const RingProblem& problem, const RunOptions& options, int rank, const std::string& device_name,
                              std::int64_t handoff_bytes, Count handoff_from, Prepare&& prepare, Iterate&& iterate,
                              Rows&& rows, Gradients&& gradients) {
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
    std::vector<double> times = rank_times(devices, c.backward);
    const auto start = Clock::now();
    iterate(iteration, times);
    times[static_cast<size_t>(2 * devices)] = cpu_ring::elapsed_us(start);
    const std::vector<T> mine = rows();
    const auto all_times = gather_to_rank0(std::as_bytes(std::span(times)), rank, static_cast<int>(devices), kTagTimes,
                                           options.timeout_s, fmt::format("iteration {}'s times", iteration));
    const auto all_rows = gather_to_rank0(std::as_bytes(std::span(mine)), rank, static_cast<int>(devices), kTagRows,
                                          options.timeout_s, fmt::format("iteration {}'s output rows", iteration));
    const std::vector<T> my_gradients = c.backward ? gradients() : std::vector<T>{};
    const auto all_gradients =
        c.backward ? gather_to_rank0(std::as_bytes(std::span(my_gradients)), rank, static_cast<int>(devices), kTagGradients,
                                     options.timeout_s, fmt::format("iteration {}'s gradients", iteration))
                   : decltype(all_rows){};
    if (rank != 0) continue;
    if (c.backward) record_backward<T>(problem, options, iteration, all_times, all_gradients, m);
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
  if (c.backward) m.gradient_handoff_bytes = cpu_ring::accumulator_bytes<T>(problem.block_size(), c.kv_heads * c.head_dim);
  return m;
}

// The forward-only collectives: no gradients.
template <typename T, typename Prepare, typename Iterate, typename Rows>
RingMeasurement measure_ranks(const RingProblem& problem, const RunOptions& options, int rank, const std::string& device_name,
                              std::int64_t handoff_bytes, Count handoff_from, Prepare&& prepare, Iterate&& iterate,
                              Rows&& rows) {
  return measure_ranks<T>(problem, options, rank, device_name, handoff_bytes, handoff_from, prepare, iterate, rows,
                          [] { return std::vector<T>{}; });
}

}  // namespace stripesim::validate::mpi
