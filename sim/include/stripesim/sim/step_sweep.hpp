#pragma once
// End-to-end training speedups over a grid: a TMS sweep's points (hardware x model x mesh x
// sequence length) with each point's training step simulated (simulate --scope step) for
// contiguous, striped and zigzag, beside measured speedups where a file gives them; and the fit
// of what a step prices that no kernel measurement fixes (the element-wise work's cost beside
// the hardware's matmul efficiency, the kernel's partial-tile cost) to those measured speedups.
//
// An experiment file is a sweep experiment (configs/experiments/paper-tms.json's fields) plus
//   "step": the simulate fields every point shares (kernel, sync, recompute, ...; the point sets
//           hardware, model, model_parallel, devices and seq_len; the top-level "tiling", when
//           given, is the step's too, and must be its kernel's);
//   "measured": a CSV of measured speedups, its path relative to the experiment file, with the
//           columns hardware,model,model_parallel,sequence_parallel,seq_len,
//           measured_speedup_striped_over_contiguous (names compared case-insensitively).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/schemas.hpp"
#include "stripesim/model/workflows/sweep.hpp"
#include "stripesim/sim/simulation.hpp"

namespace stripesim::sim {

using model::kStepFitSchema;

struct MeasuredSpeedup {
  std::string hardware;  // as the file writes it ("A100")
  std::string model;     // ("1B")
  Count model_parallel = 1;
  Count devices = 1;
  Count seq_len = 0;
  double speedup = 0;  // striped over contiguous, end to end
  int line = 0;        // in the file, for messages about the row
};

// Throws InputError naming the file (as `label` names it, by default "measured speedups PATH")
// and line for a missing file, a wrong header or a bad value. A point given twice is refused where
// the sweep or the fit resolves the rows' names (one point may be spelled two ways).
[[nodiscard]] std::vector<MeasuredSpeedup> read_measured_speedups(const std::string& path, std::string label = "");

struct StepSweepSpec {
  model::SweepSpec grid;
  SimulateConfig step;          // shared by every point
  // The step's own fields (kernel, sync, ...) as the experiment names them ("step.kernel"): an
  // error about one names that field, not a flag the sweep does not have.
  model::InputOrigins step_origins;
  std::string measured;         // resolved path; empty: none
  std::string measured_label;   // how errors name it: the experiment's field "measured"
};

// `doc`: the experiment with its files read from its folder (model::with_files_beside), the
// "measured" file among them.
[[nodiscard]] StepSweepSpec step_sweep_spec_from_json(const nlohmann::json& doc, const std::string& label);
// True when an experiment document asks for step columns.
[[nodiscard]] bool is_step_sweep(const nlohmann::json& doc);

// Every input checked, nothing counted or simulated: the TMS sweep planned (its columns checked
// against the step's), each point's step planned, the measured file read and matched to the
// points. Parse-only mode stops here.
struct StepSweepPlan {
  model::SweepPlan grid;                       // every TMS column: the step's columns join them
  std::vector<SimulationPlan> steps;           // one per point
  std::vector<std::optional<double>> measured;  // one per point: the measured speedup, if any
  std::vector<std::string> columns;            // spec.grid.columns
};
[[nodiscard]] StepSweepPlan plan_step_sweep(const StepSweepSpec& spec, const model::ConfigCatalog& catalog);

// The sweep's rows with, per point, step_time_us_contiguous, step_speedup (striped),
// step_speedup_zigzag, measured and error (predicted - measured; null where nothing was measured),
// then spec.grid.columns applied.
[[nodiscard]] std::vector<nlohmann::ordered_json> run_step_sweep(const StepSweepPlan& plan);

struct StepFitRow {
  MeasuredSpeedup measured;
  double predicted = 0;
  // Predicted by the fit without this row's sequence-parallel degree; none where the rows hold one
  // degree only (nothing left to fit on).
  std::optional<double> held_out;
};

struct StepFit {
  model::HardwareProfile hardware;  // with the fitted elementwise_bytes_per_dmodel
  KernelProfile kernel;             // with the fitted partial-tile costs
  double partial_ratio = 1;         // partial tile / full tile, forward and backward
  double mean_abs_error = 0;
  double worst_abs_error = 0;
  // Leaving each sequence-parallel degree out in turn; none with one degree.
  std::optional<double> held_out_mean_abs_error;
  std::optional<double> held_out_worst_abs_error;
  std::vector<StepFitRow> rows;
};

// Fits the measured hardware's elementwise_bytes_per_dmodel (its matmul_efficiency stays as the
// profile gives it: rows of one model cannot tell matmul time from element-wise time, rows of
// several would) and the step kernel's partial/full tile ratio (the same in forward and
// backward) to the measured speedups, minimising their mean absolute error. Every measured row
// must name one hardware, found in the grid's catalog.
//
// The plan reads the measured file, checks that its rows name one hardware that has a
// matmul_efficiency, loads the step's kernel and plans every row's simulation; the fit simulates
// each row at every candidate ratio and searches.
struct StepFitPlan {
  StepSweepSpec spec;
  std::vector<MeasuredSpeedup> measured;
  model::HardwareProfile hardware;
  KernelProfile kernel;
};
[[nodiscard]] StepFitPlan plan_step_fit(const StepSweepSpec& spec, const model::ConfigCatalog& catalog);
[[nodiscard]] StepFit fit_step(const StepFitPlan& plan, const model::ConfigCatalog& catalog);
// Its printers (table, JSON): output/step_fit_printers.hpp.

}  // namespace stripesim::sim
