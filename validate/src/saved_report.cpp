#include "stripesim/validate/saved_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/sim/node_placement.hpp"
#include "stripesim/validate/cpu_ring.hpp"
#include "stripesim/validate/ring_problem.hpp"
#include "stripesim/validate/validate_workflow.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate {
namespace {

using model::InputError;
using model::JsonFields;

double required_non_negative(const JsonFields& f, const std::string& key) {
  if (!f.has(key)) throw InputError(fmt::format("{}: missing", f.where(key)));
  return f.non_negative_number_or(key, 0.0);
}

Spread spread_from(const JsonFields& parent, const std::string& key) {
  const JsonFields s(parent.raw(key), parent.where(key));
  s.allow_only({"median", "min", "max"});
  const Spread out{required_non_negative(s, "median"), required_non_negative(s, "min"), required_non_negative(s, "max")};
  if (out.min > out.median || out.median > out.max) {
    throw InputError(fmt::format("{}: expected min <= median <= max", parent.where(key)));
  }
  return out;
}

// A relative error the printer writes as null when it was not finite (NaN or missing output).
double relative_from(const JsonFields& f, const std::string& key) {
  if (f.has(key) && f.raw(key).is_null()) return std::numeric_limits<double>::infinity();
  return f.numerical_error(key);
}

void read_correctness(const JsonFields& c, CaseResult& r) {
  c.allow_only({"max_abs_error", "relative_error", "tolerance", "passed", "gradients"});
  r.checked = true;
  r.error.max_abs = c.numerical_error("max_abs_error");
  r.error.relative = relative_from(c, "relative_error");
  // The tolerance is the case's precision's (set before this is read), not the file's to choose.
  if (const double recorded = c.numerical_error("tolerance"); recorded != r.tolerance) {
    throw InputError(fmt::format("{}: {:g} in the file, but a case in this precision is checked to {:g}", c.where("tolerance"), recorded,
                                 r.tolerance));
  }
  if (!c.has("passed") || !c.raw("passed").is_boolean()) throw InputError(fmt::format("{}: expected true or false", c.where("passed")));
  r.passed = c.raw("passed").get<bool>();
  if (c.has("gradients")) {
    const JsonFields g(c.raw("gradients"), c.where("gradients"));
    g.allow_only({"dq_relative_error", "dk_relative_error", "dv_relative_error"});
    GradientErrors e;
    e.dq.relative = relative_from(g, "dq_relative_error");
    e.dk.relative = relative_from(g, "dk_relative_error");
    e.dv.relative = relative_from(g, "dv_relative_error");
    r.gradient_error = e;
  }
  // The verdict is the errors' against the tolerance: a file that says otherwise was edited.
  if (r.passed != r.within_tolerance()) {
    throw InputError(fmt::format("{}: {}, but the errors recorded beside it are {} the tolerance {:g}", c.where("passed"),
                                 r.passed ? "true" : "false", r.passed ? "not below" : "below", r.tolerance));
  }
}

RingCase case_from(const JsonFields& f, const std::string& backend) {
  RingCase c;
  c.layout = f.string("layout");
  c.mask = f.string("mask");
  c.cp = f.string_or("cp", "ring");
  const std::string pass = f.string_or("pass", "fwd");
  if (pass != "fwd" && pass != "fwdbwd") throw InputError(fmt::format("{} '{}': expected fwd or fwdbwd", f.where("pass"), pass));
  c.backward = pass == "fwdbwd";
  c.seq_len = f.positive_integer("seq_len");
  c.devices = f.positive_integer("devices");
  c.tile = model::parse_tile_shape(f.string("tile"));
  c.heads = f.positive_integer("heads");
  c.kv_heads = f.positive_integer("kv_heads");
  c.head_dim = f.positive_integer("head_dim");
  c.precision = parse_precision(f.string("dtype"));
  if (f.has("seed")) {
    if (!f.raw("seed").is_number_unsigned()) throw InputError(fmt::format("{}: expected a non-negative integer", f.where("seed")));
    c.seed = f.raw("seed").get<std::uint64_t>();
  }
  // Files written before "gpu_kernel" was recorded ran the default kernel.
  if (f.has("gpu_kernel")) c.gpu_kernel = parse_gpu_kernel(f.string("gpu_kernel"));
  // ... and before "gpu_backward_kernel" was, the scalar backward.
  if (f.has("gpu_backward_kernel")) c.gpu_backward_kernel = parse_gpu_backward_kernel(f.string("gpu_backward_kernel"));
  check_backend_runs(backend, c.cp);
  if (c.backward) check_backend_runs_backward(backend);
  check_backend_computes_in(backend, c.precision);
  return c;
}

// The per-(round, device) cells, in round-major order, each with the counts the work model gives.
void read_cells(const JsonFields& f, CaseResult& r) {
  const RingCase& c = r.ring_case;
  const nlohmann::json& cells = f.non_empty_array("rounds");
  const Count n = c.devices;
  if (static_cast<Count>(cells.size()) != n * n) {
    throw InputError(fmt::format("{}: expected {} cells (rounds x devices), found {}", f.where("rounds"), n * n, cells.size()));
  }
  MeasurementSummary& s = r.summary;
  s.devices = n;
  for (size_t i = 0; i < cells.size(); ++i) {
    const JsonFields cell(cells[i], f.where_item("rounds", i));
    cell.allow_only({"round", "device", "unmasked_pairs", "active_tiles", "partial_tiles", "kernel_us", "handoff_us",
                     "backward_kernel_us", "backward_handoff_us", "predicted_kernel_us"});
    const Count round = static_cast<Count>(i) / n, device = static_cast<Count>(i) % n;
    if (cell.non_negative_count("round") != round || cell.non_negative_count("device") != device) {
      throw InputError(fmt::format("{}: expected round {}, device {} (cells in round-major order)", cell.label(), round, device));
    }
    const auto count_at = [&](const char* key, const model::WorkMatrix& counted) {
      const Count recorded = cell.non_negative_count(key);
      if (recorded != counted.at(round, device)) {
        throw InputError(fmt::format("{}: {} in the file, {} by this stripesim's work model (another layout or mask definition?)",
                                     cell.where(key), recorded, counted.at(round, device)));
      }
    };
    count_at("unmasked_pairs", r.work.unmasked_elements);
    count_at("active_tiles", r.work.active_tiles);
    count_at("partial_tiles", r.work.partial_tiles);
    // A ring calls its kernel exactly where a tile is active (every backend skips the others): a
    // time of 0 there would be fitted and scored as no call, and one where nothing is active is
    // a call that cannot have run. (An all-gather's or Ulysses' one call a device sits in one
    // cell of its own.)
    const auto call_at = [&](const char* key) {
      const Spread spread = spread_from(cell, key);
      if (c.cp != "ring") return spread;
      const Count active = r.work.active_tiles.at(round, device);
      if (active > 0 && !(spread.median > 0)) {
        throw InputError(fmt::format("{}: a median of 0 where {} tiles are active (the ring calls its kernel there)", cell.where(key), active));
      }
      if (active == 0 && spread.max > 0) {
        throw InputError(fmt::format("{}: a time where no tile is active (the ring makes no call there)", cell.where(key)));
      }
      return spread;
    };
    s.kernel.push_back(call_at("kernel_us"));
    s.handoff.push_back(spread_from(cell, "handoff_us"));
    if (c.backward) {
      s.backward_kernel.push_back(call_at("backward_kernel_us"));
      s.backward_handoff.push_back(spread_from(cell, "backward_handoff_us"));
    }
  }
}

// The earlier run's comparison of a case, written for readers and recomputed by --compare:
// checked for what it is, so that an edited value is refused, not passed over.
void check_recorded_comparison(const JsonFields& f) {
  if (f.has("role")) {
    const std::string role = f.string("role");
    constexpr CaseRole kRoles[] = {CaseRole::checked, CaseRole::calibration, CaseRole::held_out};
    if (std::ranges::none_of(kRoles, [&](CaseRole r) { return role == role_name(r); })) {
      throw InputError(fmt::format("{} '{}': expected checked, calibration or held-out", f.where("role"), role));
    }
  }
  for (const char* key : {"predicted_us", "measured_us"}) (void)f.non_negative_number_or(key, 0);
  if (f.has("error") && !f.raw("error").is_number()) throw InputError(fmt::format("{}: expected a number", f.where("error")));
  if (!f.has("round_times")) return;
  const nlohmann::json& rounds = f.raw("round_times");
  if (!rounds.is_array()) throw InputError(fmt::format("{}: expected an array", f.where("round_times")));
  for (size_t i = 0; i < rounds.size(); ++i) {
    const JsonFields round(rounds[i], f.where_item("round_times", i));
    round.allow_only({"round", "predicted_us", "measured_us"});
    (void)round.non_negative_count("round");
    for (const char* key : {"predicted_us", "measured_us"}) (void)round.non_negative_number_or(key, 0);
  }
}

CaseResult result_from(const JsonFields& f, const std::string& backend) {
  f.allow_only({"label", "layout", "mask", "cp", "pass", "seq_len", "devices", "tile", "heads", "kv_heads", "head_dim", "dtype",
                "seed", "gpu_kernel", "gpu_backward_kernel", "correctness", "handoff_bytes", "gradient_handoff_bytes", "wall_us", "unmasked_pairs",
                "active_tiles", "role", "predicted_us", "measured_us", "error", "round_times", "rounds"});
  CaseResult r;
  // The checks the flags share raise their errors by flag (--layouts 'zigzg'): named here at the
  // case's field, since no flag was given.
  try {
    r.ring_case = case_from(f, backend);
    const RingPlan plan = plan_ring_problem(r.ring_case);
    r.work = model::count_work(plan.layout.build(), plan.mask, r.ring_case.tile, 1);
  } catch (const InputError& e) {
    using model::Input;
    static const std::vector<std::pair<Input, const char*>> kFields{
        {Input::layouts, "layout"}, {Input::mask, "mask"},   {Input::tile, "tile"},         {Input::cp, "cp"},
        {Input::dtype, "dtype"},    {Input::pass, "pass"},   {Input::seq_len, "seq_len"},   {Input::devices, "devices"},
        {Input::heads, "heads"},    {Input::kv_heads, "kv_heads"}, {Input::head_dim, "head_dim"}};
    // Where the case names a file by a relative path (its layout's or its mask's), an error about
    // it says the file is read from here, not where the run ran.
    const auto relative_file = [&](const std::string& file) { return !file.empty() && std::filesystem::path(file).is_relative(); };
    const bool layout_file = relative_file(model::layout_file(f.string("layout")));
    const bool mask_file = relative_file(model::mask_file(f.string("mask")));
    const std::string_view note = " (a saved run names its files as its command gave them: a relative path is read from "
                                  "the folder this command runs in, not the one the run ran in)";
    const auto field = std::ranges::find(kFields, e.input(), [](const auto& p) { return std::optional(p.first); });
    if (field != kFields.end()) {
      const InputError located = e.at(f.where(field->second));
      const bool about_a_file = (e.input() == Input::layouts && layout_file) || (e.input() == Input::mask && mask_file);
      if (!about_a_file) throw located;
      throw InputError(fmt::format("{}{}", located.what(), note));
    }
    // Not raised by kind: named at the case (a field of the case read here already names it).
    const std::string what = e.what();
    throw InputError(fmt::format("{}{}", what.starts_with(f.label()) ? what : f.label() + ": " + what,
                                 layout_file || mask_file ? note : ""));
  }
  check_recorded_comparison(f);
  r.tolerance = output_tolerance(r.ring_case.precision);
  if (f.has("correctness")) read_correctness(JsonFields(f.raw("correctness"), f.where("correctness")), r);
  // A device's K/V block is never empty: 0 bytes would price every hand-off at an infinite rate.
  r.handoff_bytes = f.positive_integer("handoff_bytes");
  if (r.ring_case.backward) {
    // Files written before the field: a dK/dV accumulator per K/V row of the device's block, in
    // fp32 on the GPU backends and in the case's own precision on the host ones.
    const RingCase& c = r.ring_case;
    const Count block = c.seq_len / c.devices, kv_row = c.kv_heads * c.head_dim;
    const bool doubles = !is_gpu_backend(backend) && c.precision == Precision::fp64;
    r.gradient_handoff_bytes = f.has("gradient_handoff_bytes")
                                   ? f.non_negative_count("gradient_handoff_bytes")
                                   : (doubles ? cpu_ring::accumulator_bytes<double>(block, kv_row) : cpu_ring::accumulator_bytes<float>(block, kv_row));
  }
  r.summary.wall = spread_from(f, "wall_us");
  if (!(r.summary.wall.median > 0)) {
    throw InputError(fmt::format("{}: a median of 0 (a run of the case takes time; its error would score as exact)", f.where("wall_us")));
  }
  (void)f.string_or("label", "");  // written for readers, recomputed here: checked for its type only
  read_cells(f, r);
  // The case's totals are its cells' sums: a file that says otherwise was edited or is another's.
  for (const auto& [key, counted] : {std::pair{"unmasked_pairs", &r.work.unmasked_elements}, {"active_tiles", &r.work.active_tiles}}) {
    if (!f.has(key)) continue;
    const Count recorded = f.non_negative_count(key);
    if (recorded != counted->total()) {
      throw InputError(fmt::format("{}: {} in the file, {} summed over its rounds", f.where(key), recorded, counted->total()));
    }
  }
  return r;
}

// The GPU kernels whose costs a fit over runs describes: every case's forward kernel, and the
// backward kernel of every case that ran a backward (a forward-only run has none to differ in).
struct RunKernels {
  std::optional<GpuKernel> forward;
  std::optional<GpuBackwardKernel> backward;
};

RunKernels kernels_of(const ValidationReport& run, const std::string& label) {
  RunKernels k;
  for (const CaseResult& r : run.results) {
    const RingCase& c = r.ring_case;
    if (k.forward && *k.forward != c.gpu_kernel) {
      throw InputError(fmt::format("{}: cases of the {} and the {} kernel in one run", label, gpu_kernel_name(*k.forward),
                                   gpu_kernel_name(c.gpu_kernel)));
    }
    k.forward = c.gpu_kernel;
    if (!c.backward) continue;
    if (k.backward && *k.backward != c.gpu_backward_kernel) {
      throw InputError(fmt::format("{}: cases of the {} and the {} backward kernel in one run", label,
                                   gpu_backward_kernel_name(*k.backward), gpu_backward_kernel_name(c.gpu_backward_kernel)));
    }
    k.backward = c.gpu_backward_kernel;
  }
  return k;
}

}  // namespace

ValidationReport read_saved_report(const nlohmann::json& doc, const std::string& label) {
  const JsonFields f(doc, label);
  f.require_schema(kValidateSchema);
  f.allow_only({"schema", "command", "backend", "device", "placement", "warmup", "iterations", "concurrent_devices", "all_passed",
                "cases_checked", "profile", "kernel", "calibration", "topology", "errors", "errors_by_cp", "notes", "comparisons", "cases"});
  ValidationReport report;
  // Written for readers and recomputed from the cases: checked for their types only.
  (void)f.string_or("command", "");
  (void)f.boolean_or("all_passed", false);
  if (f.has("cases_checked")) (void)f.non_negative_count("cases_checked");
  // The profiles the earlier run predicted with: read as profiles, each field checked where it
  // stands (--compare predicts with its own, --calibrate fits its own).
  if (f.has("profile")) (void)model::hardware_profile_from_json(f.raw("profile"), f.where("profile"));
  if (f.has("kernel")) (void)sim::kernel_profile_from_json(f.raw("kernel"), f.where("kernel"));
  for (const char* key : {"calibration", "errors", "errors_by_cp", "topology"}) {
    if (f.has(key)) (void)f.object(key);
  }
  (void)f.string_list_or("notes", {});
  if (f.has("comparisons") && !f.raw("comparisons").is_array()) {
    throw InputError(fmt::format("{}: expected an array", f.where("comparisons")));
  }
  report.backend = f.string("backend");
  if (report.backend != "cpu" && report.backend != "mpi" && report.backend != "cuda" && report.backend != "nccl") {
    throw InputError(fmt::format("{} '{}': expected cpu, mpi, cuda or nccl", f.where("backend"), report.backend));
  }
  report.device = f.string("device");
  report.options.warmup = f.non_negative_count("warmup");
  report.options.iterations = f.positive_integer("iterations");
  // A backend runs its devices one way: the ones with a device per GPU or per process (nccl,
  // mpi) at once, cpu and cuda one after another. Files written before the field take that; a
  // file that says otherwise would be priced as a ring that never ran.
  const bool concurrent = report.backend == "nccl" || report.backend == "mpi";
  report.concurrent_devices = f.boolean_or("concurrent_devices", concurrent);
  if (report.concurrent_devices != concurrent) {
    throw InputError(fmt::format("{}: {} on backend {}, which runs its devices {}", f.where("concurrent_devices"),
                                 report.concurrent_devices ? "true" : "false", report.backend, concurrent ? "at once" : "in turn"));
  }
  if (f.has("placement")) {
    const JsonFields p(f.raw("placement"), f.where("placement"));
    p.allow_only({"nodes", "hosts", "node_of_device"});
    const std::vector<std::string> hosts = p.string_list_or("hosts", {});
    const std::vector<Count> node_of = p.count_list("node_of_device");
    std::vector<std::string> host_of_device;
    for (const Count node : node_of) {
      if (node < 0 || node >= static_cast<Count>(hosts.size())) throw InputError(fmt::format("{}: a node index beyond \"hosts\"", p.where("node_of_device")));
      host_of_device.push_back(hosts[static_cast<size_t>(node)]);
    }
    report.placement = sim::placement_from_hosts(host_of_device);
  }
  const nlohmann::json& cases = f.non_empty_array("cases");
  for (size_t i = 0; i < cases.size(); ++i) {
    report.results.push_back(result_from(JsonFields(cases[i], f.where_item("cases", i)), report.backend));
    // A run measures each case once: one listed twice (an edited file, or two runs joined into
    // one) would weigh twice in a fit. Separate runs of a case are given as separate files.
    const RingCase& c = report.results.back().ring_case;
    const auto same = std::ranges::find(report.results.begin(), report.results.end() - 1, c, &CaseResult::ring_case);
    if (same != report.results.end() - 1) {
      throw InputError(fmt::format("{}: the same case as cases[{}] ({}): a run measures each case once (give separate runs as "
                                   "separate files)",
                                   f.where_item("cases", i), same - report.results.begin(), c.label()));
    }
  }
  if (is_gpu_backend(report.backend)) (void)kernels_of(report, label);  // one run, one kernel of each pass
  return report;
}

ValidationReport merge_saved_reports(std::vector<ValidationReport> reports, const std::vector<std::string>& labels) {
  if (reports.empty() || reports.size() != labels.size()) throw std::invalid_argument("merge_saved_reports: a label per report");
  ValidationReport merged = std::move(reports.front());
  const auto placed = [](const std::optional<sim::NodePlacement>& p) {
    return p ? std::pair{p->hosts, p->node_of_gpu} : std::pair<std::vector<std::string>, std::vector<Count>>{};
  };
  for (size_t i = 1; i < reports.size(); ++i) {
    ValidationReport& r = reports[i];
    const auto differ = [&](const std::string& what, const std::string& theirs, const std::string& ours) {
      return InputError(fmt::format("{}: {} {}, {} {}: runs merged for one fit must share it", labels[i], what, theirs, labels[0], ours));
    };
    if (r.backend != merged.backend) throw differ("backend", r.backend, merged.backend);
    if (r.device != merged.device) throw differ("device", "'" + r.device + "'", "'" + merged.device + "'");
    if (r.concurrent_devices != merged.concurrent_devices) {
      const auto ran = [](bool at_once) { return std::string(at_once ? "at once" : "in turn"); };
      throw differ("ran the ring's devices", ran(r.concurrent_devices), ran(merged.concurrent_devices));
    }
    if (is_gpu_backend(r.backend)) {
      const RunKernels theirs = kernels_of(r, labels[i]), ours = kernels_of(merged, labels[0]);
      if (theirs.forward != ours.forward) {
        throw differ("ran the kernel", std::string(gpu_kernel_name(*theirs.forward)), std::string(gpu_kernel_name(*ours.forward)));
      }
      if (theirs.backward && ours.backward && theirs.backward != ours.backward) {
        throw differ("ran the backward kernel", std::string(gpu_backward_kernel_name(*theirs.backward)),
                     std::string(gpu_backward_kernel_name(*ours.backward)));
      }
    }
    if (placed(r.placement) != placed(merged.placement)) {
      const auto where = [](const std::optional<sim::NodePlacement>& p) { return p ? p->describe() : std::string("one node"); };
      throw differ("placed its ranks on", where(r.placement), where(merged.placement));
    }
    merged.options.warmup = std::min(merged.options.warmup, r.options.warmup);
    merged.options.iterations = std::min(merged.options.iterations, r.options.iterations);
    merged.results.insert(merged.results.end(), std::make_move_iterator(r.results.begin()), std::make_move_iterator(r.results.end()));
  }
  return merged;
}

}  // namespace stripesim::validate
