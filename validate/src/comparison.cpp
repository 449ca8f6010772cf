#include "stripesim/validate/comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stripesim/model/work/metrics.hpp"
#include "stripesim/sim/simulation.hpp"
#include "stripesim/validate/calibration.hpp"
#include "stripesim/validate/kernel_accuracy.hpp"
#include "stripesim/validate/kernel_measurements.hpp"
#include "stripesim/validate/measurement_stats.hpp"

namespace stripesim::validate {

std::optional<sim::Topology> placed_topology(const sim::NodePlacement& placement, const model::HardwareProfile& profile,
                                             const std::optional<LinkFit>& inter_node) {
  if (placement.nodes() < 2) return std::nullopt;
  const sim::GigabytesPerSecond nic = inter_node ? inter_node->bandwidth_gbps : sim::kDefaultNicBandwidth;
  const sim::Microseconds nic_latency = inter_node ? inter_node->latency_us / sim::kLinksPerNetworkHop : sim::kDefaultNicLatencyUs;
  return sim::Topology::placed(placement, fmt::format("placed:{}", placement.describe()), profile.link_bandwidth,
                               profile.link_latency_us.value_or(sim::kDefaultNvlinkLatencyUs), nic, nic_latency);
}

CasePrediction predict_case(const CaseResult& result, const model::HardwareProfile& profile, const sim::KernelProfile& kernel,
                            bool parallel_devices, const std::optional<sim::Topology>& topology) {
  // The simulator itself, on the case's ring: the kernel time model on its own query tile
  // profiles, hand-offs of the case's bytes over GPU -> switch -> GPU (and between nodes over
  // the network), and either the ring's devices at once (async) or one processor playing them in
  // turn (serial).
  sim::SimulateConfig config = simulate_config(measured_workloads(result).front(), kernel);
  // A backward case is timed forward then backward, every cell both calls: --pass fwdbwd.
  if (result.ring_case.backward) config.pass = sim::PassSelection::forward_backward;
  config.hardware_profile = profile;
  config.topology_graph = topology;
  config.cp = result.ring_case.cp;
  if (config.cp == "ring") config.hop_bytes = result.handoff_bytes;
  if (result.gradient_handoff_bytes > 0) config.grad_hop_bytes = result.gradient_handoff_bytes;
  config.sync = parallel_devices ? sim::SyncMode::async : sim::SyncMode::serial;
  // Every profile is in memory and the topology is built in: a catalog without folders (an
  // h800's kernels_from is then a name, as for a folder of kernels without a hardware profile).
  const sim::Simulation simulation = sim::run_simulation(config, model::ConfigCatalog(""));
  CasePrediction p;
  p.kernel_us = call_times(simulation);
  // Hop p carries the block of ring position p to position p + 1, on the path between their GPUs.
  const Count devices = result.ring_case.devices;
  const std::optional<sim::NodePlacement> placement = topology ? std::optional(topology->placement()) : std::nullopt;
  const std::vector<Count>& order = simulation.ring_order;
  for (Count p_at = devices; p_at-- > 0;) {
    const double hop_us = simulation.hops[static_cast<size_t>(p_at)].transfer_us(result.handoff_bytes);
    const HopPath path = hop_path(placement ? &*placement : nullptr, order[static_cast<size_t>(p_at)],
                                  order[static_cast<size_t>((p_at + 1) % devices)]);
    (path == HopPath::inter_node ? p.inter_node_handoff_us : p.handoff_us) = hop_us;
  }
  p.total_us = simulation.results.front().time_us;
  return p;
}

CaseComparison compare_case(const CaseResult& result, const CasePrediction& prediction, CaseRole role,
                            const sim::NodePlacement* placement, bool concurrent_devices) {
  CaseComparison out;
  out.role = role;
  out.prediction = prediction;
  out.measured_total_us = result.summary.wall.median;
  out.total_error = out.measured_total_us > 0 ? relative_error(prediction.total_us, out.measured_total_us) : 0;
  std::vector<double> intra, inter;
  for (const HandoffSample& hop : handoff_samples(result, placement, concurrent_devices)) {
    if (hop.measured_us > 0) (hop.path == HopPath::inter_node ? inter : intra).push_back(hop.measured_us);
  }
  if (!intra.empty()) out.handoff_measured_us = spread_of(intra).median;
  if (!inter.empty()) out.inter_node_handoff_measured_us = spread_of(inter).median;
  const Count devices = result.ring_case.devices;
  std::vector<double> measured_us;  // [round][device], as the prediction's
  for (Count r = 0; r < devices; ++r) {
    for (Count d = 0; d < devices; ++d) measured_us.push_back(result.summary.call_us(r, d));
  }
  out.round_predicted_us = model::round_maxima(std::span<const double>(prediction.kernel_us), devices);
  out.round_measured_us = model::round_maxima(std::span<const double>(measured_us), devices);
  return out;
}

ErrorSummary summarize_errors(const std::vector<CaseResult>& results, const std::vector<CaseComparison>& comparisons,
                              CaseRole role, std::string_view cp) {
  ErrorSummary s;
  std::vector<double> totals, kernels;
  for (size_t i = 0; i < comparisons.size(); ++i) {
    if (comparisons[i].role != role || (!cp.empty() && results[i].ring_case.cp != cp)) continue;
    totals.push_back(comparisons[i].total_error);
    const Count devices = results[i].ring_case.devices;
    for (Count r = 0; r < devices; ++r) {
      for (Count d = 0; d < devices; ++d) {
        const double measured = results[i].summary.call_us(r, d);
        if (measured <= 0) continue;  // skipped block: 0 predicted, 0 measured
        const double predicted = comparisons[i].prediction.kernel_us[static_cast<size_t>(r * devices + d)];
        kernels.push_back(relative_error(predicted, measured));
      }
    }
  }
  s.cases = static_cast<Count>(totals.size());
  s.kernels = static_cast<Count>(kernels.size());
  if (!totals.empty()) {
    const Spread t = magnitude_spread(totals);
    s.median_abs_total_error = t.median;
    s.max_abs_total_error = t.max;
  }
  if (!kernels.empty()) {
    const Spread k = magnitude_spread(kernels);
    s.median_abs_kernel_error = k.median;
    s.max_abs_kernel_error = k.max;
  }
  return s;
}

std::vector<std::string> context_parallelisms(const std::vector<CaseResult>& results) {
  std::vector<std::string> out;
  for (const CaseResult& r : results) {
    if (std::ranges::find(out, r.ring_case.cp) == out.end()) out.push_back(r.ring_case.cp);
  }
  return out;
}

std::vector<ErrorRow> error_rows(const ValidationReport& report, std::initializer_list<CaseRole> roles) {
  std::vector<std::string> groups{""};
  if (const std::vector<std::string> cps = context_parallelisms(report.results); cps.size() > 1) {
    groups.insert(groups.end(), cps.begin(), cps.end());
  }
  std::vector<ErrorRow> out;
  for (const CaseRole role : roles) {
    for (const std::string& cp : groups) {
      ErrorSummary s = summarize_errors(report.results, report.comparisons, role, cp);
      if (s.cases > 0) out.push_back({role, cp, s});
    }
  }
  return out;
}

std::vector<std::string> comparison_notes(const ValidationReport& report) {
  std::vector<std::string> notes;
  const std::vector<std::string> cps = context_parallelisms(report.results);
  const bool allgather = std::ranges::find(cps, "allgather") != cps.end();
  const bool ulysses = std::ranges::find(cps, "ulysses") != cps.end();
  if ((allgather || ulysses) && !report.comparisons.empty() && !report.concurrent_devices) {
    // The prediction (--sync serial) prices every part a device's buffer takes, its own
    // included, as one hand-off of the ring; the emulation splits a part into several copies
    // (K, V and positions apart; Ulysses' rows per device pair), each with its launch.
    notes.push_back(fmt::format(
        "{} plays the devices in turn on one processor: its {} {} every part into every device's buffer, each priced "
        "as a ring hand-off, but in several copies each (K, V and positions apart, or rows per device pair) whose "
        "launches the prediction does not count; read the per-kernel errors, and validate the links on devices that "
        "run at once (nccl, mpi)",
        report.backend, allgather && ulysses ? "all-gather and Ulysses" : allgather ? "all-gather" : "Ulysses",
        allgather && ulysses ? "copy" : "copies"));
  }
  return notes;
}

const char* role_name(CaseRole role) {
  switch (role) {
    case CaseRole::checked: return "checked";
    case CaseRole::calibration: return "calibration";
    case CaseRole::held_out: return "held-out";
  }
  return "checked";
}

}  // namespace stripesim::validate
