#include "stripesim/output/validation_printers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/output/number_text.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/validate/validate_workflow.hpp"

namespace stripesim::output {

using model::Count;
using validate::Calibration;
using validate::CaseComparison;
using validate::CaseResult;
using validate::CaseRole;
using validate::ErrorSummary;
using validate::kValidateSchema;
using validate::precision_name;
using validate::RingCase;
using validate::role_name;

namespace {

nlohmann::ordered_json spread_json(const validate::Spread& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

nlohmann::ordered_json summary_json(const validate::ErrorSummary& s) {
  return {{"cases", s.cases},
          {"median_abs_total_error", s.median_abs_total_error},
          {"max_abs_total_error", s.max_abs_total_error},
          {"kernels", s.kernels},
          {"median_abs_kernel_error", s.median_abs_kernel_error},
          {"max_abs_kernel_error", s.max_abs_kernel_error}};
}

std::string error_line(const validate::ErrorSummary& s) {
  return fmt::format("total error median {:.1f}%, worst {:.1f}%; per-kernel median {:.1f}%, worst {:.1f}%",
                     100 * s.median_abs_total_error, 100 * s.max_abs_total_error, 100 * s.median_abs_kernel_error,
                     100 * s.max_abs_kernel_error);
}

bool any_backward(const validate::ValidationReport& report) {
  return std::any_of(report.results.begin(), report.results.end(), [](const CaseResult& r) { return r.ring_case.backward; });
}

// The largest relative error the case was checked on: the output's, and a backward case's gradients'.
double worst_relative_error(const CaseResult& r) {
  return r.gradient_error ? std::max(r.error.relative, r.gradient_error->worst_relative()) : r.error.relative;
}

nlohmann::ordered_json relative_json(double relative) {
  return std::isfinite(relative) ? nlohmann::ordered_json(relative) : nlohmann::ordered_json(nullptr);
}

bool spans_nodes(const validate::ValidationReport& report) { return report.placement && report.placement->nodes() > 1; }

}  // namespace

nlohmann::ordered_json to_json(const validate::ValidationReport& report, bool rounds) {
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
  doc["concurrent_devices"] = report.concurrent_devices;
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
                                   {"pass", c.backward ? "fwdbwd" : "fwd"},
                                   {"seq_len", c.seq_len},
                                   {"devices", c.devices},
                                   {"tile", c.tile.to_string()},
                                   {"heads", c.heads},
                                   {"kv_heads", c.kv_heads},
                                   {"head_dim", c.head_dim},
                                   {"dtype", std::string(precision_name(c.precision))},
                                   {"seed", c.seed}};
    if (validate::is_gpu_backend(report.backend)) item["gpu_kernel"] = std::string(validate::gpu_kernel_name(c.gpu_kernel));
    if (validate::is_gpu_backend(report.backend) && c.backward) {
      item["gpu_backward_kernel"] = std::string(validate::gpu_backward_kernel_name(c.gpu_backward_kernel));
    }
    if (r.checked) {
      item["correctness"] = {{"max_abs_error", r.error.max_abs},
                             {"relative_error", relative_json(r.error.relative)},
                             {"tolerance", r.tolerance},
                             {"passed", r.passed}};
      if (const auto& g = r.gradient_error) {
        item["correctness"]["gradients"] = {{"dq_relative_error", relative_json(g->dq.relative)},
                                            {"dk_relative_error", relative_json(g->dk.relative)},
                                            {"dv_relative_error", relative_json(g->dv.relative)}};
      }
    }
    item["handoff_bytes"] = r.handoff_bytes;
    if (c.backward) item["gradient_handoff_bytes"] = r.gradient_handoff_bytes;
    item["wall_us"] = spread_json(r.summary.wall);
    item["unmasked_pairs"] = r.work.unmasked_elements.total();
    item["active_tiles"] = r.work.active_tiles.total();
    if (i < report.comparisons.size()) {
      const validate::CaseComparison& cmp = report.comparisons[i];
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
          if (!r.summary.backward_kernel.empty()) {
            const auto cell_at = static_cast<size_t>(round * c.devices + d);
            cell["backward_kernel_us"] = spread_json(r.summary.backward_kernel[cell_at]);
            cell["backward_handoff_us"] = spread_json(r.summary.backward_handoff[cell_at]);
          }
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
  // How many cases all_passed speaks for: 0 under --no-check, where it is true of nothing.
  doc["cases_checked"] = std::ranges::count_if(report.results, [](const CaseResult& r) { return r.checked; });
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
    // Several context parallelisms side by side: each one's errors apart as well, in the order they ran.
    nlohmann::ordered_json errors, by_cp;
    for (const std::string& cp : validate::context_parallelisms(report.results)) by_cp[cp] = nlohmann::ordered_json::object();
    for (const validate::ErrorRow& row : validate::error_rows(report, {CaseRole::calibration, CaseRole::held_out, CaseRole::checked})) {
      (row.cp.empty() ? errors : by_cp[row.cp])[role_name(row.role)] = summary_json(row.summary);
    }
    doc["errors"] = std::move(errors);
    if (by_cp.size() > 1) doc["errors_by_cp"] = std::move(by_cp);
    if (const std::vector<std::string> notes = validate::comparison_notes(report); !notes.empty()) doc["notes"] = notes;
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

std::string to_markdown(const validate::ValidationReport& report) {
  std::string md = "# stripesim validate\n\n";
  md += fmt::format("- command: `{}`\n- backend: {}\n- device: {}\n- timing: {} warm-up and {} timed iterations per case, "
                    "medians\n\n",
                    report.command, report.backend, report.device, report.options.warmup, report.options.iterations);
  const bool gradients = any_backward(report);
  const bool any_checked = std::ranges::any_of(report.results, [](const CaseResult& r) { return r.checked; });
  md += any_checked ? fmt::format("## Correctness against dense attention\n\n| case | relative error |{} tolerance | result |\n|---|---:|{}---:|---|\n",
                                  gradients ? " dQ | dK | dV |" : "", gradients ? "---:|---:|---:|" : "")
                    : std::string("## Correctness against dense attention\n\nNot checked (--no-check): no case's output was compared.\n");
  for (const auto& r : report.results) {
    if (!r.checked) continue;
    md += fmt::format("| {} | {:.2e} |", r.ring_case.label(), r.error.relative);
    if (gradients) {
      md += r.gradient_error ? fmt::format(" {:.2e} | {:.2e} | {:.2e} |", r.gradient_error->dq.relative,
                                           r.gradient_error->dk.relative, r.gradient_error->dv.relative)
                             : " - | - | - |";
    }
    md += fmt::format(" {:.0e} | {} |\n", r.tolerance, r.passed ? "pass" : "**FAIL**");
  }
  if (report.comparisons.empty()) return md;
  md += "\n## Predicted against measured\n\n";
  if (report.calibration) {
    const Calibration& cal = *report.calibration;
    md += fmt::format("Calibrated on the cases marked `calibration` ({} kernels; median fit error {:.1f}%), predicted for "
                      "the rest (`held-out`). Each hand-off is a least-squares line over the timed hops of its kind:",
                      cal.kernel_samples, 100 * cal.fit_median_abs_error);
    if (cal.handoff_samples > 0) {
      md += fmt::format(" {} ({} hops) {:.1f} us latency + bytes at {:.2f} GB/s.", cal.inter_node ? "inside a node" : "every hop",
                        cal.handoff_samples, cal.hop_latency_us, cal.profile.link_bandwidth);
    } else if (!cal.inter_node) {
      md += fmt::format(" none was timed (one device a case): the links stay the profile's, {:.2f} GB/s.", cal.profile.link_bandwidth);
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
  for (const validate::ErrorRow& row : validate::error_rows(report, {CaseRole::held_out, CaseRole::calibration, CaseRole::checked})) {
    const ErrorSummary& s = row.summary;
    md += fmt::format("| {}{} | {} | {:.1f}% | {:.1f}% | {} | {:.1f}% | {:.1f}% |\n", role_name(row.role),
                      row.cp.empty() ? "" : fmt::format(", {}", row.cp), s.cases, 100 * s.median_abs_total_error,
                      100 * s.max_abs_total_error, s.kernels, 100 * s.median_abs_kernel_error, 100 * s.max_abs_kernel_error);
  }
  for (const std::string& note : validate::comparison_notes(report)) md += fmt::format("\nNote: {}.\n", note);
  const bool nodes = spans_nodes(report);
  md += fmt::format("\n| case | role | predicted (us) | measured (us) | error | hop predicted (us) | hop measured (us) |{}\n"
                    "|---|---|---:|---:|---:|---:|---:|{}\n",
                    nodes ? " inter-node hop predicted (us) | inter-node hop measured (us) |" : "", nodes ? "---:|---:|" : "");
  for (size_t i = 0; i < report.comparisons.size(); ++i) {
    const auto& c = report.comparisons[i];
    md += fmt::format("| {} | {} | {:.1f} | {:.1f} | {:+.1f}% | {:.1f} | {:.1f} |", report.results[i].ring_case.label(),
                      role_name(c.role), c.prediction.total_us, c.measured_total_us, as_printed(100 * c.total_error, 1),
                      c.prediction.handoff_us, c.handoff_measured_us);
    if (nodes) md += fmt::format(" {:.1f} | {:.1f} |", c.prediction.inter_node_handoff_us, c.inter_node_handoff_measured_us);
    md += "\n";
  }
  return md;
}

std::string validation_table(const validate::ValidationReport& report) {
  std::string out = fmt::format("validate on {} ({}): {} warm-up + {} timed iterations per case, medians\n\n", report.backend,
                                report.device, report.options.warmup, report.options.iterations);
  const bool predicted = !report.comparisons.empty();
  size_t width = 4;
  for (const auto& r : report.results) width = std::max(width, r.ring_case.label().size());
  out += fmt::format("{:<{}} {:>11} {:>6} {:>12} {:>12}", "case", width, "rel. error", "check", "measured us", "max round us");
  if (predicted) out += fmt::format(" {:>12} {:>9} {:>11}", "predicted us", "error", "role");
  out += "\n";
  for (size_t i = 0; i < report.results.size(); ++i) {
    const auto& r = report.results[i];
    double slowest_round = 0;
    for (model::Count round = 0; round < r.ring_case.devices; ++round) {
      double round_max = 0;
      for (model::Count d = 0; d < r.ring_case.devices; ++d) round_max = std::max(round_max, r.summary.call_us(round, d));
      slowest_round = std::max(slowest_round, round_max);
    }
    out += fmt::format("{:<{}} {:>11} {:>6} {:>12.1f} {:>12.1f}", r.ring_case.label(), width,
                       r.checked ? fmt::format("{:.2e}", worst_relative_error(r)) : "-", r.checked ? (r.passed ? "pass" : "FAIL") : "-",
                       r.summary.wall.median, slowest_round);
    if (predicted) {
      const auto& c = report.comparisons[i];
      out += fmt::format(" {:>12.1f} {:>+8.1f}% {:>11}", c.prediction.total_us, as_printed(100 * c.total_error, 1), validate::role_name(c.role));
    }
    out += "\n";
  }
  if (predicted) {
    for (const validate::ErrorRow& row : validate::error_rows(report, {CaseRole::held_out, CaseRole::calibration, CaseRole::checked})) {
      const char* role = validate::role_name(row.role);
      out += row.cp.empty() ? fmt::format("\n{} cases: {}", role, error_line(row.summary))
                            : fmt::format("\n  {} {} ({}): {}", role, row.cp, row.summary.cases, error_line(row.summary));
    }
    if (report.calibration) {
      const bool nodes = report.calibration->inter_node.has_value();
      if (report.calibration->handoff_samples > 0) {  // every hop crossing nodes leaves the node's link as it was
        out += fmt::format("\nhand-off fit{}: {:.1f} us latency, {:.2f} GB/s ({} hops)", nodes ? " inside a node" : "",
                           report.calibration->hop_latency_us, report.calibration->profile.link_bandwidth,
                           report.calibration->handoff_samples);
      } else if (!nodes) {
        out += fmt::format("\nhand-off: not fitted (no hand-off was timed: one device a case); the links stay the profile's {:.2f} GB/s",
                           report.calibration->profile.link_bandwidth);
      }
      if (const auto& net = report.calibration->inter_node) {
        out += fmt::format("\nhand-off fit between nodes: {:.1f} us latency, {:.2f} GB/s ({} hops)", net->latency_us,
                           net->bandwidth_gbps, net->samples);
      }
    }
    for (const std::string& note : validate::comparison_notes(report)) out += fmt::format("\nnote: {}", note);
    out += "\n";
  }
  if (report.placement) out += fmt::format("\ndevices by host: {}\n", report.placement->describe());
  out += "\nrel. error = max |ring - dense| / max |dense| after undoing the layout";
  if (any_backward(report)) out += " (fwdbwd: the worst of the output, dQ, dK and dV; times are forward + backward)";
  out += "; measured = the ring's wall time";
  out += report.backend == "nccl"  ? " on N GPUs.\n"
         : report.backend == "mpi" ? " over N MPI ranks at once.\n"
                                   : " with the N virtual devices run one after another.\n";
  return out;
}

std::string render(const validate::ValidationReport& report, OutputFormat format) {
  switch (format) {
    case OutputFormat::table: return validation_table(report);
    case OutputFormat::json: return to_json(report, true).dump(2) + "\n";
    case OutputFormat::markdown: return to_markdown(report);
    case OutputFormat::csv: break;
  }
  throw not_offered(format);
}

}  // namespace stripesim::output
