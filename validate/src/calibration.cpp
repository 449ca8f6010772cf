#include "stripesim/validate/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/sim/topology.hpp"
#include "stripesim/sim/units.hpp"
#include "stripesim/validate/kernel_fit.hpp"
#include "stripesim/validate/measurement_stats.hpp"

namespace stripesim::validate {

std::vector<MeasuredWorkload> measured_workloads(const CaseResult& result) {
  const RingCase& c = result.ring_case;
  MeasuredWorkload w;
  w.group = c.label();
  w.kernel = "stripesim validator";
  w.seq_len = c.seq_len;
  w.devices = c.devices;
  w.heads = c.heads;
  w.kv_heads = c.kv_heads;
  w.head_dim = c.head_dim;
  w.dtype = std::string(precision_name(c.precision));
  w.tile = c.tile;
  w.mask = c.mask;
  w.layout = c.layout;
  const auto medians = [&](const std::vector<Spread>& cells) {
    std::vector<double> us;
    for (const Spread& cell : cells) us.push_back(cell.median);
    return us;
  };
  w.us = medians(result.summary.kernel);
  std::vector<MeasuredWorkload> out{w};
  if (!result.summary.backward_kernel.empty()) {
    w.pass = sim::PassSelection::backward;
    w.us = medians(result.summary.backward_kernel);
    out.push_back(std::move(w));
  }
  return out;
}

HopPath hop_path(const sim::NodePlacement* placement, Count from, Count to) {
  return placement != nullptr && !placement->same_node(from, to) ? HopPath::inter_node : HopPath::intra_node;
}

std::vector<HandoffSample> handoff_samples(const CaseResult& result, const sim::NodePlacement* placement,
                                           bool concurrent_devices) {
  std::vector<HandoffSample> samples;
  const Count devices = result.ring_case.devices;
  for (Count r = 0; r + 1 < devices; ++r) {
    const size_t round_start = samples.size();
    for (Count d = 0; d < devices; ++d) {
      // The validator's ring is its devices in order: device d hands its block to d + 1.
      const HandoffSample sample{static_cast<double>(result.handoff_bytes), result.summary.handoff_at(r, d).median,
                                 hop_path(placement, d, (d + 1) % devices)};
      if (!concurrent_devices) {
        samples.push_back(sample);
        continue;
      }
      // One sample a round and path: the shortest timed one (an untimed hop, 0, is no sample).
      if (sample.measured_us <= 0) continue;
      const auto same_path = std::find_if(samples.begin() + static_cast<std::ptrdiff_t>(round_start), samples.end(),
                                          [&](const HandoffSample& s) { return s.path == sample.path; });
      if (same_path == samples.end()) {
        samples.push_back(sample);
      } else if (sample.measured_us < same_path->measured_us) {
        *same_path = sample;
      }
    }
  }
  return samples;
}

namespace {

// A fitted profile's name: its start's with "-calibrated", once (a refit from a fit keeps it).
std::string calibrated_name(const std::string& name) {
  constexpr std::string_view kSuffix = "-calibrated";
  return name.ends_with(kSuffix) ? name : name + std::string(kSuffix);
}

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

namespace {

// latency + bytes / bandwidth over `hops`, by the same non-negative least squares as the kernel.
LinkFit fit_link(const std::vector<HandoffSample>& hops) {
  LinkFit out;
  out.samples = static_cast<Count>(hops.size());
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (const auto& s : hops) {
    rows.push_back({1.0, s.bytes});
    y.push_back(s.measured_us);
    w.push_back(1.0 / s.measured_us);
  }
  const auto fit = fit_non_negative(rows, y, w);
  double us_per_byte = fit[1];
  out.latency_us = fit[0];
  // One block size cannot tell a latency from a bandwidth (any split fits it as well): all of
  // it is bandwidth then, as when the fit finds no slope.
  const bool one_size = std::ranges::all_of(hops, [&](const HandoffSample& s) { return s.bytes == hops.front().bytes; });
  if (us_per_byte <= 0 || one_size) {
    std::vector<double> rates;
    for (const auto& s : hops) rates.push_back(s.measured_us / s.bytes);
    us_per_byte = spread_of(rates).median;
    out.latency_us = 0;
  }
  out.bandwidth_gbps = sim::bandwidth_of(us_per_byte);
  return out;
}

}  // namespace

Calibration calibrate(const std::vector<const CaseResult*>& cases, model::HardwareProfile base, sim::KernelProfile kernel,
                      const std::string& device, const sim::NodePlacement* placement, bool concurrent_devices) {
  std::vector<MeasuredWorkload> workloads;
  std::vector<HandoffSample> intra, inter;
  for (const CaseResult* result : cases) {
    // The fit's features are a ring's per-round calls and block hand-offs; all-gather and Ulysses
    // cases are predicted with what the ring cases fitted, never fitted on.
    if (result->ring_case.cp != "ring") continue;
    for (MeasuredWorkload& w : measured_workloads(*result)) workloads.push_back(std::move(w));
    for (const auto& s : handoff_samples(*result, placement, concurrent_devices)) {
      if (s.measured_us > 0) (s.path == HopPath::inter_node ? inter : intra).push_back(s);
    }
  }
  const std::vector<MeasuredCall> calls = measured_calls(workloads, base, kernel);
  if (std::none_of(calls.begin(), calls.end(), [](const MeasuredCall& c) { return c.measured_us > 0; })) {
    throw model::InputError("validate --calibrate: the matrix launched no kernel to fit (every block was masked)");
  }
  const KernelFit fit = fit_kernel(calls, kernel, base);
  Calibration out;
  out.kernel = fit.profile;
  out.kernel.name = calibrated_name(kernel.name);
  out.kernel.hardware = base.name;
  out.kernel.sources = {{"calibrated_on", device},
                        {"costs", fmt::format("stripesim validate --calibrate: {} kernel samples, median fit error {:.1f}%",
                                              fit.samples, 100 * fit.median_abs_error)}};
  out.kernel_samples = fit.samples;
  out.handoff_samples = static_cast<Count>(intra.size());
  out.fit_median_abs_error = fit.median_abs_error;
  model::HardwareProfile& h = base;
  if (!intra.empty()) {
    const LinkFit link = fit_link(intra);
    out.hop_latency_us = link.latency_us;
    h.link_bandwidth = link.bandwidth_gbps;
    h.link_latency_us = link.latency_us / sim::kLinksPerNodeHop;
  }
  if (!inter.empty()) out.inter_node = fit_link(inter);
  // The same device, its links refitted: it runs the kernels of the profile it was fitted from
  // (and the fitted one, measured on that profile's device, carries no note beside it). No
  // aliases: a copy in configs/hardware would answer to the original's names.
  if (const std::string fitted = calibrated_name(h.name); fitted != h.name) {
    h.kernels_from = h.name;
    h.name = fitted;
  }
  h.aliases.clear();
  h.default_kernel = out.kernel.name;
  // A link no hand-off inside a node timed (one device a case, or every hop crossing nodes) keeps
  // the base profile's figure, and says whose (once: a refit of a refit does not say it twice).
  std::string link_source = fmt::format("stripesim validate --calibrate: {} hand-offs", out.handoff_samples);
  if (intra.empty()) {
    const bool given = h.sources.is_object() && h.sources.contains("link_bandwidth_gbps") && h.sources["link_bandwidth_gbps"].is_string();
    const std::string base_source = given ? h.sources["link_bandwidth_gbps"].get<std::string>() : std::string("the base profile's");
    const std::string prefix = "not fitted (no hand-off inside a node timed): ";
    link_source = base_source.starts_with(prefix) ? base_source : prefix + base_source;
  }
  h.sources = {{"calibrated_on", device},
               {"kernel", "the fitted kernel profile (where it was written: validate's --kernel-out or --out-dir)"},
               {"link_bandwidth_gbps", link_source}};
  out.profile = std::move(base);
  return out;
}

}  // namespace stripesim::validate
