#include "stripesim/validate/kernel_accuracy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "stripesim/model/work/metrics.hpp"
#include "stripesim/validate/measurement_stats.hpp"

namespace stripesim::validate {

namespace {

// Speedups over the contiguous layout of the same group.
void fill_speedups(std::vector<WorkloadPrediction>& predictions) {
  std::map<std::string, const WorkloadPrediction*> contiguous;
  for (const auto& p : predictions) {
    if (p.workload->layout == "contiguous" && p.workload->devices > 1) contiguous.emplace(p.workload->group, &p);
  }
  for (auto& p : predictions) {
    const auto it = contiguous.find(p.workload->group);
    if (it == contiguous.end() || it->second == &p || p.predicted_lockstep_us <= 0 || p.measured_lockstep_us <= 0) continue;
    p.predicted_speedup = it->second->predicted_lockstep_us / p.predicted_lockstep_us;
    p.measured_speedup = it->second->measured_lockstep_us / p.measured_lockstep_us;
  }
}

}  // namespace

sim::SimulateConfig simulate_config(const MeasuredWorkload& w, const sim::KernelProfile& kernel) {
  sim::SimulateConfig config;
  config.heads = w.heads;
  config.kv_heads = w.kv_heads;
  config.head_dim = w.head_dim;
  config.batch = w.batch;
  config.seq_len = w.seq_len;
  config.devices = w.devices;
  config.layouts = {w.layout};
  config.tile = w.tile;
  // Measured calls are timed as the kernel runs them: a file's calls one at a time, the
  // validator's with its kernels' own accumulation. No separate merge between them.
  config.kernel_profile = kernel;
  config.kernel_profile->merge = {};
  config.mask = w.mask;
  config.pass = w.pass;
  config.dtype = w.dtype;
  return config;
}

std::vector<double> call_times(const sim::Simulation& simulation) {
  const Count devices = simulation.config.devices;
  std::vector<double> us(static_cast<size_t>(devices * devices), 0.0);
  for (const sim::RingTimeline& t : simulation.results.front().passes) {
    for (Count r = 0; r < t.round_count(); ++r) {  // a collective pass has fewer rounds than the ring
      for (Count d = 0; d < devices; ++d) {
        const sim::RoundRecord& rec = t.at(r, d);
        us[static_cast<size_t>(r * devices + d)] += rec.compute_end_us - rec.compute_start_us;
      }
    }
  }
  return us;
}

std::vector<WorkloadPrediction> predict_workloads(const std::vector<MeasuredWorkload>& workloads,
                                                  const sim::KernelProfile& kernel, const std::string& hardware,
                                                  const model::ConfigCatalog& catalog) {
  std::vector<WorkloadPrediction> out;
  for (const MeasuredWorkload& w : workloads) {
    sim::SimulateConfig config = simulate_config(w, kernel);
    config.hardware = hardware;
    config.topology = "ideal";
    config.sync = sim::SyncMode::lockstep;
    WorkloadPrediction p;
    p.workload = &w;
    p.predicted_us = w.origins.run([&] { return call_times(sim::run_simulation(config, catalog)); });
    // Both sides the same way: the lockstep time of each call's whole time (fwd + bwd).
    p.predicted_lockstep_us = model::lockstep_total(std::span<const double>(p.predicted_us), w.devices);
    p.measured_lockstep_us = model::lockstep_total(std::span<const double>(w.us), w.devices);
    out.push_back(std::move(p));
  }
  fill_speedups(out);
  return out;
}

std::vector<WorkloadPrediction> leave_one_group_out(const std::vector<MeasuredWorkload>& workloads,
                                                    const std::vector<MeasuredCall>& calls, const sim::KernelProfile& base,
                                                    const std::string& hardware, const model::ConfigCatalog& catalog,
                                                    const FitOptions& options) {
  const model::HardwareProfile hw = catalog.hardware(hardware);
  std::vector<std::string> groups;
  for (const auto& w : workloads) {
    if (std::find(groups.begin(), groups.end(), w.group) == groups.end()) groups.push_back(w.group);
  }
  std::vector<WorkloadPrediction> out(workloads.size());
  for (const std::string& group : groups) {
    std::vector<MeasuredCall> training;
    for (const MeasuredCall& call : calls) {
      if (workloads[call.workload].group != group) training.push_back(call);
    }
    // Cold: the base's costs were fitted on the held-out files too (a shipped profile on all of
    // them), and the fit lands nearest where it starts.
    FitOptions cold = options;
    cold.cold_start = true;
    const KernelFit fit = fit_kernel(training, base, hw, cold);
    std::vector<MeasuredWorkload> held;
    std::vector<size_t> index;
    for (size_t i = 0; i < workloads.size(); ++i) {
      if (workloads[i].group == group) {
        held.push_back(workloads[i]);
        index.push_back(i);
      }
    }
    std::vector<WorkloadPrediction> predicted = predict_workloads(held, fit.profile, hardware, catalog);
    for (size_t j = 0; j < index.size(); ++j) {
      predicted[j].workload = &workloads[index[j]];
      predicted[j].held_out = true;
      out[index[j]] = std::move(predicted[j]);
    }
  }
  for (auto& p : out) p.predicted_speedup = p.measured_speedup = std::nullopt;
  fill_speedups(out);
  return out;
}

namespace {

// A class is a group's calls of equal work (work_key: pass, call shape, the (full, partial)
// tiles of every query tile and the length a trimmed call runs at, a trimmed call being
// another call for a kernel that trims).
using ClassKey = std::pair<std::string, std::vector<double>>;

ClassKey class_of(const std::vector<MeasuredWorkload>& workloads, const MeasuredCall& call) {
  return {workloads[call.workload].group, work_key(call)};
}

}  // namespace

std::vector<WorkloadPrediction> consistency_floor(const std::vector<MeasuredWorkload>& workloads,
                                                  const std::vector<MeasuredCall>& calls) {
  std::map<ClassKey, std::vector<double>> classes;
  for (const MeasuredCall& call : calls) classes[class_of(workloads, call)].push_back(call.measured_us);
  std::vector<WorkloadPrediction> out(workloads.size());
  for (size_t i = 0; i < workloads.size(); ++i) {
    out[i].workload = &workloads[i];
    out[i].predicted_us.assign(workloads[i].us.size(), 0.0);
  }
  for (const MeasuredCall& call : calls) {
    const Count devices = workloads[call.workload].devices;
    out[call.workload].predicted_us[static_cast<size_t>(call.round * devices + call.device)] =
        spread_of(classes.at(class_of(workloads, call))).median;
  }
  for (auto& p : out) {
    p.predicted_lockstep_us = model::lockstep_total(std::span<const double>(p.predicted_us), p.workload->devices);
    p.measured_lockstep_us = model::lockstep_total(std::span<const double>(p.workload->us), p.workload->devices);
  }
  fill_speedups(out);
  return out;
}

std::vector<LayoutDrift> equal_work_drift(const std::vector<MeasuredWorkload>& workloads,
                                          const std::vector<MeasuredCall>& calls, double threshold) {
  // class -> layout -> its calls' times; a map keeps the groups and layouts in a fixed order.
  std::map<ClassKey, std::map<std::string, std::vector<double>>> classes;
  for (const MeasuredCall& call : calls) {
    classes[class_of(workloads, call)][workloads[call.workload].layout].push_back(call.measured_us);
  }
  // (group, slow layout, fast layout) -> the ratio of their medians in every class both time.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> ratios;
  for (const auto& [key, layouts] : classes) {
    std::map<std::string, double> median;
    for (const auto& [layout, times] : layouts) median[layout] = spread_of(times).median;
    for (const auto& [a, a_median] : median) {
      for (const auto& [b, b_median] : median) {
        if (a != b) ratios[{key.first, a, b}].push_back(a_median / b_median);
      }
    }
  }
  std::map<std::string, LayoutDrift> worst;  // per group
  for (const auto& [pair, r] : ratios) {
    const auto& [group, slow, fast] = pair;
    const LayoutDrift drift{group, slow, fast, spread_of(r).median, static_cast<Count>(r.size())};
    const auto [it, fresh] = worst.try_emplace(group, drift);
    if (!fresh && drift.ratio > it->second.ratio) it->second = drift;
  }
  std::vector<LayoutDrift> out;
  for (const auto& [group, drift] : worst) {
    if (drift.ratio > threshold) out.push_back(drift);
  }
  return out;
}

AccuracySummary summarize_accuracy(const std::vector<WorkloadPrediction>& predictions) {
  AccuracySummary s;
  std::vector<double> calls, speedups;
  for (const auto& p : predictions) {
    for (size_t i = 0; i < p.predicted_us.size(); ++i) {
      const double measured = p.workload->us[i];
      if (measured > 0) calls.push_back(relative_error(p.predicted_us[i], measured));
    }
    if (p.predicted_speedup && p.measured_speedup) speedups.push_back(std::abs(*p.predicted_speedup - *p.measured_speedup));
  }
  s.calls = static_cast<Count>(calls.size());
  if (!calls.empty()) {
    const Spread c = magnitude_spread(calls);
    s.median_abs_call_error = c.median;
    s.max_abs_call_error = c.max;
  }
  s.speedups = static_cast<Count>(speedups.size());
  if (!speedups.empty()) {
    double sum = 0;
    for (const double e : speedups) sum += e;
    s.mean_abs_speedup_error = sum / static_cast<double>(speedups.size());
    s.max_abs_speedup_error = *std::max_element(speedups.begin(), speedups.end());
  }
  return s;
}

std::optional<double> median_measured_over_predicted(const WorkloadPrediction& prediction) {
  std::vector<double> ratios;
  for (size_t i = 0; i < prediction.predicted_us.size(); ++i) {
    const double measured = prediction.workload->us[i];
    if (measured > 0 && prediction.predicted_us[i] > 0) ratios.push_back(measured / prediction.predicted_us[i]);
  }
  if (ratios.empty()) return std::nullopt;
  return spread_of(std::move(ratios)).median;
}

}  // namespace stripesim::validate
