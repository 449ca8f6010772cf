#include <fmt/format.h>

#include <array>

#include "mpi_cp.hpp"
#include "mpi_measure.hpp"

namespace stripesim::validate::mpi {

using namespace cpu_ring;

template <typename T>
RingMeasurement measure_ring(const RingProblem& problem, const RunOptions& options, int rank, const std::string& device_name) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const int ranks = static_cast<int>(devices);
  const int next = (rank + 1) % ranks;
  const int previous = (rank + ranks - 1) % ranks;
  const Count block_len = problem.block_size();
  const Count kv_row = c.kv_heads * c.head_dim;
  const DeviceShard& shard = problem.shard(rank);
  const double timeout = options.timeout_s;

  DeviceState<T> state;
  state.q = shard_queries<T>(problem, rank);
  KvBlock<T> current, incoming{std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                               std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                               std::vector<Position>(static_cast<size_t>(block_len))};
  auto prepare = [&] {
    reset(state, block_len, c.heads, c.head_dim);
    current = shard_kv<T>(problem, rank);
  };
  // [N + round]: the arrival of the block its predecessor handed it at `round` (posted receive to
  // completion, so it includes the sender's lateness).
  auto iterate = [&](Count, std::vector<double>& times) {
    for (Count round = 0; round < devices; ++round) {
      if (round == 1) hang_if_told(rank);
      const bool hands_on = round + 1 < devices;  // the last round hands nothing on
      std::array<MPI_Request, 3> receives{MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      std::array<MPI_Request, 3> sends{MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      const auto posted = Clock::now();
      if (hands_on) {
        MPI_Irecv(incoming.k.data(), byte_count(incoming.k), MPI_BYTE, previous, kTagK, MPI_COMM_WORLD, &receives[0]);
        MPI_Irecv(incoming.v.data(), byte_count(incoming.v), MPI_BYTE, previous, kTagV, MPI_COMM_WORLD, &receives[1]);
        MPI_Irecv(incoming.positions.data(), byte_count(incoming.positions), MPI_BYTE, previous, kTagPositions,
                  MPI_COMM_WORLD, &receives[2]);
        MPI_Isend(current.k.data(), byte_count(current.k), MPI_BYTE, next, kTagK, MPI_COMM_WORLD, &sends[0]);
        MPI_Isend(current.v.data(), byte_count(current.v), MPI_BYTE, next, kTagV, MPI_COMM_WORLD, &sends[1]);
        MPI_Isend(current.positions.data(), byte_count(current.positions), MPI_BYTE, next, kTagPositions,
                  MPI_COMM_WORLD, &sends[2]);
      }
      double arrival_us = -1;
      // Between query tiles: progress both directions (a large block goes by rendezvous, which moves
      // only while both sides call MPI) and note when the incoming block has fully arrived.
      auto progress = [&] {
        if (!hands_on) return;
        (void)test_all(sends);
        if (arrival_us < 0 && test_all(receives)) arrival_us = elapsed_us(posted);
      };
      if (problem.block_active(round, rank)) {
        const auto start = Clock::now();
        block_attention(c, problem.scale(), shard, state, current, progress);
        times[static_cast<size_t>(round)] = elapsed_us(start);
      }
      if (!hands_on) break;
      wait_within(receives, posted, timeout, previous, fmt::format("hand-off of round {}'s K/V block to rank {}", round, rank));
      if (arrival_us < 0) arrival_us = elapsed_us(posted);
      wait_within(sends, posted, timeout, next, fmt::format("receive of round {}'s K/V block from rank {}", round, rank));
      times[static_cast<size_t>(devices + round)] = arrival_us;
      std::swap(current, incoming);
    }
  };
  return measure_ranks<T>(problem, options, rank, device_name, block_bytes<T>(block_len, kv_row), 1, prepare, iterate,
                          [&] { return normalised(state, c.head_dim); });
}

template RingMeasurement measure_ring<float>(const RingProblem&, const RunOptions&, int, const std::string&);
template RingMeasurement measure_ring<double>(const RingProblem&, const RunOptions&, int, const std::string&);

}  // namespace stripesim::validate::mpi
