#include "stripesim/validate/comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stripesim/sim/simulation.hpp"
#include "stripesim/validate/calibration.hpp"
#include "stripesim/validate/kernel_accuracy.hpp"
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
  sim::SimulateConfig config = simulate_config(measured_workload(result), kernel);
  config.hardware_profile = profile;
  config.topology_graph = topology;
  config.cp = result.ring_case.cp;
  if (config.cp == "ring") config.hop_bytes = result.handoff_bytes;
  config.sync = parallel_devices ? sim::SyncMode::async : sim::SyncMode::serial;
  // Every profile is in memory and the topology is built in: the catalog's folder is never read.
  const sim::Simulation simulation = sim::run_simulation(config, model::ConfigCatalog(""));
  CasePrediction p;
  p.kernel_us = call_times(simulation);
  // The ring is devices 0 .. N-1 in order: hop d carries device d's block to d + 1.
  const Count devices = result.ring_case.devices;
  const std::optional<sim::NodePlacement> placement = topology ? std::optional(topology->placement()) : std::nullopt;
  for (Count d = devices; d-- > 0;) {
    const double hop_us = simulation.hops[static_cast<size_t>(d)].transfer_us(result.handoff_bytes);
    (placement && !placement->same_node(d, (d + 1) % devices) ? p.inter_node_handoff_us : p.handoff_us) = hop_us;
  }
  p.total_us = simulation.results.front().time_us;
  return p;
}

CaseComparison compare_case(const CaseResult& result, const CasePrediction& prediction, CaseRole role,
                            const sim::NodePlacement* placement) {
  CaseComparison out;
  out.role = role;
  out.prediction = prediction;
  out.measured_total_us = result.summary.wall.median;
  out.total_error = out.measured_total_us > 0 ? (prediction.total_us - out.measured_total_us) / out.measured_total_us : 0;
  std::vector<double> intra, inter;
  for (const HandoffSample& hop : handoff_samples(result, placement)) {
    if (hop.measured_us > 0) (hop.path == HopPath::inter_node ? inter : intra).push_back(hop.measured_us);
  }
  if (!intra.empty()) out.handoff_measured_us = spread_of(intra).median;
  if (!inter.empty()) out.inter_node_handoff_measured_us = spread_of(inter).median;
  const Count devices = result.ring_case.devices;
  for (Count r = 0; r < devices; ++r) {
    double predicted = 0, measured = 0;
    for (Count d = 0; d < devices; ++d) {
      predicted = std::max(predicted, prediction.kernel_us[static_cast<size_t>(r * devices + d)]);
      measured = std::max(measured, result.summary.kernel_at(r, d).median);
    }
    out.round_predicted_us.push_back(predicted);
    out.round_measured_us.push_back(measured);
  }
  return out;
}

ErrorSummary summarize_errors(const std::vector<CaseResult>& results, const std::vector<CaseComparison>& comparisons,
                              CaseRole role) {
  ErrorSummary s;
  std::vector<double> totals, kernels;
  for (size_t i = 0; i < comparisons.size(); ++i) {
    if (comparisons[i].role != role) continue;
    totals.push_back(std::abs(comparisons[i].total_error));
    const Count devices = results[i].ring_case.devices;
    for (Count r = 0; r < devices; ++r) {
      for (Count d = 0; d < devices; ++d) {
        const double measured = results[i].summary.kernel_at(r, d).median;
        if (measured <= 0) continue;  // skipped block: 0 predicted, 0 measured
        const double predicted = comparisons[i].prediction.kernel_us[static_cast<size_t>(r * devices + d)];
        kernels.push_back(std::abs(predicted - measured) / measured);
      }
    }
  }
  s.cases = static_cast<Count>(totals.size());
  s.kernels = static_cast<Count>(kernels.size());
  if (!totals.empty()) {
    const Spread t = spread_of(totals);
    s.median_abs_total_error = t.median;
    s.max_abs_total_error = t.max;
  }
  if (!kernels.empty()) {
    const Spread k = spread_of(kernels);
    s.median_abs_kernel_error = k.median;
    s.max_abs_kernel_error = k.max;
  }
  return s;
}

const char* role_name(CaseRole role) {
  switch (role) {
    case CaseRole::checked: return "checked";
    case CaseRole::calibration: return "calibration";
    case CaseRole::held_out: return "held-out";
  }
  return "checked";
}

namespace {

nlohmann::ordered_json spread_json(const Spread& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

nlohmann::ordered_json summary_json(const ErrorSummary& s) {
  return {{"cases", s.cases},
          {"median_abs_total_error", s.median_abs_total_error},
          {"max_abs_total_error", s.max_abs_total_error},
          {"kernels", s.kernels},
          {"median_abs_kernel_error", s.median_abs_kernel_error},
          {"max_abs_kernel_error", s.max_abs_kernel_error}};
}

bool has_role(const ValidationReport& report, CaseRole role) {
  return std::any_of(report.comparisons.begin(), report.comparisons.end(),
                     [&](const CaseComparison& c) { return c.role == role; });
}

bool spans_nodes(const ValidationReport& report) { return report.placement && report.placement->nodes() > 1; }

}  // namespace

nlohmann::ordered_json to_json(const ValidationReport& report, bool rounds) {
  nlohmann::ordered_json doc;
  doc["schema"] = kValidateSchema;
  doc["command"] = report.command;
  doc["backend"] = report.backend;
  doc["device"] = report.device;
  if (report.placement) {
    doc["placement"] = {{"nodes", report.placement->nodes()},
                        {"hosts", report.placement->hosts},
                        {"node_of_device", report.placement->node_of_gpu}};
  }
  doc["warmup"] = report.options.warmup;
  doc["iterations"] = report.options.iterations;
  bool all_passed = true;
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (size_t i = 0; i < report.results.size(); ++i) {
    const CaseResult& r = report.results[i];
    const RingCase& c = r.ring_case;
    all_passed = all_passed && r.passed;
    nlohmann::ordered_json item = {{"label", c.label()},
                                   {"layout", c.layout},
                                   {"mask", c.mask},
                                   {"cp", c.cp},
                                   {"seq_len", c.seq_len},
                                   {"devices", c.devices},
                                   {"tile", c.tile.to_string()},
                                   {"heads", c.heads},
                                   {"kv_heads", c.kv_heads},
                                   {"head_dim", c.head_dim},
                                   {"dtype", std::string(precision_name(c.precision))},
                                   {"seed", c.seed}};
    if (r.checked) {
      item["correctness"] = {{"max_abs_error", r.error.max_abs},
                             {"relative_error", std::isfinite(r.error.relative) ? nlohmann::ordered_json(r.error.relative)
                                                                                  : nlohmann::ordered_json(nullptr)},
                             {"tolerance", r.tolerance},
                             {"passed", r.passed}};
    }
    item["handoff_bytes"] = r.handoff_bytes;
    item["wall_us"] = spread_json(r.summary.wall);
    item["unmasked_pairs"] = r.work.unmasked_elements.total();
    item["active_tiles"] = r.work.active_tiles.total();
    if (i < report.comparisons.size()) {
      const CaseComparison& cmp = report.comparisons[i];
      item["role"] = role_name(cmp.role);
      item["predicted_us"] = cmp.prediction.total_us;
      item["measured_us"] = cmp.measured_total_us;
      item["error"] = cmp.total_error;
      nlohmann::ordered_json per_round = nlohmann::ordered_json::array();
      for (size_t round = 0; round < cmp.round_predicted_us.size(); ++round) {
        per_round.push_back({{"round", round},
                             {"predicted_us", cmp.round_predicted_us[round]},
                             {"measured_us", cmp.round_measured_us[round]}});
      }
      item["round_times"] = std::move(per_round);
    }
    if (rounds) {
      nlohmann::ordered_json cells = nlohmann::ordered_json::array();
      for (Count round = 0; round < c.devices; ++round) {
        for (Count d = 0; d < c.devices; ++d) {
          nlohmann::ordered_json cell = {{"round", round},
                                         {"device", d},
                                         {"unmasked_pairs", r.work.unmasked_elements.at(round, d)},
                                         {"active_tiles", r.work.active_tiles.at(round, d)},
                                         {"partial_tiles", r.work.partial_tiles.at(round, d)},
                                         {"kernel_us", spread_json(r.summary.kernel_at(round, d))},
                                         {"handoff_us", spread_json(r.summary.handoff_at(round, d))}};
          if (i < report.comparisons.size()) {
            cell["predicted_kernel_us"] = report.comparisons[i].prediction.kernel_us[static_cast<size_t>(round * c.devices + d)];
          }
          cells.push_back(std::move(cell));
        }
      }
      item["rounds"] = std::move(cells);
    }
    cases.push_back(std::move(item));
  }
  doc["all_passed"] = all_passed;
  if (report.profile) doc["profile"] = model::to_json(*report.profile);
  if (report.kernel) doc["kernel"] = sim::to_json(*report.kernel);
  if (report.calibration) {
    doc["calibration"] = {{"kernel_samples", report.calibration->kernel_samples},
                          {"handoff_samples", report.calibration->handoff_samples},
                          {"hop_latency_us", report.calibration->hop_latency_us},
                          {"hop_bandwidth_gbps", report.calibration->profile.link_bandwidth},
                          {"fit_median_abs_error", report.calibration->fit_median_abs_error}};
    if (const auto& net = report.calibration->inter_node) {
      doc["calibration"]["inter_node_handoff_samples"] = net->samples;
      doc["calibration"]["inter_node_hop_latency_us"] = net->latency_us;
      doc["calibration"]["inter_node_hop_bandwidth_gbps"] = net->bandwidth_gbps;
    }
  }
  if (report.topology) doc["topology"] = report.topology->to_json();
  if (!report.comparisons.empty()) {
    nlohmann::ordered_json errors;
    for (const CaseRole role : {CaseRole::calibration, CaseRole::held_out, CaseRole::checked}) {
      if (has_role(report, role)) errors[role_name(role)] = summary_json(summarize_errors(report.results, report.comparisons, role));
    }
    doc["errors"] = std::move(errors);
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (size_t i = 0; i < report.comparisons.size(); ++i) {
      points.push_back({{"label", report.results[i].ring_case.label()},
                        {"role", role_name(report.comparisons[i].role)},
                        {"predicted_us", report.comparisons[i].prediction.total_us},
                        {"measured_us", report.comparisons[i].measured_total_us},
                        {"handoff_predicted_us", report.comparisons[i].prediction.handoff_us},
                        {"handoff_measured_us", report.comparisons[i].handoff_measured_us}});
      if (spans_nodes(report)) {
        points.back()["inter_node_handoff_predicted_us"] = report.comparisons[i].prediction.inter_node_handoff_us;
        points.back()["inter_node_handoff_measured_us"] = report.comparisons[i].inter_node_handoff_measured_us;
      }
    }
    doc["comparisons"] = std::move(points);
  }
  doc["cases"] = std::move(cases);
  return doc;
}

std::string to_markdown(const ValidationReport& report) {
  std::string md = "# stripesim validate\n\n";
  md += fmt::format("- command: `{}`\n- backend: {}\n- device: {}\n- timing: {} warm-up and {} timed iterations per case, "
                    "medians\n\n",
                    report.command, report.backend, report.device, report.options.warmup, report.options.iterations);
  md += "## Correctness against dense attention\n\n| case | relative error | tolerance | result |\n|---|---:|---:|---|\n";
  for (const auto& r : report.results) {
    if (!r.checked) continue;
    md += fmt::format("| {} | {:.2e} | {:.0e} | {} |\n", r.ring_case.label(), r.error.relative, r.tolerance,
                      r.passed ? "pass" : "**FAIL**");
  }
  if (report.comparisons.empty()) return md;
  md += "\n## Predicted against measured\n\n";
  if (report.calibration) {
    const Calibration& cal = *report.calibration;
    md += fmt::format("Calibrated on the cases marked `calibration` ({} kernels; median fit error {:.1f}%), predicted for "
                      "the rest (`held-out`). Each hand-off is a least-squares line over the timed hops of its kind:",
                      cal.kernel_samples, 100 * cal.fit_median_abs_error);
    if (!cal.inter_node || cal.handoff_samples > 0) {
      md += fmt::format(" {} ({} hops) {:.1f} us latency + bytes at {:.2f} GB/s.", cal.inter_node ? "inside a node" : "every hop",
                        cal.handoff_samples, cal.hop_latency_us, cal.profile.link_bandwidth);
    }
    if (cal.inter_node) {
      md += fmt::format(" Between nodes ({} hops): {:.1f} us latency + bytes at {:.2f} GB/s.", cal.inter_node->samples,
                        cal.inter_node->latency_us, cal.inter_node->bandwidth_gbps);
    }
    md += "\n\n";
  }
  if (report.placement) md += fmt::format("Devices by host: {}.\n\n", report.placement->describe());
  md += "| errors | cases | median abs (total) | worst abs (total) | kernels | median abs (kernel) | worst abs (kernel) |\n"
        "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const CaseRole role : {CaseRole::held_out, CaseRole::calibration, CaseRole::checked}) {
    if (!has_role(report, role)) continue;
    const ErrorSummary s = summarize_errors(report.results, report.comparisons, role);
    md += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {} | {:.1f}% | {:.1f}% |\n", role_name(role), s.cases,
                      100 * s.median_abs_total_error, 100 * s.max_abs_total_error, s.kernels,
                      100 * s.median_abs_kernel_error, 100 * s.max_abs_kernel_error);
  }
  const bool nodes = spans_nodes(report);
  md += fmt::format("\n| case | role | predicted (us) | measured (us) | error | hop predicted (us) | hop measured (us) |{}\n"
                    "|---|---|---:|---:|---:|---:|---:|{}\n",
                    nodes ? " inter-node hop predicted (us) | inter-node hop measured (us) |" : "", nodes ? "---:|---:|" : "");
  for (size_t i = 0; i < report.comparisons.size(); ++i) {
    const auto& c = report.comparisons[i];
    md += fmt::format("| {} | {} | {:.1f} | {:.1f} | {:+.1f}% | {:.1f} | {:.1f} |", report.results[i].ring_case.label(),
                      role_name(c.role), c.prediction.total_us, c.measured_total_us, 100 * c.total_error,
                      c.prediction.handoff_us, c.handoff_measured_us);
    if (nodes) md += fmt::format(" {:.1f} | {:.1f} |", c.prediction.inter_node_handoff_us, c.inter_node_handoff_measured_us);
    md += "\n";
  }
  return md;
}

}  // namespace stripesim::validate
