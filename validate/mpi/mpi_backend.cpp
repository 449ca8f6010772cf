#include "stripesim/validate/mpi_backend.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <array>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>

#include "mpi_hosts.hpp"
#include "mpi_waits.hpp"
#include "stripesim/model/input_error.hpp"
#include "stripesim/validate/cpu_ring.hpp"

namespace stripesim::validate {
namespace {

using namespace cpu_ring;
using mpi::Clock;

// Message tags: a K/V block travels as three messages (K, V, positions); MPI keeps messages of one
// (source, tag) in order, so round r + 1's block never overtakes round r's.
enum Tag : int { kTagK = 1, kTagV, kTagPositions, kTagStart, kTagTimes, kTagOut, kTagRowSum };

double elapsed_us(Clock::time_point since) {
  return std::chrono::duration<double, std::micro>(Clock::now() - since).count();
}

template <typename T>
int byte_count(const std::vector<T>& values) {
  return static_cast<int>(values.size() * sizeof(T));
}

// TEST ONLY (tests/CMakeLists.txt's MPI failure test): STRIPESIM_TEST_MPI_HANG_RANK=r makes rank r
// stop answering at round 1 of the first case, as a hung process would. No other use.
bool hangs_here(int rank, Count round) {
  const char* value = std::getenv("STRIPESIM_TEST_MPI_HANG_RANK");
  return value != nullptr && round == 1 && std::atoi(value) == rank;
}

// What one rank measured in one iteration, sent to rank 0: [round] its kernel time, [N + round]
// the arrival of the block its predecessor handed it at `round` (posted receive to completion, so
// it includes the sender's lateness), [2N] its whole ring.
std::vector<double> rank_times(Count devices) { return std::vector<double>(static_cast<size_t>(2 * devices + 1), 0.0); }

template <typename T>
RingMeasurement run_rank(const RingProblem& problem, const RunOptions& options, int rank, const std::string& device_name) {
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
  state.q = gather<T>(problem.q(), shard.positions, c.heads * c.head_dim);
  KvBlock<T> current, incoming{std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                               std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                               std::vector<Position>(static_cast<size_t>(block_len))};
  RingMeasurement m;
  m.backend = "mpi";
  m.device_name = device_name;
  m.handoff_bytes = block_bytes<T>(block_len, kv_row);
  const auto cells = static_cast<size_t>(devices * devices);

  for (Count iteration = 0; iteration < options.warmup + options.iterations; ++iteration) {
    reset(state, block_len, c.heads, c.head_dim);
    current = {gather<T>(problem.k(), shard.positions, kv_row), gather<T>(problem.v(), shard.positions, kv_row),
               shard.positions};
    // Rank 0 starts every iteration once it has the previous one's results: the ring's barrier.
    char start_byte = 0;
    if (rank == 0) {
      std::vector<MPI_Request> starts(static_cast<size_t>(ranks - 1));
      for (int other = 1; other < ranks; ++other) {
        MPI_Isend(&start_byte, 1, MPI_CHAR, other, kTagStart, MPI_COMM_WORLD, &starts[static_cast<size_t>(other - 1)]);
      }
      const auto posted = Clock::now();
      for (int other = 1; other < ranks; ++other) {
        mpi::wait_within({&starts[static_cast<size_t>(other - 1)], 1}, posted, timeout, other,
                         fmt::format("start of iteration {}", iteration));
      }
    } else {
      MPI_Request start;
      MPI_Irecv(&start_byte, 1, MPI_CHAR, 0, kTagStart, MPI_COMM_WORLD, &start);
      mpi::wait_within({&start, 1}, Clock::now(), timeout, 0, fmt::format("start of iteration {}", iteration));
    }

    std::vector<double> times = rank_times(devices);
    const auto ring_start = Clock::now();
    for (Count round = 0; round < devices; ++round) {
      if (hangs_here(rank, round)) std::this_thread::sleep_for(std::chrono::hours(1));
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
        (void)mpi::test_all(sends);
        if (arrival_us < 0 && mpi::test_all(receives)) arrival_us = elapsed_us(posted);
      };
      if (problem.block_active(round, rank)) {
        const auto start = Clock::now();
        block_attention(c, problem.scale(), shard, state, current, progress);
        times[static_cast<size_t>(round)] = elapsed_us(start);
      }
      if (!hands_on) break;
      mpi::wait_within(receives, posted, timeout, previous,
                       fmt::format("hand-off of round {}'s K/V block to rank {}", round, rank));
      if (arrival_us < 0) arrival_us = elapsed_us(posted);
      mpi::wait_within(sends, posted, timeout, next, fmt::format("receive of round {}'s K/V block from rank {}", round, rank));
      times[static_cast<size_t>(devices + round)] = arrival_us;
      std::swap(current, incoming);
    }
    times[static_cast<size_t>(2 * devices)] = elapsed_us(ring_start);

    // Gather to rank 0, point to point: a rank that never sends is named by its own receive.
    if (rank != 0) {
      std::array<MPI_Request, 3> sends{};
      MPI_Isend(times.data(), static_cast<int>(times.size()), MPI_DOUBLE, 0, kTagTimes, MPI_COMM_WORLD, &sends[0]);
      MPI_Isend(state.out.data(), byte_count(state.out), MPI_BYTE, 0, kTagOut, MPI_COMM_WORLD, &sends[1]);
      MPI_Isend(state.row_sum.data(), byte_count(state.row_sum), MPI_BYTE, 0, kTagRowSum, MPI_COMM_WORLD, &sends[2]);
      mpi::wait_within(sends, Clock::now(), timeout, 0, fmt::format("gather of iteration {}'s results", iteration));
      continue;
    }
    std::vector<double> kernel_us(cells, 0.0), handoff_us(cells, 0.0);
    m.output.assign(static_cast<size_t>(c.seq_len * c.heads * c.head_dim), std::numeric_limits<double>::quiet_NaN());
    double wall = 0;
    for (int source = 0; source < ranks; ++source) {
      DeviceState<T> theirs;
      std::vector<double> their_times = rank_times(devices);
      if (source == 0) {
        theirs = state;
        their_times = times;
      } else {
        reset(theirs, block_len, c.heads, c.head_dim);
        std::array<MPI_Request, 3> receives{};
        MPI_Irecv(their_times.data(), static_cast<int>(their_times.size()), MPI_DOUBLE, source, kTagTimes, MPI_COMM_WORLD,
                  &receives[0]);
        MPI_Irecv(theirs.out.data(), byte_count(theirs.out), MPI_BYTE, source, kTagOut, MPI_COMM_WORLD, &receives[1]);
        MPI_Irecv(theirs.row_sum.data(), byte_count(theirs.row_sum), MPI_BYTE, source, kTagRowSum, MPI_COMM_WORLD,
                  &receives[2]);
        mpi::wait_within(receives, Clock::now(), timeout, source,
                         fmt::format("sending iteration {}'s results to rank 0", iteration));
      }
      for (Count round = 0; round < devices; ++round) {
        kernel_us[static_cast<size_t>(round * devices + source)] = their_times[static_cast<size_t>(round)];
        // The arrival at `source` is the hand-off of the block its predecessor held at `round`.
        if (round + 1 < devices) {
          handoff_us[static_cast<size_t>(round * devices + (source + ranks - 1) % ranks)] =
              their_times[static_cast<size_t>(devices + round)];
        }
      }
      wall = std::max(wall, their_times[static_cast<size_t>(2 * devices)]);
      write_rows(theirs, problem.shard(source).positions, c.heads, 0, c, m.output);
    }
    record_iteration(m, iteration, options, std::move(kernel_us), std::move(handoff_us), wall);
  }
  m.iterations = options.iterations;
  return m;
}

class MpiBackend final : public RingBackend {
 public:
  MpiBackend() : device_name_(cpu_model_name()) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      int provided = 0;
      // One thread calls MPI (the ring's compute and its hand-off share the main thread).
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_mpi_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
  }
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;
  ~MpiBackend() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && finalized == 0) MPI_Finalize();
  }

  [[nodiscard]] std::string name() const override { return "mpi"; }
  [[nodiscard]] std::string device_name() const override { return device_name_; }
  [[nodiscard]] bool supports(Precision p) const override { return p == Precision::fp32 || p == Precision::fp64; }
  [[nodiscard]] std::optional<Count> launched_devices() const override { return ranks_; }
  [[nodiscard]] bool reports() const override { return rank_ == 0; }
  [[nodiscard]] std::vector<std::string> device_hosts(const RunOptions& options) override {
    return mpi::gather_hosts(rank_, ranks_, options.timeout_s);
  }
  [[nodiscard]] RingMeasurement run(const RingProblem& problem, const RunOptions& options) override {
    const RingCase& c = problem.ring_case();
    if (c.devices != ranks_) {  // the CLI checks this first; a library caller gets the same line
      throw model::InputError(fmt::format("--devices {}: --backend mpi runs one rank per device and this job has {} ranks",
                                          c.devices, ranks_));
    }
    if (!supports(c.precision)) {
      throw model::InputError(fmt::format("--dtype {}: the mpi backend computes in fp32 or fp64", precision_name(c.precision)));
    }
    return c.precision == Precision::fp64 ? run_rank<double>(problem, options, rank_, device_name_)
                                          : run_rank<float>(problem, options, rank_, device_name_);
  }

 private:
  std::string device_name_;
  bool owns_mpi_ = false;
  int rank_ = 0;
  int ranks_ = 1;
};

}  // namespace

std::unique_ptr<RingBackend> make_mpi_backend() { return std::make_unique<MpiBackend>(); }

}  // namespace stripesim::validate
