#include "stripesim/output/accuracy_printers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <set>

#include "stripesim/model/io/schemas.hpp"
#include "stripesim/output/number_text.hpp"
#include "stripesim/output/rows.hpp"

namespace stripesim::output {

namespace {

nlohmann::ordered_json summary_json(const validate::AccuracySummary& s) {
  return {{"calls", s.calls},
          {"median_abs_call_error", s.median_abs_call_error},
          {"max_abs_call_error", s.max_abs_call_error},
          {"speedups", s.speedups},
          {"mean_abs_speedup_error", s.mean_abs_speedup_error},
          {"max_abs_speedup_error", s.max_abs_speedup_error}};
}

}  // namespace

nlohmann::ordered_json to_json(const validate::KernelAccuracy& accuracy) {
  const validate::KernelFit& fit = accuracy.fit;
  const auto& predictions = accuracy.predictions;
  const sim::KernelProfile& kernel = fit.profile;
  nlohmann::ordered_json doc;
  doc["schema"] = model::kKernelAccuracySchema;
  doc["command"] = accuracy.command;
  doc["method"] = validate::describe(accuracy.method);
  doc["kernel"] = sim::to_json(kernel);
  if (accuracy.method != validate::AccuracyMethod::profile_as_given) {
    doc["fit"] = {{"samples", fit.samples}, {"median_abs_error", fit.median_abs_error}, {"max_abs_error", fit.max_abs_error}};
  }
  doc["summary"] = summary_json(validate::summarize_accuracy(predictions));
  doc["consistency_floor"] = summary_json(accuracy.floor);
  nlohmann::ordered_json drift = nlohmann::ordered_json::array();
  for (const validate::LayoutDrift& d : accuracy.drift) {
    drift.push_back({{"group", d.group},
                     {"slow_layout", d.slow_layout},
                     {"fast_layout", d.fast_layout},
                     {"ratio", d.ratio},
                     {"classes", d.classes}});
  }
  doc["timing_drift"] = std::move(drift);
  nlohmann::ordered_json workloads = nlohmann::ordered_json::array();
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& p : predictions) {
    const validate::MeasuredWorkload& w = *p.workload;
    workloads.push_back({{"group", w.group},
                         {"layout", w.layout},
                         {"seq_len", w.seq_len},
                         {"devices", w.devices},
                         {"heads", w.heads},
                         {"head_dim", w.head_dim},
                         {"mask", w.mask},
                         {"pass", sim::to_string(w.pass)},
                         {"held_out", p.held_out},
                         {"predicted_lockstep_us", p.predicted_lockstep_us},
                         {"measured_lockstep_us", p.measured_lockstep_us},
                         {"predicted_speedup", optional_json(p.predicted_speedup)},
                         {"measured_speedup", optional_json(p.measured_speedup)},
                         {"median_measured_over_predicted", optional_json(validate::median_measured_over_predicted(p))},
                         {"predicted_us", p.predicted_us},
                         {"measured_us", w.us}});
    points.push_back({{"label", w.label()},
                      {"role", p.held_out ? "held-out" : "checked"},
                      {"predicted_us", p.predicted_lockstep_us},
                      {"measured_us", p.measured_lockstep_us}});
  }
  doc["workloads"] = std::move(workloads);
  doc["comparisons"] = std::move(points);
  return doc;
}

std::string to_markdown(const validate::KernelAccuracy& accuracy) {
  const validate::KernelFit& fit = accuracy.fit;
  const auto& predictions = accuracy.predictions;
  const sim::KernelProfile& kernel = fit.profile;
  const validate::AccuracySummary s = validate::summarize_accuracy(predictions);
  std::string md = fmt::format("# Kernel {} on {}: predicted against measured\n\n- command: `{}`\n- method: {}\n", kernel.name,
                               kernel.hardware, accuracy.command, validate::describe(accuracy.method));
  if (accuracy.method != validate::AccuracyMethod::profile_as_given) {
    md += fmt::format("- fit on everything: {} calls, median error {:.1f}%, worst {:.1f}%\n", fit.samples,
                      100 * fit.median_abs_error, 100 * fit.max_abs_error);
  }
  if (accuracy.method == validate::AccuracyMethod::profile_as_given) {
    std::set<std::string> in_sample, files;
    for (const auto& p : predictions) {
      files.insert(p.workload->group);
      if (!p.held_out) in_sample.insert(p.workload->group);
    }
    if (!in_sample.empty()) {
      constexpr size_t kNamed = 8;  // a block-cost file is a group per row: name a few
      const std::vector<std::string> named(in_sample.begin(), std::next(in_sample.begin(), static_cast<std::ptrdiff_t>(
                                                                               std::min(kNamed, in_sample.size()))));
      md += fmt::format("- in-sample: the profile was fitted on {} of these {} groups (files, block-cost rows: {}{}): "
                        "their scores say how well it fits, not how well it predicts\n",
                        in_sample.size(), files.size(), fmt::join(named, ", "), in_sample.size() > kNamed ? ", ..." : "");
    }
  }
  md += fmt::format("- per (round, device) call: {} timed calls, median error {:.1f}%, worst {:.1f}%\n", s.calls,
                    100 * s.median_abs_call_error, 100 * s.max_abs_call_error);
  md += fmt::format("- lockstep speedup over contiguous: {} layouts, mean error {:.3f}, worst {:.3f}\n", s.speedups,
                    s.mean_abs_speedup_error, s.max_abs_speedup_error);
  const validate::AccuracySummary& floor = accuracy.floor;
  md += fmt::format("- consistency floor (each class of calls with equal work predicted by its own median measured "
                    "time: what no model giving equal work an equal time can beat on these files): call median "
                    "{:.1f}%, worst {:.1f}%; speedup mean {:.3f}, worst {:.3f}\n",
                    100 * floor.median_abs_call_error, 100 * floor.max_abs_call_error, floor.mean_abs_speedup_error,
                    floor.max_abs_speedup_error);
  for (const validate::LayoutDrift& d : accuracy.drift) {
    md += fmt::format("- timing: {}: calls of equal work took {:.2f}x as long in {} as in {} (median over {} kind{} of "
                      "call): its layouts were timed in different states of the GPU or host, and its speedups carry "
                      "that; time it again (bench/retime_measurements.py)\n",
                      d.group, d.ratio, d.slow_layout, d.fast_layout, d.classes, d.classes == 1 ? "" : "s");
  }
  md += "- calls measured / predicted: the median over a layout's calls; one layout of a file off by itself "
        "while the others are not was timed in another state of the GPU or host (clock, power) or makes a kind "
        "of call the model misses: calls of equal work in two layouts tell which\n";
  md += "\n| workload | layout | lockstep predicted (us) | measured (us) | speedup predicted | measured | error | "
        "calls measured / predicted |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& p : predictions) {
    const auto speedup = [](const std::optional<double>& x) { return x ? fmt::format("{:.2f}x", *x) : std::string("-"); };
    const std::optional<double> ratio = validate::median_measured_over_predicted(p);
    md += fmt::format("| {} | {} | {:.0f} | {:.0f} | {} | {} | {} | {} |\n", p.workload->group, p.workload->layout,
                      p.predicted_lockstep_us, p.measured_lockstep_us, speedup(p.predicted_speedup),
                      speedup(p.measured_speedup),
                      p.predicted_speedup && p.measured_speedup
                          ? fmt::format("{:+.3f}", as_printed(*p.predicted_speedup - *p.measured_speedup, 3))
                          : std::string("-"),
                      ratio ? fmt::format("{:.3f}", *ratio) : std::string("-"));
  }
  return md;
}

std::string render(const validate::KernelAccuracy& accuracy, OutputFormat format) {
  switch (format) {
    case OutputFormat::json: return to_json(accuracy).dump(2) + "\n";
    case OutputFormat::table:
    case OutputFormat::markdown: return to_markdown(accuracy);
    case OutputFormat::csv: break;
  }
  throw not_offered(format);
}

}  // namespace stripesim::output
