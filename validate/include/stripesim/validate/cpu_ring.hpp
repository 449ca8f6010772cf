#pragma once
// The CPU backend's ring pieces, shared by the backends that run it on host cores: the cpu backend
// (N virtual devices in one process) and the mpi backend (a process per device). One K/V block as
// it travels, one device's online-softmax state, and the kernel call folding a block into it; for
// the backward, a device's state, the dK/dV accumulator travelling with a block, and its call.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "stripesim/validate/handoff_bytes.hpp"
#include "stripesim/validate/ring_backend.hpp"
#include "stripesim/validate/ring_problem.hpp"

namespace stripesim::validate::cpu_ring {

// The CPU's model name from /proc/cpuinfo ("cpu" when it says none): the device the report names.
[[nodiscard]] std::string cpu_model_name();

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

// Microseconds since `since` on the clock every host backend times with.
inline double elapsed_us(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - since).count();
}

// Rows positions[0], positions[1], ... of `values` (rows of `row` elements), as T.
template <typename T, typename S>
std::vector<T> gather(const std::vector<S>& values, const std::vector<Position>& positions, Count row) {
  std::vector<T> out(positions.size() * static_cast<size_t>(row));
  for (size_t l = 0; l < positions.size(); ++l) {
    const auto* src = &values[static_cast<size_t>(positions[l] * row)];
    std::transform(src, src + row, out.begin() + static_cast<std::ptrdiff_t>(l * static_cast<size_t>(row)),
                   [](S x) { return static_cast<T>(x); });
  }
  return out;
}

// Device d's own queries, [(local * heads + h) * head_dim + i].
template <typename T>
std::vector<T> shard_queries(const RingProblem& problem, Count device) {
  return gather<T>(problem.q(), problem.shard(device).positions, problem.ring_case().heads * problem.ring_case().head_dim);
}

// Device d's own K/V block: its shard's keys and values, and their positions.
template <typename T>
KvBlock<T> shard_kv(const RingProblem& problem, Count device) {
  const auto& positions = problem.shard(device).positions;
  const Count kv_row = problem.ring_case().kv_heads * problem.ring_case().head_dim;
  return {gather<T>(problem.k(), positions, kv_row), gather<T>(problem.v(), positions, kv_row), positions};
}

// Tile classes, decided exactly from positions like the work model counts them.
enum class TileClass { inactive, partial, full };

inline TileClass classify(const DeviceShard& queries, Count q0, Count q1, const std::vector<Position>& keys, Count k0,
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

// Whether local query i may see the key at original position `key`.
inline bool allows(const DeviceShard& queries, Count i, Position key) {
  return queries.lowest_key[static_cast<size_t>(i)] <= key && key <= queries.highest_key[static_cast<size_t>(i)];
}

// Calls visit(i, h, k0, k1, class) for every (local query i, head h) of every active tile of
// (local queries) x (keys [k0, k1)), tiles of the case's shape in local order (the last ones
// short), query tile by query tile, and after_row() after each query tile: tile skipping
// exactly as the work model counts.
template <typename Visit, typename AfterRow>
void for_each_row_of_active_tiles(const RingCase& c, const DeviceShard& queries, const std::vector<Position>& keys,
                                  Visit&& visit, AfterRow&& after_row) {
  const Count block_len = static_cast<Count>(queries.positions.size());
  const Count keys_len = static_cast<Count>(keys.size());
  for (Count q0 = 0; q0 < block_len; q0 += c.tile.query) {
    const Count q1 = std::min(block_len, q0 + c.tile.query);
    for (Count k0 = 0; k0 < keys_len; k0 += c.tile.key) {
      const Count k1 = std::min(keys_len, k0 + c.tile.key);
      const TileClass tile = classify(queries, q0, q1, keys, k0, k1);
      if (tile == TileClass::inactive) continue;
      for (Count h = 0; h < c.heads; ++h) {
        for (Count i = q0; i < q1; ++i) visit(i, static_cast<size_t>(h), k0, k1, tile);
      }
    }
    after_row();
  }
}

// One kernel call: every active tile of (local queries) x (keys of the block held: one ring
// block, or every block gathered), for every head, folded into the running softmax state.
// `between_tiles`, when given, runs after every query tile: the mpi backend drives its
// nonblocking hand-off from there (MPI progresses a transfer only inside MPI calls), so the
// transfer overlaps the compute and its completion is seen within one tile.
template <typename T>
void block_attention(const RingCase& c, double scale_d, const DeviceShard& queries, DeviceState<T>& state,
                     const KvBlock<T>& block, const std::function<void()>& between_tiles = {}) {
  const auto heads = static_cast<size_t>(c.heads);
  const auto kv_heads = static_cast<size_t>(c.kv_heads);
  const auto dim = static_cast<size_t>(c.head_dim);
  const size_t group = heads / kv_heads;
  const T scale = static_cast<T>(scale_d);
  const T minus_inf = -std::numeric_limits<T>::infinity();
  std::vector<T> scores(static_cast<size_t>(c.tile.key));
  const auto visit = [&](Count i, size_t h, Count k0, Count k1, TileClass tile) {
    const size_t kvh = h / group;
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
      if (tile == TileClass::partial && !allows(queries, i, block.positions[jj])) s = minus_inf;
      scores[static_cast<size_t>(j - k0)] = s;
      tile_max = std::max(tile_max, s);
    }
    if (tile_max == minus_inf) return;  // this row sees nothing in the tile
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
  };
  for_each_row_of_active_tiles(c, queries, block.positions, visit, [&] {
    if (between_tiles) between_tiles();
  });
}

// What a device keeps for the backward: its queries and dO, each (query, head)'s log-sum-exp and
// delta = rowsum(dO * O) from the forward, and its dQ accumulator (dQ never leaves the device).
template <typename T>
struct BackwardState {
  std::vector<T> q, dout, lse, delta, dq;
};

// The dK/dV accumulator of one K/V block: it travels with the block and goes home at the end.
template <typename T>
struct GradBlock {
  std::vector<T> dk, dv;
};

// The backward of one kernel call: every active tile of (local queries) x (the block's keys),
// every head, recomputing P = exp(S - lse) from the forward's log-sum-exp and adding
// dV += P^T dO, dQ += dS K and dK += dS^T Q with dS = P * (dO V^T - delta) * scale. The same
// tiles as the forward (exactly the work model's), a partial tile computed whole and masked.
// `between_tiles` as the forward's.
template <typename T>
void block_attention_backward(const RingCase& c, double scale_d, const DeviceShard& queries, BackwardState<T>& state,
                              const KvBlock<T>& block, GradBlock<T>& grad, const std::function<void()>& between_tiles = {}) {
  const auto heads = static_cast<size_t>(c.heads);
  const auto kv_heads = static_cast<size_t>(c.kv_heads);
  const auto dim = static_cast<size_t>(c.head_dim);
  const size_t group = heads / kv_heads;
  const T scale = static_cast<T>(scale_d);
  const auto visit = [&](Count i, size_t h, Count k0, Count k1, TileClass tile) {
    const size_t kvh = h / group;
    const auto row = static_cast<size_t>(i) * heads + h;
    const T* qrow = &state.q[row * dim];
    const T* dorow = &state.dout[row * dim];
    T* dqrow = &state.dq[row * dim];
    for (Count j = k0; j < k1; ++j) {
      const auto at = (static_cast<size_t>(j) * kv_heads + kvh) * dim;
      T dot = 0;
      for (size_t d = 0; d < dim; ++d) dot += qrow[d] * block.k[at + d];
      T s = dot * scale - state.lse[row];
      // Like a tensor-core kernel, the whole tile is computed and the mask applied to it (P = 0
      // where masked, so nothing flows back): a partial tile costs a full one plus the mask.
      if (tile == TileClass::partial && !allows(queries, i, block.positions[static_cast<size_t>(j)])) {
        s = -std::numeric_limits<T>::infinity();
      }
      const T prob = std::exp(s);
      T dp = 0;
      for (size_t d = 0; d < dim; ++d) dp += dorow[d] * block.v[at + d];
      const T ds = prob * (dp - state.delta[row]) * scale;
      for (size_t d = 0; d < dim; ++d) {
        grad.dv[at + d] += prob * dorow[d];
        dqrow[d] += ds * block.k[at + d];
        grad.dk[at + d] += ds * qrow[d];
      }
    }
  };
  for_each_row_of_active_tiles(c, queries, block.positions, visit, [&] {
    if (between_tiles) between_tiles();
  });
}

template <typename T>
void reset(DeviceState<T>& s, Count rows, Count heads, Count head_dim) {
  s.out.assign(static_cast<size_t>(rows * heads * head_dim), T{0});
  s.row_max.assign(static_cast<size_t>(rows * heads), -std::numeric_limits<T>::infinity());
  s.row_sum.assign(static_cast<size_t>(rows * heads), T{0});
}

// The finished output of a device's rows: each (row, head) divided by its softmax sum, in the
// state's order [(row * heads + h) * head_dim + i].
template <typename T>
std::vector<T> normalised(const DeviceState<T>& s, Count head_dim) {
  std::vector<T> out(s.out.size());
  for (size_t row = 0; row < s.row_sum.size(); ++row) {
    for (size_t i = 0; i < static_cast<size_t>(head_dim); ++i) {
      out[row * static_cast<size_t>(head_dim) + i] = s.out[row * static_cast<size_t>(head_dim) + i] / s.row_sum[row];
    }
  }
  return out;
}

// The backward state of a device after its forward: log-sum-exp and delta of every
// (query, head) from the forward's running state and normalised output, dQ zeroed.
template <typename T>
void start_backward(const DeviceState<T>& forward, std::vector<T> dout, Count head_dim, BackwardState<T>& out) {
  const std::vector<T> o = normalised(forward, head_dim);
  const auto dim = static_cast<size_t>(head_dim);
  out.q = forward.q;
  out.dout = std::move(dout);
  out.lse.resize(forward.row_sum.size());
  out.delta.assign(forward.row_sum.size(), T{0});
  for (size_t row = 0; row < forward.row_sum.size(); ++row) {
    out.lse[row] = forward.row_max[row] + std::log(forward.row_sum[row]);
    for (size_t i = 0; i < dim; ++i) out.delta[row] += out.dout[row * dim + i] * o[row * dim + i];
  }
  out.dq.assign(out.q.size(), T{0});
}

// Scatters positions.size() rows of `heads` heads ([(l * heads + h) * head_dim + i] from `rows`)
// into `out`, rows of `all_heads` heads: row l goes to row positions[l], its heads to heads
// first_head, first_head + 1, ...
template <typename S, typename D>
void place_rows(const S* rows, const std::vector<Position>& positions, Count heads, Count first_head, Count all_heads,
                Count head_dim, D* out) {
  const auto dim = static_cast<size_t>(head_dim);
  for (size_t l = 0; l < positions.size(); ++l) {
    for (Count h = 0; h < heads; ++h) {
      const S* src = rows + (l * static_cast<size_t>(heads) + static_cast<size_t>(h)) * dim;
      D* dst = out + static_cast<size_t>(positions[l] * all_heads + first_head + h) * dim;
      std::transform(src, src + dim, dst, [](S x) { return static_cast<D>(x); });
    }
  }
}
template <typename S, typename D>
void place_rows(const S* rows, const std::vector<Position>& positions, Count heads, Count first_head, Count all_heads,
                Count head_dim, std::vector<D>& out) {
  place_rows(rows, positions, heads, first_head, all_heads, head_dim, out.data());
}

// Writes one device's gradients into `gradients` (reference_gradients's layout, ORIGINAL order):
// dQ of its rows ([local][heads][head_dim]), and dK and dV of the block whose positions these
// are ([local][kv_heads][head_dim]).
template <typename S>
void place_gradient_rows(const S* dq, const S* dk, const S* dv, const std::vector<Position>& positions, const RingCase& c,
                         std::vector<double>& gradients) {
  double* dq_out = gradients.data();
  double* dk_out = dq_out + c.seq_len * c.heads * c.head_dim;
  double* dv_out = dk_out + c.seq_len * c.kv_heads * c.head_dim;
  place_rows(dq, positions, c.heads, 0, c.heads, c.head_dim, dq_out);
  place_rows(dk, positions, c.kv_heads, 0, c.kv_heads, c.head_dim, dk_out);
  place_rows(dv, positions, c.kv_heads, 0, c.kv_heads, c.head_dim, dv_out);
}

// Normalises a device's rows and writes them in original order: local row l is original position
// positions[l]; its `heads` heads are the output's heads first_head, first_head + 1, ...
template <typename T>
void write_rows(const DeviceState<T>& s, const std::vector<Position>& positions, Count heads, Count first_head,
                const RingCase& c, std::vector<double>& output) {
  place_rows(normalised(s, c.head_dim).data(), positions, heads, first_head, c.heads, c.head_dim, output);
}

// What a hand-off carries (handoff_bytes.hpp), as the CPU and MPI rings name it.
using validate::accumulator_bytes;
using validate::block_bytes;

// Keeps one iteration's [round * devices + device] kernel and hand-off times and its wall time in
// `m`, unless it was a warm-up iteration.
inline void record_iteration(RingMeasurement& m, Count iteration, const RunOptions& options, std::vector<double> kernel_us,
                             std::vector<double> handoff_us, double wall_us) {
  if (iteration < options.warmup) return;
  m.kernel_us.push_back(std::move(kernel_us));
  m.handoff_us.push_back(std::move(handoff_us));
  m.wall_us.push_back(wall_us);
}

}  // namespace stripesim::validate::cpu_ring
