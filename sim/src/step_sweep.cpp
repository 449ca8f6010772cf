#include "stripesim/sim/step_sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/sim/golden_section.hpp"

namespace stripesim::sim {

using model::InputError;

namespace {

constexpr const char* kMeasuredHeader =
    "hardware,model,model_parallel,sequence_parallel,seq_len,measured_speedup_striped_over_contiguous";

}  // namespace

std::vector<MeasuredSpeedup> read_measured_speedups(const std::string& path, std::string label) {
  if (label.empty()) label = "measured speedups " + path;
  std::stringstream in(model::read_text_file(path, label));
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line != kMeasuredHeader) throw InputError(fmt::format("{} line 1: expected the header {}", label, kMeasuredHeader));
  std::vector<MeasuredSpeedup> rows;
  for (int number = 2; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = fmt::format("{} line {}", label, number);
    const std::vector<std::string> f = model::split_list(line, where);
    if (f.size() != 6) throw InputError(fmt::format("{}: expected 6 fields, got {}", where, f.size()));
    MeasuredSpeedup m;
    m.hardware = f[0];
    m.model = f[1];
    m.model_parallel = model::parse_count(f[2], where + " model_parallel");
    m.devices = model::parse_count(f[3], where + " sequence_parallel");
    m.seq_len = model::parse_count(f[4], where + " seq_len");
    m.line = number;
    for (const auto& [count, column] : {std::pair{m.model_parallel, "model_parallel"}, std::pair{m.devices, "sequence_parallel"}}) {
      if (count < 1) throw InputError(fmt::format("{} {} '{}': must be at least 1", where, column, count));
    }
    m.speedup = model::parse_number(f[5], where + " speedup");
    if (!(m.speedup > 0)) throw InputError(fmt::format("{}: speedup '{}' is not a positive number", where, f[5]));
    // Striped does the same work as contiguous spread over N devices: at most N times faster.
    if (m.speedup > static_cast<double>(m.devices)) {
      throw InputError(fmt::format("{}: speedup {} is above the {} devices (no layout is faster than that)", where, f[5], m.devices));
    }
    // A point given twice, however its names are spelled, is refused where the names are known
    // (measured_by_point).
    rows.push_back(std::move(m));
  }
  if (rows.empty()) throw InputError(fmt::format("{}: no rows", label));
  return rows;
}

bool is_step_sweep(const nlohmann::json& doc) { return doc.is_object() && doc.contains("step"); }

StepSweepSpec step_sweep_spec_from_json(const nlohmann::json& doc, const std::string& label) {
  nlohmann::json grid = doc;
  grid.erase("step");
  grid.erase("measured");
  StepSweepSpec spec;
  spec.grid = model::sweep_spec_from_json(grid, label);
  const std::string step_label = label + " field \"step\"";
  if (!doc.at("step").is_object()) throw InputError(step_label + ": expected an object");
  for (const char* field : {"hardware", "model", "model_parallel", "devices", "seq_len", "heads", "kv_heads", "head_dim",
                            "tile", "layouts"}) {
    if (doc.at("step").contains(field)) {
      throw InputError(fmt::format("{}: \"{}\" is set by each point of the grid", step_label, field));
    }
  }
  if (doc.at("step").contains("tiling")) {
    throw InputError(fmt::format("{}: \"tiling\" is the whole grid's: give it at the top level", step_label));
  }
  spec.step = simulate_config_from_json(doc.at("step"), step_label);
  spec.step_origins = model::InputOrigins::of_file(doc.at("step"), label, [](model::Input) { return false; }, "step.");
  if (doc.contains("tiling")) spec.step.tiling = spec.grid.tiling;
  if (doc.at("step").contains("scope") && spec.step.scope != Scope::step) {
    throw InputError(fmt::format("{}: \"scope\" is \"{}\"; a step sweep simulates training steps", step_label,
                                 to_string(spec.step.scope)));
  }
  spec.step.scope = Scope::step;
  if (!doc.at("step").contains("pass")) spec.step.pass = default_pass(Scope::step);
  if (doc.contains("measured")) {
    // An empty path would read as no measurements: the sweep without its measured column.
    spec.measured = model::JsonFields(doc, label).non_empty_string("measured");
    spec.measured_label = fmt::format("{} field \"measured\" {}", label, spec.measured);
  }
  return spec;
}

namespace {

// work(), an error it raises by kind about a value a measured row gave (its hardware, model,
// mesh or length, checked where the row is simulated) named at the row's line and column, not as
// the flag the command does not have.
template <typename Work>
auto at_measured_row(const std::string& label, const MeasuredSpeedup& m, Work&& work) {
  try {
    return work();
  } catch (const InputError& e) {
    static const std::map<model::Input, const char*> kColumns{{model::Input::hardware, "hardware"},
                                                              {model::Input::model, "model"},
                                                              {model::Input::model_parallel, "model_parallel"},
                                                              {model::Input::devices, "sequence_parallel"},
                                                              {model::Input::seq_len, "seq_len"}};
    const auto column = e.input() ? kColumns.find(*e.input()) : kColumns.end();
    if (column == kColumns.end()) throw;  // about the step's own settings, named where they were given
    throw e.at(fmt::format("{} line {} {}", label, m.line, column->second));
  }
}

struct MeasuredKey {
  std::string hardware, model;
  Count model_parallel, devices, seq_len;
  auto operator<=>(const MeasuredKey&) const = default;
};

// The measured rows keyed by the catalog's names, so "A100" meets a100-80gb (names match case
// aside): a row whose names are unknown, or a point given twice (as written, or named two ways),
// refused at its line.
std::map<MeasuredKey, const MeasuredSpeedup*> measured_by_point(const std::vector<MeasuredSpeedup>& rows, const std::string& label,
                                                                const model::ConfigCatalog& catalog) {
  std::map<MeasuredKey, const MeasuredSpeedup*> out;
  for (const auto& m : rows) {
    const MeasuredKey key = at_measured_row(label, m, [&] {
      return MeasuredKey{catalog.hardware(m.hardware).name, catalog.model(m.model).name, m.model_parallel, m.devices, m.seq_len};
    });
    if (const auto [it, fresh] = out.try_emplace(key, &m); !fresh) {
      throw InputError(fmt::format("{} line {}: the same point as line {} (one measurement a point)", label, m.line, it->second->line));
    }
  }
  return out;
}

// The profiles the step fit tries in memory; unset: the point's own.
struct StepOverrides {
  std::optional<model::HardwareProfile> hardware;
  std::optional<KernelProfile> kernel;
};

SimulateConfig point_config(const StepSweepSpec& spec, const model::SweepPoint& point, const StepOverrides& overrides) {
  SimulateConfig c = spec.step;
  c.hardware = point.hardware;
  c.model = point.model;
  c.model_parallel = point.mesh.model_parallel;
  c.devices = point.mesh.devices;
  c.seq_len = point.seq_len;
  c.tile = point.tile;
  c.layouts = {"contiguous", "striped", "zigzag"};
  c.hardware_profile = overrides.hardware;
  c.kernel_profile = overrides.kernel;
  return c;
}

// The columns run_step_sweep adds to a TMS sweep's row.
constexpr std::array<const char*, 6> kStepColumns{"step_time_us_contiguous", "step_speedup", "step_speedup_zigzag",
                                                  "mfu_striped", "measured", "error"};

}  // namespace

StepSweepPlan plan_step_sweep(const StepSweepSpec& spec, const model::ConfigCatalog& catalog) {
  // The TMS sweep checks the columns, the step's among those it knows (rows get them here).
  model::SweepSpec tms_columns = spec.grid;
  tms_columns.added_columns.assign(kStepColumns.begin(), kStepColumns.end());
  StepSweepPlan plan{model::plan_sweep(tms_columns, catalog), {}, {}, spec.grid.columns};
  plan.grid.columns.clear();
  for (const model::SweepPoint& point : plan.grid.points) {
    plan.steps.push_back(point.origins.run(
        [&] { return spec.step_origins.run([&] { return plan_simulation(point_config(spec, point, {}), catalog); }); }));
  }
  const std::vector<MeasuredSpeedup> rows = spec.measured.empty() ? std::vector<MeasuredSpeedup>{} : read_measured_speedups(spec.measured, spec.measured_label);
  const std::map<MeasuredKey, const MeasuredSpeedup*> measured = measured_by_point(rows, spec.measured_label, catalog);
  std::set<int> shown;  // the lines of the rows some point shows (points of several tiles share one)
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Simulation& sim = plan.steps[i].simulation;
    const model::SweepPoint& point = plan.grid.points[i];
    const auto found = measured.find(
        {sim.hardware.name, sim.transformer->name, point.mesh.model_parallel, point.mesh.devices, point.seq_len});
    plan.measured.push_back(found == measured.end() ? std::nullopt : std::optional<double>(found->second->speedup));
    if (found != measured.end()) shown.insert(found->second->line);
  }
  // A row no point of the grid shows would vanish from the sweep while calibrate-step fits on it.
  if (const auto unshown = std::ranges::find_if(rows, [&](const MeasuredSpeedup& m) { return !shown.contains(m.line); });
      unshown != rows.end()) {
    const MeasuredSpeedup& m = *unshown;
    throw InputError(fmt::format("{} line {}: no point of the grid is {} {} on a {}x{} mesh at n = {} (the sweep would not show "
                                 "the row; add the point to a group, or drop the row)",
                                 spec.measured_label, m.line, m.hardware, m.model, m.model_parallel, m.devices, m.seq_len));
  }
  return plan;
}

std::vector<nlohmann::ordered_json> run_step_sweep(const StepSweepPlan& plan) {
  std::vector<nlohmann::ordered_json> rows = model::run_sweep(plan.grid);
  for (size_t i = 0; i < rows.size(); ++i) {
    nlohmann::ordered_json& row = rows[i];
    // Placing the ring on the topology happens here, its errors named at the point's fields.
    const Simulation sim = plan.grid.points[i].origins.run([&] { return run_simulation(plan.steps[i]); });
    const std::optional<double>& measured = plan.measured[i];
    row[kStepColumns[0]] = sim.results[0].time_us;
    row[kStepColumns[1]] = sim.results[1].speedup_vs_contiguous;
    row[kStepColumns[2]] = sim.results[2].speedup_vs_contiguous;
    row[kStepColumns[3]] = sim.results[1].step->mfu;
    row[kStepColumns[4]] = measured ? nlohmann::ordered_json(*measured) : nlohmann::ordered_json(nullptr);
    row[kStepColumns[5]] =
        measured ? nlohmann::ordered_json(sim.results[1].speedup_vs_contiguous - *measured) : nlohmann::ordered_json(nullptr);
    row = model::select_columns(row, plan.columns);
  }
  return rows;
}

namespace {

// One measured point's ring, simulated once per partial-tile ratio; the element-wise cost only
// moves the step's arithmetic around it (estimate_step), so the search over it is cheap.
struct PointRing {
  StepShape shape;
  std::vector<RingTimeline> contiguous, striped;
};

// Sets the point's element-wise cost in place: a copy of the shape (its hardware profile, sources
// and all) for every trial of the search costs more than the arithmetic.
double predicted_speedup(PointRing& p, double elementwise_bytes) {
  p.shape.hardware.elementwise_bytes_per_dmodel = elementwise_bytes;
  return estimate_step(p.shape, p.contiguous).time_us / estimate_step(p.shape, p.striped).time_us;
}

struct Candidate {
  size_t ratio = 0;  // index into the ratio grid
  double bytes = 0;  // element-wise bytes per token per d_model
  double mean_abs_error = std::numeric_limits<double>::infinity();
};

double mean_abs_error(std::vector<PointRing>& points, const std::vector<double>& measured, const std::vector<size_t>& rows,
                      double bytes) {
  double sum = 0;
  for (const size_t i : rows) sum += std::abs(predicted_speedup(points[i], bytes) - measured[i]);
  return sum / static_cast<double>(rows.size());
}

// Bytes on a log grid, then golden-section search between the best point's neighbours.
Candidate best_bytes(std::vector<PointRing>& points, const std::vector<double>& measured,
                          const std::vector<size_t>& rows) {
  constexpr double kLow = 1.0, kHigh = 1e6;
  constexpr int kGrid = 160;
  auto at = [](int i) { return kLow * std::pow(kHigh / kLow, static_cast<double>(i) / kGrid); };
  Candidate best;
  int best_i = 0;
  for (int i = 0; i <= kGrid; ++i) {
    const double e = mean_abs_error(points, measured, rows, at(i));
    if (e < best.mean_abs_error) {
      best = {0, at(i), e};
      best_i = i;
    }
  }
  const auto [a, b] = golden_section([&](double bytes) { return mean_abs_error(points, measured, rows, bytes); },
                                      at(std::max(0, best_i - 1)), at(std::min(kGrid, best_i + 1)), 40);
  const double e = mean_abs_error(points, measured, rows, (a + b) / 2);
  if (e < best.mean_abs_error) best = {0, (a + b) / 2, e};
  return best;
}

// Four significant digits: what the profile file records, so its numbers reproduce the fit's.
double significant4(double x) {
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(x)));
  return std::round(x * scale) / scale;
}

KernelProfile with_partial_ratio(KernelProfile kernel, double ratio) {
  kernel.forward.partial_tile_us = std::round(ratio * kernel.forward.full_tile_us * 1e4) / 1e4;
  kernel.backward.partial_tile_us = std::round(ratio * kernel.backward.full_tile_us * 1e4) / 1e4;
  return kernel;
}

// A measured row as the sweep point its simulation is configured from.
model::SweepPoint measured_point(const MeasuredSpeedup& m, const model::HardwareProfile& hardware) {
  return {hardware.name, m.model, {m.model_parallel, m.devices}, m.seq_len, std::nullopt, model::InputOrigins()};
}

SimulateConfig fit_config(const StepSweepSpec& spec, const MeasuredSpeedup& m, const model::HardwareProfile& hardware,
                          const KernelProfile& kernel) {
  SimulateConfig c = point_config(spec, measured_point(m, hardware), StepOverrides{hardware, kernel});
  c.layouts = {"contiguous", "striped"};
  return c;
}

}  // namespace

StepFitPlan plan_step_fit(const StepSweepSpec& spec, const model::ConfigCatalog& catalog) {
  if (spec.measured.empty()) throw InputError("step fit: the experiment names no \"measured\" file to fit to");
  StepFitPlan plan;
  plan.spec = spec;
  plan.measured = read_measured_speedups(spec.measured, spec.measured_label);
  const auto by_point = measured_by_point(plan.measured, spec.measured_label, catalog);
  plan.hardware = catalog.hardware(plan.measured.front().hardware);
  // The first row, in the file's order, on another hardware than the first row's.
  const MeasuredSpeedup* other = nullptr;
  for (const auto& [key, row] : by_point) {
    if (key.hardware != plan.hardware.name && (other == nullptr || row->line < other->line)) other = row;
  }
  if (other != nullptr) {
    throw InputError(fmt::format("{}: rows on {} and {}; a step fit calibrates one hardware", spec.measured_label,
                                 plan.measured.front().hardware, other->hardware));
  }
  if (!plan.hardware.matmul_efficiency) {
    throw InputError(fmt::format("step fit: {} has no matmul_efficiency (the fit finds the element-wise cost beside it)",
                                 plan.hardware.label()));
  }
  spec.step_origins.run([&] {
    plan.kernel = load_kernel_profile(spec.step.kernel, catalog, plan.hardware);
    // Every row's simulation as the fit configures it: what the fit would refuse, refused now.
    for (const auto& m : plan.measured) {
      at_measured_row(spec.measured_label, m, [&] { (void)plan_simulation(fit_config(spec, m, plan.hardware, plan.kernel), catalog); });
    }
  });
  return plan;
}

StepFit fit_step(const StepFitPlan& plan, const model::ConfigCatalog& catalog) {
  const StepSweepSpec& spec = plan.spec;
  const std::vector<MeasuredSpeedup>& measured_rows = plan.measured;
  StepFit fit;
  fit.hardware = plan.hardware;
  const KernelProfile& kernel = plan.kernel;
  const model::HardwareProfile& hardware = fit.hardware;

  std::vector<double> ratios;
  for (int i = 0; i <= 150; ++i) ratios.push_back(1.0 + 0.01 * i);
  std::vector<double> measured;
  for (const auto& m : measured_rows) measured.push_back(m.speedup);
  std::vector<std::vector<PointRing>> rings(ratios.size());
  for (size_t r = 0; r < ratios.size(); ++r) {
    const KernelProfile tried = with_partial_ratio(kernel, ratios[r]);
    for (const auto& m : measured_rows) {
      Simulation sim = run_simulation(fit_config(spec, m, hardware, tried), catalog);
      rings[r].push_back({*sim.step_shape, std::move(sim.results[0].passes), std::move(sim.results[1].passes)});
    }
  }
  auto search = [&](const std::vector<size_t>& rows) {
    Candidate best;
    for (size_t r = 0; r < ratios.size(); ++r) {
      Candidate c = best_bytes(rings[r], measured, rows);
      c.ratio = r;
      if (c.mean_abs_error < best.mean_abs_error) best = c;
    }
    best.bytes = significant4(best.bytes);
    return best;
  };

  std::vector<size_t> all(measured_rows.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const Candidate best = search(all);
  fit.partial_ratio = ratios[best.ratio];
  fit.hardware.elementwise_bytes_per_dmodel = best.bytes;
  fit.kernel = with_partial_ratio(kernel, fit.partial_ratio);
  std::map<Count, std::vector<size_t>> by_devices;
  for (size_t i = 0; i < measured_rows.size(); ++i) by_devices[measured_rows[i].devices].push_back(i);
  std::vector<std::optional<double>> held_out(measured_rows.size());
  for (const auto& [devices, rows] : by_devices) {
    std::vector<size_t> rest;
    for (size_t i = 0; i < measured_rows.size(); ++i) {
      if (measured_rows[i].devices != devices) rest.push_back(i);
    }
    if (rest.empty()) continue;
    const Candidate other = search(rest);
    for (const size_t i : rows) held_out[i] = predicted_speedup(rings[other.ratio][i], other.bytes);
  }
  // With two degrees or more every row is held out once; with one, none is (nothing to fit on).
  if (by_devices.size() > 1) {
    fit.held_out_mean_abs_error = 0;
    fit.held_out_worst_abs_error = 0;
  }
  for (size_t i = 0; i < measured_rows.size(); ++i) {
    const double predicted = predicted_speedup(rings[best.ratio][i], best.bytes);
    fit.rows.push_back({measured_rows[i], predicted, held_out[i]});
    const double error = std::abs(predicted - measured[i]);
    fit.mean_abs_error += error / static_cast<double>(measured.size());
    fit.worst_abs_error = std::max(fit.worst_abs_error, error);
    if (held_out[i] && fit.held_out_mean_abs_error) {
      const double held = std::abs(*held_out[i] - measured[i]);
      *fit.held_out_mean_abs_error += held / static_cast<double>(measured.size());
      fit.held_out_worst_abs_error = std::max(*fit.held_out_worst_abs_error, held);
    }
  }
  return fit;
}

}  // namespace stripesim::sim
