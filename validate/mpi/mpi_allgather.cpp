#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "mpi_cp.hpp"
#include "mpi_measure.hpp"

namespace stripesim::validate::mpi {

using namespace cpu_ring;

// The cpu backend's all-gather with a rank per device: every rank's K/V block (and its positions)
// all-gathered in rank order (MPI_Iallgather, polled against --timeout), then one call of the
// rank's own queries on all of it. The gather is round 0's hand-off of the rank, the call its
// round 0 kernel, as the cpu backend records them.
template <typename T>
RingMeasurement measure_allgather(const RingProblem& problem, const RunOptions& options, int rank,
                                  const std::string& device_name) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const Count block_len = problem.block_size();
  const Count kv_row = c.kv_heads * c.head_dim;
  const double timeout = options.timeout_s;

  DeviceState<T> state;
  state.q = shard_queries<T>(problem, rank);
  KvBlock<T> own;
  KvBlock<T> all{std::vector<T>(static_cast<size_t>(c.seq_len * kv_row)), std::vector<T>(static_cast<size_t>(c.seq_len * kv_row)),
                 std::vector<Position>(static_cast<size_t>(c.seq_len))};
  auto prepare = [&] {
    reset(state, block_len, c.heads, c.head_dim);
    own = shard_kv<T>(problem, rank);
    // Poisoned: a block the gather never delivered cannot pass the check on an earlier one.
    std::fill(all.k.begin(), all.k.end(), std::numeric_limits<T>::quiet_NaN());
    std::fill(all.v.begin(), all.v.end(), std::numeric_limits<T>::quiet_NaN());
  };
  auto iterate = [&](Count iteration, std::vector<double>& times) {
    hang_if_told(rank);
    const std::string operation = fmt::format("all-gather of iteration {}'s K/V blocks", iteration);
    meet(operation, timeout);
    const auto posted = Clock::now();
    std::array<MPI_Request, 3> gathers{};
    MPI_Iallgather(own.k.data(), byte_count(own.k), MPI_BYTE, all.k.data(), byte_count(own.k), MPI_BYTE, MPI_COMM_WORLD,
                   &gathers[0]);
    MPI_Iallgather(own.v.data(), byte_count(own.v), MPI_BYTE, all.v.data(), byte_count(own.v), MPI_BYTE, MPI_COMM_WORLD,
                   &gathers[1]);
    MPI_Iallgather(own.positions.data(), byte_count(own.positions), MPI_BYTE, all.positions.data(),
                   byte_count(own.positions), MPI_BYTE, MPI_COMM_WORLD, &gathers[2]);
    // Every member had arrived (meet): a gather that still does not finish is this rank's failure.
    wait_within(gathers, posted, timeout, rank, operation);
    times[static_cast<size_t>(devices)] = elapsed_us(posted);
    const auto start = Clock::now();
    block_attention(c, problem.scale(), problem.shard(rank), state, all);
    times[0] = elapsed_us(start);
  };
  return measure_ranks<T>(problem, options, rank, device_name, block_bytes<T>(block_len, kv_row), 0, prepare, iterate,
                          [&] { return normalised(state, c.head_dim); });
}

template RingMeasurement measure_allgather<float>(const RingProblem&, const RunOptions&, int, const std::string&);
template RingMeasurement measure_allgather<double>(const RingProblem&, const RunOptions&, int, const std::string&);

}  // namespace stripesim::validate::mpi
