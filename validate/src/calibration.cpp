#include "stripesim/validate/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stripesim/model/input_error.hpp"
#include "stripesim/validate/measurement_stats.hpp"

namespace stripesim::validate {

std::vector<KernelSample> kernel_samples(const CaseResult& result) {
  const RingCase& c = result.ring_case;
  const Count devices = c.devices;
  const Count block_len = c.seq_len / devices;
  std::vector<KernelSample> samples;
  for (Count r = 0; r < devices; ++r) {
    for (Count d = 0; d < devices; ++d) {
      if (result.work.active_tiles.at(r, d) == 0) continue;  // nothing launched, nothing measured
      KernelSample s;
      s.tiles = {result.work.active_tiles.at(r, d), result.work.partial_tiles.at(r, d),
                 result.work.longest_query_tile.at(r, d)};
      s.query_tiles = model::tiles_covering(block_len, c.tile.query);
      s.streams = c.heads;
      s.tile_flops = 4.0 * static_cast<double>(c.tile.query) * static_cast<double>(c.tile.key) * static_cast<double>(c.head_dim);
      s.measured_us = result.summary.kernel_at(r, d).median;
      samples.push_back(s);
    }
  }
  return samples;
}

std::vector<HandoffSample> handoff_samples(const CaseResult& result) {
  std::vector<HandoffSample> samples;
  const Count devices = result.ring_case.devices;
  for (Count r = 0; r + 1 < devices; ++r) {
    for (Count d = 0; d < devices; ++d) {
      samples.push_back({static_cast<double>(result.handoff_bytes), result.summary.handoff_at(r, d).median});
    }
  }
  return samples;
}

namespace {

// Solves the weighted normal equations over the columns in `free` (the others are fixed at 0).
// A tiny ridge keeps collinear columns (a launch overhead and a block overhead that never vary
// apart) solvable; predictions, not the split between them, are what the fit is judged on.
std::vector<double> solve_least_squares(const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
                                        const std::vector<double>& w, const std::vector<bool>& free) {
  const size_t p = free.size();
  std::vector<size_t> cols;
  for (size_t j = 0; j < p; ++j) {
    if (free[j]) cols.push_back(j);
  }
  const size_t k = cols.size();
  std::vector<std::vector<double>> a(k, std::vector<double>(k + 1, 0.0));
  for (size_t i = 0; i < rows.size(); ++i) {
    const double wi = w[i] * w[i];
    for (size_t r = 0; r < k; ++r) {
      for (size_t c = 0; c < k; ++c) a[r][c] += wi * rows[i][cols[r]] * rows[i][cols[c]];
      a[r][k] += wi * rows[i][cols[r]] * y[i];
    }
  }
  for (size_t r = 0; r < k; ++r) a[r][r] += 1e-12 * std::max(a[r][r], 1e-300);
  // Gaussian elimination with partial pivoting.
  for (size_t col = 0; col < k; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < k; ++r) {
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    }
    std::swap(a[col], a[pivot]);
    if (std::abs(a[col][col]) < 1e-300) continue;  // a column with no signal: left at 0
    for (size_t r = 0; r < k; ++r) {
      if (r == col) continue;
      const double factor = a[r][col] / a[col][col];
      for (size_t c = col; c <= k; ++c) a[r][c] -= factor * a[col][c];
    }
  }
  std::vector<double> theta(p, 0.0);
  for (size_t r = 0; r < k; ++r) theta[cols[r]] = std::abs(a[r][r]) < 1e-300 ? 0.0 : a[r][k] / a[r][r];
  return theta;
}

double median_abs_relative_error(const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
                                 const std::vector<double>& theta) {
  std::vector<double> errors;
  for (size_t i = 0; i < rows.size(); ++i) {
    double prediction = 0;
    for (size_t j = 0; j < theta.size(); ++j) prediction += rows[i][j] * theta[j];
    errors.push_back(std::abs(prediction - y[i]) / y[i]);
  }
  return spread_of(errors).median;
}

}  // namespace

std::vector<double> fit_non_negative(const std::vector<std::vector<double>>& rows, const std::vector<double>& targets,
                                     const std::vector<double>& weights) {
  const size_t p = rows.empty() ? 0 : rows.front().size();
  std::vector<bool> free(p, true);
  // Active set: pin the most negative coefficient at zero and solve again.
  for (size_t round = 0; round <= p; ++round) {
    std::vector<double> theta = solve_least_squares(rows, targets, weights, free);
    size_t worst = p;
    for (size_t j = 0; j < p; ++j) {
      if (free[j] && theta[j] < 0 && (worst == p || theta[j] < theta[worst])) worst = j;
    }
    if (worst == p) return theta;
    free[worst] = false;
  }
  return std::vector<double>(p, 0.0);
}

Calibration calibrate(const std::vector<const CaseResult*>& cases, model::HardwareProfile base, Precision precision,
                      const std::string& device) {
  std::vector<KernelSample> kernels;
  std::vector<HandoffSample> handoffs;
  for (const CaseResult* result : cases) {
    for (const auto& s : kernel_samples(*result)) {
      if (s.measured_us > 0) kernels.push_back(s);
    }
    for (const auto& s : handoff_samples(*result)) {
      if (s.measured_us > 0) handoffs.push_back(s);
    }
  }
  if (kernels.empty()) {
    throw model::InputError("validate --calibrate: the matrix launched no kernel to fit (every block was masked)");
  }
  const std::string peak_key(precision_name(precision));
  if (!base.peak_tflops.contains(peak_key)) {
    throw model::InputError(fmt::format("--hardware {}: lists no peak rate for {}", base.name, peak_key));
  }
  const double slots = static_cast<double>(base.kernel.sms * base.kernel.blocks_per_sm);

  // Features [launch, us_per_flop, us_per_flop * extra, block_overhead] for each branch of the max.
  auto wave_row = [&](const KernelSample& s) {
    const double blocks = static_cast<double>(s.query_tiles * s.streams);
    const double waves = std::ceil(blocks / slots);
    const double scale = waves / blocks * static_cast<double>(s.streams) * s.tile_flops;
    return std::vector<double>{1.0, scale * static_cast<double>(s.tiles.active),
                               scale * static_cast<double>(s.tiles.partial), waves};
  };
  auto longest_row = [&](const KernelSample& s) {
    return std::vector<double>{1.0, static_cast<double>(s.tiles.longest_query_tile) * s.tile_flops, 0.0, 1.0};
  };
  auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
    return sum;
  };
  std::vector<double> y, w;
  for (const auto& s : kernels) {
    y.push_back(s.measured_us);
    w.push_back(1.0 / s.measured_us);  // relative residuals
  }
  std::vector<std::vector<double>> rows;
  for (const auto& s : kernels) rows.push_back(wave_row(s));
  std::vector<double> theta = fit_non_negative(rows, y, w);
  for (int iteration = 0; iteration < 20; ++iteration) {
    bool changed = false;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const auto wave = wave_row(kernels[i]);
      const auto longest = longest_row(kernels[i]);
      const auto& pick = dot(longest, theta) > dot(wave, theta) ? longest : wave;
      if (pick != rows[i]) {
        rows[i] = pick;
        changed = true;
      }
    }
    if (!changed) break;
    theta = fit_non_negative(rows, y, w);
  }

  Calibration out;
  out.kernel_samples = static_cast<Count>(kernels.size());
  out.handoff_samples = static_cast<Count>(handoffs.size());
  out.fit_median_abs_error = median_abs_relative_error(rows, y, theta);
  // A fit with no FLOP term cannot price a tile: keep the smallest positive rate that reproduces
  // the fastest sample rather than dividing by zero.
  out.us_per_flop_per_slot = theta[1] > 0 ? theta[1] : 1e-12;

  model::HardwareProfile& h = base;
  double peak = h.peak_tflops.at(peak_key);
  double efficiency = slots / (peak * 1e6 * out.us_per_flop_per_slot);
  if (efficiency > 1) {
    // Faster than the listed peak (a nominal CPU figure, say): the measurement wins.
    peak *= efficiency;
    h.peak_tflops[peak_key] = peak;
    efficiency = 1;
  }
  h.kernel.efficiency = efficiency;
  h.kernel.launch_overhead_us = theta[0];
  h.kernel.partial_tile_extra = theta[2] / out.us_per_flop_per_slot;
  h.kernel.block_overhead_us = theta[3];
  h.attention_precision = peak_key;
  if (!h.peak_tflops.contains(h.matmul_precision)) h.matmul_precision = peak_key;
  h.attention_flop_weight = h.peak_tflops.at(h.matmul_precision) / h.peak_tflops.at(h.attention_precision);

  if (!handoffs.empty()) {
    std::vector<std::vector<double>> hrows;
    std::vector<double> hy, hw;
    for (const auto& s : handoffs) {
      hrows.push_back({1.0, s.bytes});
      hy.push_back(s.measured_us);
      hw.push_back(1.0 / s.measured_us);
    }
    const auto fit = fit_non_negative(hrows, hy, hw);
    double us_per_byte = fit[1];
    out.hop_latency_us = fit[0];
    if (us_per_byte <= 0) {  // one block size only: all of it is bandwidth
      std::vector<double> rates;
      for (const auto& s : handoffs) rates.push_back(s.measured_us / s.bytes);
      us_per_byte = spread_of(rates).median;
      out.hop_latency_us = 0;
    }
    h.link_bandwidth = 1.0 / (us_per_byte * 1e3);  // 1 GB/s = 1e3 bytes per us
    h.link_latency_us = out.hop_latency_us / 2;     // a hop crosses two links of the generated topology
  }
  h.name = fmt::format("{}-calibrated", h.name);
  h.aliases.clear();
  h.sources = {{"calibrated_on", device},
               {"kernel", fmt::format("stripesim validate --calibrate: {} kernel samples, median fit error {:.1f}%",
                                      out.kernel_samples, 100 * out.fit_median_abs_error)},
               {"link_bandwidth_gbps", fmt::format("stripesim validate --calibrate: {} hand-offs", out.handoff_samples)}};
  out.profile = std::move(base);
  return out;
}

}  // namespace stripesim::validate
