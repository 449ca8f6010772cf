#include <fmt/format.h>

#include <array>

#include "mpi_cp.hpp"
#include "mpi_measure.hpp"

namespace stripesim::validate::mpi {

using namespace cpu_ring;

// Posts the exchange of one K/V block: `from` to rank `next`, `into` from rank `previous`, three
// messages each way into requests[0..2] of `receives` and `sends`.
template <typename T>
void post_block_exchange(const KvBlock<T>& from, KvBlock<T>& into, int previous, int next, MPI_Request* receives,
                         MPI_Request* sends) {
  MPI_Irecv(into.k.data(), byte_count(into.k), MPI_BYTE, previous, kTagK, MPI_COMM_WORLD, &receives[0]);
  MPI_Irecv(into.v.data(), byte_count(into.v), MPI_BYTE, previous, kTagV, MPI_COMM_WORLD, &receives[1]);
  MPI_Irecv(into.positions.data(), byte_count(into.positions), MPI_BYTE, previous, kTagPositions, MPI_COMM_WORLD,
            &receives[2]);
  MPI_Isend(from.k.data(), byte_count(from.k), MPI_BYTE, next, kTagK, MPI_COMM_WORLD, &sends[0]);
  MPI_Isend(from.v.data(), byte_count(from.v), MPI_BYTE, next, kTagV, MPI_COMM_WORLD, &sends[1]);
  MPI_Isend(from.positions.data(), byte_count(from.positions), MPI_BYTE, next, kTagPositions, MPI_COMM_WORLD, &sends[2]);
}

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
  // `own` keeps this rank's block for the backward, as training keeps K and V for it.
  KvBlock<T> own, current, incoming{std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                                    std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                                    std::vector<Position>(static_cast<size_t>(block_len))};
  BackwardState<T> backward;
  GradBlock<T> grad, arriving;  // the accumulator added to this round, and the one coming for the next
  auto prepare = [&] {
    reset(state, block_len, c.heads, c.head_dim);
    own = shard_kv<T>(problem, rank);
    current = own;
  };
  // The backward ring after the forward (as the cpu backend's): at round r this rank computes on
  // the block that started on rank - r, handing the block on (rounds 0 .. N-2, sent as soon as
  // the round starts, as the forward) and its dK/dV accumulator once computed (every round: the
  // N-th hop brings it home). [kBackwardTimes N + 1 + round] its call, then the arrival of what
  // its predecessor handed it at `round` (K/V and accumulator, posted receive to completion).
  auto backward_ring = [&](std::vector<double>& times) {
    start_backward(state, gather<T>(problem.dout(), shard.positions, c.heads * c.head_dim), c.head_dim, backward);
    grad = {std::vector<T>(static_cast<size_t>(block_len * kv_row), T{0}), std::vector<T>(static_cast<size_t>(block_len * kv_row), T{0})};
    arriving = grad;
    const KvBlock<T>* holding = &own;
    for (Count round = 0; round < devices; ++round) {
      const bool hands_on = round + 1 < devices;
      std::array<MPI_Request, 5> receives{MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      std::array<MPI_Request, 5> sends = receives;
      const auto posted = Clock::now();
      MPI_Irecv(arriving.dk.data(), byte_count(arriving.dk), MPI_BYTE, previous, kTagDk, MPI_COMM_WORLD, &receives[0]);
      MPI_Irecv(arriving.dv.data(), byte_count(arriving.dv), MPI_BYTE, previous, kTagDv, MPI_COMM_WORLD, &receives[1]);
      if (hands_on) post_block_exchange(*holding, incoming, previous, next, &receives[2], &sends[2]);
      double arrival_us = -1;
      auto progress = [&] {
        (void)test_all(sends);
        if (arrival_us < 0 && test_all(receives)) arrival_us = elapsed_us(posted);
      };
      if (problem.block_active(round, rank)) {
        const auto start = Clock::now();
        block_attention_backward(c, problem.scale(), shard, backward, *holding, grad, progress);
        times[backward_kernel_at(devices, round)] = elapsed_us(start);
      }
      MPI_Isend(grad.dk.data(), byte_count(grad.dk), MPI_BYTE, next, kTagDk, MPI_COMM_WORLD, &sends[0]);
      MPI_Isend(grad.dv.data(), byte_count(grad.dv), MPI_BYTE, next, kTagDv, MPI_COMM_WORLD, &sends[1]);
      wait_within(receives, posted, timeout, previous,
                  fmt::format("hand-off of backward round {}'s K/V block and dK/dV to rank {}", round, rank));
      if (arrival_us < 0) arrival_us = elapsed_us(posted);
      wait_within(sends, posted, timeout, next,
                  fmt::format("receive of backward round {}'s K/V block and dK/dV from rank {}", round, rank));
      times[backward_handoff_at(devices, round)] = arrival_us;
      std::swap(grad, arriving);
      if (hands_on) {
        std::swap(current, incoming);
        holding = &current;
      }
    }
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
      if (hands_on) post_block_exchange(current, incoming, previous, next, receives.data(), sends.data());
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
    if (c.backward) backward_ring(times);
  };
  // A backward case: dQ of this rank's rows, then the dK and dV of its own block, home after N hops.
  auto gradients = [&] {
    std::vector<T> out = backward.dq;
    out.insert(out.end(), grad.dk.begin(), grad.dk.end());
    out.insert(out.end(), grad.dv.begin(), grad.dv.end());
    return out;
  };
  return measure_ranks<T>(problem, options, rank, device_name, block_bytes<T>(block_len, kv_row), 1, prepare, iterate,
                          [&] { return normalised(state, c.head_dim); }, gradients);
}

template RingMeasurement measure_ring<float>(const RingProblem&, const RunOptions&, int, const std::string&);
template RingMeasurement measure_ring<double>(const RingProblem&, const RunOptions&, int, const std::string&);

}  // namespace stripesim::validate::mpi
