#include <fmt/format.h>

#include <array>
#include <limits>
#include <numeric>
#include <span>

#include "mpi_cp.hpp"
#include "mpi_measure.hpp"
#include "stripesim/validate/ulysses_split.hpp"

namespace stripesim::validate::mpi {

using namespace cpu_ring;

// The cpu backend's Ulysses with a rank per device. Rank r sends every rank d the heads d owns of
// its shard's Q, K and V (MPI_Ialltoall), puts what arrives in sequence order, attends the whole
// sequence on its heads in one call, and sends every rank d its shard's rows of those heads back
// (a second all-to-all), which d writes into its shard's output. Both all-to-alls, packing and
// reordering included, are round 0's hand-off of the rank, the call its round 0 kernel, as the cpu
// backend records them.
template <typename T>
RingMeasurement measure_ulysses(const RingProblem& problem, const RunOptions& options, int rank,
                                const std::string& device_name) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const Count block_len = problem.block_size();
  const Count dim = c.head_dim;
  const double timeout = options.timeout_s;
  const UlyssesSplit split = ulysses_split(problem, static_cast<Count>(sizeof(T)));
  const RingCase& mine = split.per_device;  // this rank's heads over the whole sequence

  // This rank's shard, all heads: what it holds before the all-to-all.
  const std::vector<T> q = shard_queries<T>(problem, rank);
  const KvBlock<T> own = shard_kv<T>(problem, rank);
  std::vector<Position> local(static_cast<size_t>(block_len));
  std::iota(local.begin(), local.end(), Position{0});

  // An all-to-all's send buffer: part_of(d) for every rank d in turn.
  auto by_destination = [&](auto part_of) {
    std::vector<T> out;
    for (Count d = 0; d < devices; ++d) {
      const std::vector<T> part = part_of(d);
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  };
  // [d][local token][heads d owns][dim]: `count` heads from first_of(d) of every local token.
  auto heads_by_destination = [&](const std::vector<T>& values, Count all_heads, Count count, auto first_of) {
    return by_destination([&](Count d) { return heads_of<T>(values, all_heads, first_of(d), count, dim); });
  };
  // The receive buffer [s][s's token][heads][dim] put in sequence order: s's tokens at its positions.
  auto in_order = [&](const std::vector<T>& received, Count heads) {
    std::vector<T> out(received.size());
    const auto part = static_cast<size_t>(block_len * heads * dim);
    for (Count s = 0; s < devices; ++s) {
      place_rows(received.data() + static_cast<size_t>(s) * part, problem.shard(s).positions, heads, 0, heads, dim, out);
    }
    return out;
  };
  // Posts one all-to-all per buffer (each peer gets an equal share) and waits for them.
  auto all_to_all = [&](auto& sends, auto& receives, const std::string& operation) {
    std::array<MPI_Request, 3> requests{MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    const auto posted = Clock::now();
    for (size_t i = 0; i < sends.size(); ++i) {
      receives[i].resize(sends[i].size());
      const int share = byte_count(sends[i]) / static_cast<int>(devices);
      MPI_Ialltoall(sends[i].data(), share, MPI_BYTE, receives[i].data(), share, MPI_BYTE, MPI_COMM_WORLD, &requests[i]);
    }
    // Every member had arrived (meet): an exchange that still does not finish is this rank's failure.
    wait_within(std::span(requests).first(sends.size()), posted, timeout, rank, operation);
  };

  DeviceState<T> state;
  KvBlock<T> kv;
  std::vector<T> rows;  // this rank's shard, every head, once the output is back
  auto prepare = [&] {
    reset(state, c.seq_len, mine.heads, dim);
    state.q.clear();
    kv = {};
    rows.assign(static_cast<size_t>(block_len * c.heads * dim), std::numeric_limits<T>::quiet_NaN());
  };
  auto iterate = [&](Count iteration, std::vector<double>& times) {
    hang_if_told(rank);
    const std::string in = fmt::format("all-to-all of iteration {}'s Q, K, V", iteration);
    meet(in, timeout);
    const auto start = Clock::now();
    const auto first = [&](Count d) { return split.first_head(d); };
    const auto first_kv = [&](Count d) { return split.first_kv_head(d); };
    std::array<std::vector<T>, 3> sends{heads_by_destination(q, c.heads, mine.heads, first),
                                        heads_by_destination(own.k, c.kv_heads, mine.kv_heads, first_kv),
                                        heads_by_destination(own.v, c.kv_heads, mine.kv_heads, first_kv)};
    std::array<std::vector<T>, 3> received;
    all_to_all(sends, received, in);
    state.q = in_order(received[0], mine.heads);
    kv = {in_order(received[1], mine.kv_heads), in_order(received[2], mine.kv_heads), split.whole.positions};
    times[static_cast<size_t>(devices)] = elapsed_us(start);

    const auto call = Clock::now();
    block_attention(mine, problem.scale(), split.whole, state, kv);
    times[0] = elapsed_us(call);

    const std::string out = fmt::format("all-to-all of iteration {}'s output", iteration);
    meet(out, timeout);
    const auto back = Clock::now();
    const std::vector<T> finished = normalised(state, dim);  // [position][this rank's heads][dim]
    // [s][s's token][this rank's heads][dim]: each rank's shard rows.
    std::array<std::vector<T>, 1> answers{
        by_destination([&](Count s) { return gather<T>(finished, problem.shard(s).positions, mine.heads * dim); })};
    std::array<std::vector<T>, 1> answered;
    all_to_all(answers, answered, out);
    const auto part = static_cast<size_t>(block_len * mine.heads * dim);
    for (Count d = 0; d < devices; ++d) {
      place_rows(answered[0].data() + static_cast<size_t>(d) * part, local, mine.heads, split.first_head(d), c.heads, dim,
                 rows);
    }
    times[static_cast<size_t>(devices)] += elapsed_us(back);
  };
  return measure_ranks<T>(problem, options, rank, device_name, split.pair_bytes, 0, prepare, iterate, [&] { return rows; });
}

template RingMeasurement measure_ulysses<float>(const RingProblem&, const RunOptions&, int, const std::string&);
template RingMeasurement measure_ulysses<double>(const RingProblem&, const RunOptions&, int, const std::string&);

}  // namespace stripesim::validate::mpi
