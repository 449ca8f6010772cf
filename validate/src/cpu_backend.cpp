#include "stripesim/validate/cpu_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/validate/cpu_ring.hpp"
#include "stripesim/validate/ulysses_split.hpp"

namespace stripesim::validate {
namespace {

using namespace cpu_ring;
using Clock = std::chrono::steady_clock;

// One iteration's records, [round * devices + device] cells (0 where nothing ran), and the
// outputs every algorithm fills in original order. The backward cells stay empty for a
// forward case.
struct Iteration {
  std::vector<double> kernel_us, handoff_us, backward_kernel_us, backward_handoff_us;
  std::vector<double>& output;
  std::vector<double>& gradients;
};

// The iteration loop every algorithm shares: `prepare` (untimed: each device's own data in
// place), then `iterate` (timed as the wall) filling an Iteration, its outputs poisoned before
// every iteration.
template <typename Prepare, typename Iterate>
RingMeasurement measure(const RingProblem& problem, const RunOptions& options, std::string device_name,
                        std::int64_t handoff_bytes, Prepare&& prepare, Iterate&& iterate) {
  const RingCase& c = problem.ring_case();
  const auto cells = static_cast<size_t>(c.devices * c.devices);
  const double poison = std::numeric_limits<double>::quiet_NaN();
  RingMeasurement m;
  m.backend = "cpu";
  m.device_name = std::move(device_name);
  m.handoff_bytes = handoff_bytes;
  for (Count iteration = 0; iteration < options.warmup + options.iterations; ++iteration) {
    const std::vector<double> zeros(c.backward ? cells : 0, 0.0);
    Iteration it{std::vector<double>(cells, 0.0), std::vector<double>(cells, 0.0), zeros, zeros, m.output, m.gradients};
    m.output.assign(static_cast<size_t>(c.seq_len * c.heads * c.head_dim), poison);
    if (c.backward) m.gradients.assign(static_cast<size_t>(gradient_count(c)), poison);
    prepare();
    const auto start = Clock::now();
    iterate(it);
    const double wall_us = elapsed_us(start);
    if (c.backward && iteration >= options.warmup) {
      m.backward_kernel_us.push_back(std::move(it.backward_kernel_us));
      m.backward_handoff_us.push_back(std::move(it.backward_handoff_us));
    }
    record_iteration(m, iteration, options, std::move(it.kernel_us), std::move(it.handoff_us), wall_us);
  }
  m.iterations = options.iterations;
  return m;
}

// The backward ring after the forward (the ring-flash-attention scheme): every device starts
// from its own K/V block (kept from the forward) and a zero dK/dV accumulator for it; at round r
// device d computes on the block that started on (d - r) mod N, then hands the block on to d + 1
// (rounds 0 .. N-2) and the accumulator with it (every round: after the N-th hop each
// accumulator is home). dQ stays on its device. Cells and gradients go into `it`.
template <typename T>
void backward_ring(const RingProblem& problem, const std::vector<DeviceState<T>>& forward, const std::vector<KvBlock<T>>& own,
                   std::vector<KvBlock<T>>& current, std::vector<KvBlock<T>>& incoming, Iteration& it) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const Count block_len = problem.block_size();
  const auto kv_elements = static_cast<size_t>(block_len * c.kv_heads * c.head_dim);
  std::vector<BackwardState<T>> states(static_cast<size_t>(devices));
  std::vector<GradBlock<T>> grads(static_cast<size_t>(devices)), arriving(static_cast<size_t>(devices));
  for (Count d = 0; d < devices; ++d) {
    const auto i = static_cast<size_t>(d);
    start_backward(forward[i], gather<T>(problem.dout(), problem.shard(d).positions, c.heads * c.head_dim), c.head_dim, states[i]);
    grads[i] = {std::vector<T>(kv_elements, T{0}), std::vector<T>(kv_elements, T{0})};
    arriving[i] = grads[i];
  }
  // Round 0 reads each device's own block where it is; later rounds what arrived.
  std::vector<const KvBlock<T>*> holding(static_cast<size_t>(devices));
  for (Count d = 0; d < devices; ++d) holding[static_cast<size_t>(d)] = &own[static_cast<size_t>(d)];
  for (Count round = 0; round < devices; ++round) {
    for (Count d = 0; d < devices; ++d) {
      if (!problem.block_active(round, d)) continue;
      const auto start = Clock::now();
      block_attention_backward(c, problem.scale(), problem.shard(d), states[static_cast<size_t>(d)],
                               *holding[static_cast<size_t>(d)], grads[static_cast<size_t>(d)]);
      it.backward_kernel_us[static_cast<size_t>(round * devices + d)] = elapsed_us(start);
    }
    for (Count d = 0; d < devices; ++d) {
      const auto start = Clock::now();
      const auto next = static_cast<size_t>((d + 1) % devices);
      if (round + 1 < devices) {
        const KvBlock<T>& from = *holding[static_cast<size_t>(d)];
        KvBlock<T>& to = incoming[next];
        std::copy(from.k.begin(), from.k.end(), to.k.begin());
        std::copy(from.v.begin(), from.v.end(), to.v.begin());
        std::copy(from.positions.begin(), from.positions.end(), to.positions.begin());
      }
      const GradBlock<T>& grad = grads[static_cast<size_t>(d)];
      std::copy(grad.dk.begin(), grad.dk.end(), arriving[next].dk.begin());
      std::copy(grad.dv.begin(), grad.dv.end(), arriving[next].dv.begin());
      it.backward_handoff_us[static_cast<size_t>(round * devices + d)] = elapsed_us(start);
    }
    std::swap(grads, arriving);
    if (round + 1 < devices) {
      std::swap(current, incoming);
      for (Count d = 0; d < devices; ++d) holding[static_cast<size_t>(d)] = &current[static_cast<size_t>(d)];
    }
  }
  // Undo the layout: dQ from each device's rows, dK and dV from the accumulator now home.
  for (Count d = 0; d < devices; ++d) {
    const auto i = static_cast<size_t>(d);
    place_gradient_rows(states[i].dq.data(), grads[i].dk.data(), grads[i].dv.data(), problem.shard(d).positions, c, it.gradients);
  }
}

template <typename T>
RingMeasurement run_ring(const RingProblem& problem, const RunOptions& options, std::string device_name) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const Count block_len = problem.block_size();
  const Count kv_row = c.kv_heads * c.head_dim;

  std::vector<DeviceState<T>> states(static_cast<size_t>(devices));
  // Two buffers per device: the block it computes on and the one arriving from d - 1 (double
  // buffering, as the GPU backends do). `own` keeps each device's block for the backward, as
  // training keeps K and V for it.
  std::vector<KvBlock<T>> own(static_cast<size_t>(devices)), current(static_cast<size_t>(devices)),
      incoming(static_cast<size_t>(devices));
  for (Count d = 0; d < devices; ++d) {
    states[static_cast<size_t>(d)].q = shard_queries<T>(problem, d);
    incoming[static_cast<size_t>(d)] = {std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                                        std::vector<T>(static_cast<size_t>(block_len * kv_row)),
                                        std::vector<Position>(static_cast<size_t>(block_len))};
  }

  const std::int64_t handoff_bytes = block_bytes<T>(block_len, kv_row);
  auto prepare = [&] {
    for (Count d = 0; d < devices; ++d) {
      reset(states[static_cast<size_t>(d)], block_len, c.heads, c.head_dim);
      own[static_cast<size_t>(d)] = shard_kv<T>(problem, d);
      current[static_cast<size_t>(d)] = own[static_cast<size_t>(d)];
    }
  };
  auto iterate = [&](Iteration& it) {
    for (Count round = 0; round < devices; ++round) {
      for (Count d = 0; d < devices; ++d) {
        if (!problem.block_active(round, d)) continue;
        const auto start = Clock::now();
        block_attention(c, problem.scale(), problem.shard(d), states[static_cast<size_t>(d)],
                        current[static_cast<size_t>(d)]);
        it.kernel_us[static_cast<size_t>(round * devices + d)] = elapsed_us(start);
      }
      if (round + 1 == devices) break;  // the last round hands nothing on
      for (Count d = 0; d < devices; ++d) {
        const auto start = Clock::now();
        const auto& from = current[static_cast<size_t>(d)];
        auto& to = incoming[static_cast<size_t>((d + 1) % devices)];
        std::copy(from.k.begin(), from.k.end(), to.k.begin());
        std::copy(from.v.begin(), from.v.end(), to.v.begin());
        std::copy(from.positions.begin(), from.positions.end(), to.positions.begin());
        it.handoff_us[static_cast<size_t>(round * devices + d)] = elapsed_us(start);
      }
      std::swap(current, incoming);
    }
    // Normalise and undo the layout.
    for (Count d = 0; d < devices; ++d) {
      write_rows(states[static_cast<size_t>(d)], problem.shard(d).positions, c.heads, 0, c, it.output);
    }
    if (c.backward) backward_ring(problem, states, own, current, incoming, it);
  };
  RingMeasurement m = measure(problem, options, std::move(device_name), handoff_bytes, prepare, iterate);
  if (c.backward) m.gradient_handoff_bytes = accumulator_bytes<T>(block_len, kv_row);
  return m;
}

// All-gather: every device copies each block into its gathered K/V (rank order, as the
// collective leaves it) and attends its own queries to all of it in one call. The gather is
// recorded as round 0's hand-off of each device, the call as its round 0 kernel.
template <typename T>
RingMeasurement run_allgather(const RingProblem& problem, const RunOptions& options, std::string device_name) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const Count block_len = problem.block_size();
  const Count kv_row = c.kv_heads * c.head_dim;
  std::vector<DeviceState<T>> states(static_cast<size_t>(devices));
  std::vector<KvBlock<T>> own(static_cast<size_t>(devices)), gathered(static_cast<size_t>(devices));
  for (Count d = 0; d < devices; ++d) {
    states[static_cast<size_t>(d)].q = shard_queries<T>(problem, d);
  }
  auto prepare = [&] {
    for (Count d = 0; d < devices; ++d) {
      reset(states[static_cast<size_t>(d)], block_len, c.heads, c.head_dim);
      own[static_cast<size_t>(d)] = shard_kv<T>(problem, d);
      gathered[static_cast<size_t>(d)] = {};
    }
  };
  auto iterate = [&](Iteration& it) {
    for (Count d = 0; d < devices; ++d) {
      const auto start = Clock::now();
      KvBlock<T>& all = gathered[static_cast<size_t>(d)];
      for (const KvBlock<T>& block : own) {
        all.k.insert(all.k.end(), block.k.begin(), block.k.end());
        all.v.insert(all.v.end(), block.v.begin(), block.v.end());
        all.positions.insert(all.positions.end(), block.positions.begin(), block.positions.end());
      }
      it.handoff_us[static_cast<size_t>(d)] = elapsed_us(start);
    }
    for (Count d = 0; d < devices; ++d) {
      const auto start = Clock::now();
      block_attention(c, problem.scale(), problem.shard(d), states[static_cast<size_t>(d)], gathered[static_cast<size_t>(d)]);
      it.kernel_us[static_cast<size_t>(d)] = elapsed_us(start);
      write_rows(states[static_cast<size_t>(d)], problem.shard(d).positions, c.heads, 0, c, it.output);
    }
  };
  return measure(problem, options, std::move(device_name), block_bytes<T>(block_len, kv_row), prepare, iterate);
}

// Ulysses: each device takes H / N query heads (and their K/V heads) of the whole sequence from
// every device's shard (the all-to-all), attends the whole sequence in order in one call, and
// sends each device its rows back (the all-to-all out). Both all-to-alls are recorded as round 0's
// hand-off of the device, the call as its round 0 kernel.
template <typename T>
RingMeasurement run_ulysses(const RingProblem& problem, const RunOptions& options, std::string device_name) {
  const RingCase& c = problem.ring_case();
  const Count devices = c.devices;
  const UlyssesSplit split = ulysses_split(problem, static_cast<Count>(sizeof(T)));
  const RingCase& per_device = split.per_device;
  std::vector<DeviceState<T>> states(static_cast<size_t>(devices));
  std::vector<KvBlock<T>> kv(static_cast<size_t>(devices));
  auto prepare = [&] {
    for (Count d = 0; d < devices; ++d) {
      reset(states[static_cast<size_t>(d)], c.seq_len, per_device.heads, c.head_dim);
      states[static_cast<size_t>(d)].q.clear();
      kv[static_cast<size_t>(d)] = {};
    }
  };
  auto iterate = [&](Iteration& it) {
    for (Count d = 0; d < devices; ++d) {
      const auto start = Clock::now();
      states[static_cast<size_t>(d)].q = heads_of<T>(problem.q(), c.heads, split.first_head(d), per_device.heads, c.head_dim);
      const Count first_kv = split.first_kv_head(d);
      kv[static_cast<size_t>(d)] = {heads_of<T>(problem.k(), c.kv_heads, first_kv, per_device.kv_heads, c.head_dim),
                                    heads_of<T>(problem.v(), c.kv_heads, first_kv, per_device.kv_heads, c.head_dim),
                                    split.whole.positions};
      it.handoff_us[static_cast<size_t>(d)] = elapsed_us(start);
    }
    for (Count d = 0; d < devices; ++d) {
      const auto start = Clock::now();
      block_attention(per_device, problem.scale(), split.whole, states[static_cast<size_t>(d)], kv[static_cast<size_t>(d)]);
      it.kernel_us[static_cast<size_t>(d)] = elapsed_us(start);
    }
    for (Count d = 0; d < devices; ++d) {
      const auto start = Clock::now();
      write_rows(states[static_cast<size_t>(d)], split.whole.positions, per_device.heads, split.first_head(d), c, it.output);
      it.handoff_us[static_cast<size_t>(d)] += elapsed_us(start);
    }
  };
  return measure(problem, options, std::move(device_name), split.pair_bytes, prepare, iterate);
}

class CpuBackend final : public RingBackend {
 public:
  CpuBackend() : device_name_(cpu_model_name()) {}
  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] bool concurrent_devices() const override { return false; }
  [[nodiscard]] std::string device_name() const override { return device_name_; }
  [[nodiscard]] bool supports(Precision p) const override { return p == Precision::fp32 || p == Precision::fp64; }
  [[nodiscard]] RingMeasurement run(const RingProblem& problem, const RunOptions& options) override {
    const Precision p = problem.ring_case().precision;
    if (!supports(p)) {
      throw model::InputError(fmt::format("--dtype {}: the cpu backend computes in fp32 or fp64", precision_name(p)));
    }
    const std::string& cp = problem.ring_case().cp;
    if (cp == "allgather") {
      return p == Precision::fp64 ? run_allgather<double>(problem, options, device_name_)
                                  : run_allgather<float>(problem, options, device_name_);
    }
    if (cp == "ulysses") {
      return p == Precision::fp64 ? run_ulysses<double>(problem, options, device_name_)
                                  : run_ulysses<float>(problem, options, device_name_);
    }
    return p == Precision::fp64 ? run_ring<double>(problem, options, device_name_)
                                : run_ring<float>(problem, options, device_name_);
  }

 private:
  std::string device_name_;
};

}  // namespace

std::string cpu_ring::cpu_model_name() {
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

std::unique_ptr<RingBackend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace stripesim::validate
