#include "stripesim/validate/cpu_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>

#include "stripesim/model/input_error.hpp"
#include "stripesim/model/work_model.hpp"

namespace stripesim::validate {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point since) {
  return std::chrono::duration<double, std::micro>(Clock::now() - since).count();
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "cpu";
}

// One K/V block as it travels: keys and values of every K/V head, and the original positions.
template <typename T>
struct KvBlock {
  std::vector<T> k, v;
  std::vector<Position> positions;
};

// What a device keeps across rounds: its queries and the online-softmax state of each
// (query, head): unnormalised output, running max and running sum.
template <typename T>
struct DeviceState {
  std::vector<T> q;
  std::vector<T> out;
  std::vector<T> row_max;
  std::vector<T> row_sum;
};

template <typename T>
std::vector<T> gather(const std::vector<double>& values, const std::vector<Position>& positions, Count row) {
  std::vector<T> out(positions.size() * static_cast<size_t>(row));
  for (size_t l = 0; l < positions.size(); ++l) {
    const auto* src = &values[static_cast<size_t>(positions[l] * row)];
    std::transform(src, src + row, out.begin() + static_cast<std::ptrdiff_t>(l * static_cast<size_t>(row)),
                   [](double x) { return static_cast<T>(x); });
  }
  return out;
}

// Tile classes, decided exactly from positions like the work model counts them.
enum class TileClass { inactive, partial, full };

TileClass classify(const DeviceShard& queries, Count q0, Count q1, const std::vector<Position>& keys, Count k0,
                   Count k1) {
  Count allowed = 0;
  for (Count i = q0; i < q1; ++i) {
    const Position lo = queries.lowest_key[static_cast<size_t>(i)];
    const Position hi = queries.highest_key[static_cast<size_t>(i)];
    for (Count j = k0; j < k1; ++j) {
      const Position key = keys[static_cast<size_t>(j)];
      allowed += (lo <= key && key <= hi) ? 1 : 0;
    }
  }
  if (allowed == 0) return TileClass::inactive;
  return allowed == (q1 - q0) * (k1 - k0) ? TileClass::full : TileClass::partial;
}

// One (round, device) kernel: every active tile of (local queries) x (keys of the block held),
// for every head, folded into the running softmax state.
template <typename T>
void block_attention(const RingCase& c, double scale_d, const DeviceShard& queries, DeviceState<T>& state,
                     const KvBlock<T>& block) {
  const Count block_len = static_cast<Count>(queries.positions.size());
  const auto heads = static_cast<size_t>(c.heads);
  const auto kv_heads = static_cast<size_t>(c.kv_heads);
  const auto dim = static_cast<size_t>(c.head_dim);
  const size_t group = heads / kv_heads;
  const T scale = static_cast<T>(scale_d);
  const T minus_inf = -std::numeric_limits<T>::infinity();
  std::vector<T> scores(static_cast<size_t>(c.tile.key));
  for (Count q0 = 0; q0 < block_len; q0 += c.tile.query) {
    const Count q1 = std::min(block_len, q0 + c.tile.query);
    for (Count k0 = 0; k0 < block_len; k0 += c.tile.key) {
      const Count k1 = std::min(block_len, k0 + c.tile.key);
      const TileClass tile = classify(queries, q0, q1, block.positions, k0, k1);
      if (tile == TileClass::inactive) continue;  // tile skipping
      for (size_t h = 0; h < heads; ++h) {
        const size_t kvh = h / group;
        for (Count i = q0; i < q1; ++i) {
          const auto row = static_cast<size_t>(i) * heads + h;
          const T* qrow = &state.q[row * dim];
          T tile_max = minus_inf;
          // Like a tensor-core kernel, compute the whole tile and mask afterwards: a partial tile
          // costs a full tile plus the mask, which is what the simulator's cost model assumes.
          for (Count j = k0; j < k1; ++j) {
            const auto jj = static_cast<size_t>(j);
            const T* krow = &block.k[(jj * kv_heads + kvh) * dim];
            T dot = 0;
            for (size_t d = 0; d < dim; ++d) dot += qrow[d] * krow[d];
            T s = dot * scale;
            if (tile == TileClass::partial) {
              const Position key = block.positions[jj];
              const bool allowed =
                  queries.lowest_key[static_cast<size_t>(i)] <= key && key <= queries.highest_key[static_cast<size_t>(i)];
              s = allowed ? s : minus_inf;
            }
            scores[static_cast<size_t>(j - k0)] = s;
            tile_max = std::max(tile_max, s);
          }
          if (tile_max == minus_inf) continue;  // this row sees nothing in the tile
          const T new_max = std::max(state.row_max[row], tile_max);
          const T correction = std::exp(state.row_max[row] - new_max);  // exp(-inf) = 0 on the first tile
          T* orow = &state.out[row * dim];
          for (size_t d = 0; d < dim; ++d) orow[d] *= correction;
          T sum = 0;
          for (Count j = k0; j < k1; ++j) {
            const T weight = std::exp(scores[static_cast<size_t>(j - k0)] - new_max);  // 0 where masked
            sum += weight;
            const T* vrow = &block.v[(static_cast<size_t>(j) * kv_heads + kvh) * dim];
            for (size_t d = 0; d < dim; ++d) orow[d] += weight * vrow[d];
          }
          state.row_sum[row] = state.row_sum[row] * correction + sum;
          state.row_max[row] = new_max;
        }
      }
    }
  }
}

template <typename T>
RingMeasurement run_ring(const RingProblem& problem, const RunOptions& options, std::string device_name) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const Count block_len = problem.block_size();
  const Count q_row = c.heads * c.head_dim;
  const Count kv_row = c.kv_heads * c.head_dim;
  const auto cells = static_cast<size_t>(devices * devices);

  std::vector<DeviceState<T>> states(static_cast<size_t>(devices));
  // Two buffers per device: the block it computes on and the one arriving from d - 1 (double
  // buffering, as the GPU backends do).
  std::vector<KvBlock<T>> current(static_cast<size_t>(devices)), incoming(static_cast<size_t>(devices));
  for (Count d = 0; d < devices; ++d) {
    const auto& positions = problem.shard(d).positions;
    states[static_cast<size_t>(d)].q = gather<T>(problem.q(), positions, q_row);
    incoming[static_cast<size_t>(d)] = {std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                                        std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                                        std::vector<Position>(static_cast<size_t>(block_len))};
  }

  RingMeasurement m;
  m.backend = "cpu";
  m.device_name = std::move(device_name);
  m.handoff_bytes = block_len * (2 * kv_row * static_cast<Count>(sizeof(T)) + static_cast<Count>(sizeof(Position)));
  for (Count iteration = 0; iteration < options.warmup + options.iterations; ++iteration) {
    const bool timed = iteration >= options.warmup;
    std::vector<double> kernel_us(cells, 0.0), handoff_us(cells, 0.0);
    m.output.assign(static_cast<size_t>(c.seq_len * q_row), std::numeric_limits<double>::quiet_NaN());
    for (Count d = 0; d < devices; ++d) {
      auto& s = states[static_cast<size_t>(d)];
      s.out.assign(static_cast<size_t>(block_len * q_row), T{0});
      s.row_max.assign(static_cast<size_t>(block_len * c.heads), -std::numeric_limits<T>::infinity());
      s.row_sum.assign(static_cast<size_t>(block_len * c.heads), T{0});
      const auto& positions = problem.shard(d).positions;
      current[static_cast<size_t>(d)] = {gather<T>(problem.k(), positions, kv_row), gather<T>(problem.v(), positions, kv_row),
                                         positions};
    }
    const auto ring_start = Clock::now();
    for (Count round = 0; round < devices; ++round) {
      for (Count d = 0; d < devices; ++d) {
        if (!problem.block_active(round, d)) continue;
        const auto start = Clock::now();
        block_attention(c, problem.scale(), problem.shard(d), states[static_cast<size_t>(d)],
                        current[static_cast<size_t>(d)]);
        kernel_us[static_cast<size_t>(round * devices + d)] = elapsed_us(start);
      }
      if (round + 1 == devices) break;  // the last round hands nothing on
      for (Count d = 0; d < devices; ++d) {
        const auto start = Clock::now();
        const auto& from = current[static_cast<size_t>(d)];
        auto& to = incoming[static_cast<size_t>((d + 1) % devices)];
        std::copy(from.k.begin(), from.k.end(), to.k.begin());
        std::copy(from.v.begin(), from.v.end(), to.v.begin());
        std::copy(from.positions.begin(), from.positions.end(), to.positions.begin());
        handoff_us[static_cast<size_t>(round * devices + d)] = elapsed_us(start);
      }
      std::swap(current, incoming);
    }
    // Normalise and undo the layout: local row l of device d is original position positions[l].
    for (Count d = 0; d < devices; ++d) {
      const auto& s = states[static_cast<size_t>(d)];
      const auto& positions = problem.shard(d).positions;
      for (Count l = 0; l < block_len; ++l) {
        for (Count h = 0; h < c.heads; ++h) {
          const auto row = static_cast<size_t>(l * c.heads + h);
          const T sum = s.row_sum[row];
          for (Count i = 0; i < c.head_dim; ++i) {
            m.output[static_cast<size_t>((positions[static_cast<size_t>(l)] * c.heads + h) * c.head_dim + i)] =
                static_cast<double>(s.out[row * static_cast<size_t>(c.head_dim) + static_cast<size_t>(i)] / sum);
          }
        }
      }
    }
    const double wall = elapsed_us(ring_start);
    if (timed) {
      m.kernel_us.push_back(std::move(kernel_us));
      m.handoff_us.push_back(std::move(handoff_us));
      m.wall_us.push_back(wall);
    }
  }
  m.iterations = options.iterations;
  return m;
}

class CpuBackend final : public RingBackend {
 public:
  CpuBackend() : device_name_(cpu_model_name()) {}
  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] std::string device_name() const override { return device_name_; }
  [[nodiscard]] bool supports(Precision p) const override { return p == Precision::fp32 || p == Precision::fp64; }
  [[nodiscard]] RingMeasurement run(const RingProblem& problem, const RunOptions& options) override {
    const Precision p = problem.ring_case().precision;
    if (!supports(p)) {
      throw model::InputError(fmt::format("--dtype {}: the cpu backend computes in fp32 or fp64", precision_name(p)));
    }
    return p == Precision::fp64 ? run_ring<double>(problem, options, device_name_)
                                : run_ring<float>(problem, options, device_name_);
  }

 private:
  std::string device_name_;
};

}  // namespace

std::unique_ptr<RingBackend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace stripesim::validate
