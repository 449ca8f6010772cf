#pragma once
// How well a kernel profile predicts measured workloads: every workload predicted through the
// simulator (ideal links, lockstep: one GPU timing each call alone is the compute-only ring),
// per (round, device) call and per layout's lockstep speedup over contiguous. Leave-one-out
// fits the profile on every other group of workloads (a measurement file, or a block-cost row)
// and scores the one held back, so every number is a prediction of something the fit never saw.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/validate/kernel_fit.hpp"

namespace stripesim::validate {

struct WorkloadPrediction {
  const MeasuredWorkload* workload = nullptr;
  std::vector<double> predicted_us;  // [round * devices + device]
  double predicted_lockstep_us = 0;
  double measured_lockstep_us = 0;
  // Over the same group's contiguous layout (absent for contiguous itself or without one).
  std::optional<double> predicted_speedup;
  std::optional<double> measured_speedup;
  bool held_out = false;
};

// Above it, equal work timed apart in two layouts of a file is reported (equal_work_drift): twice
// the 5 % a call repeats within on one GPU ("How accurate is it"), so one noisy call does not.
inline constexpr double kDriftThreshold = 1.10;

struct AccuracySummary {
  Count calls = 0;  // timed calls (measured > 0) compared
  double median_abs_call_error = 0;
  double max_abs_call_error = 0;
  Count speedups = 0;
  double mean_abs_speedup_error = 0;
  double max_abs_speedup_error = 0;
};

// The simulator's configuration for one measured workload's ring priced with `kernel`; callers
// choose the hardware, topology and sync.
[[nodiscard]] sim::SimulateConfig simulate_config(const MeasuredWorkload& workload, const sim::KernelProfile& kernel);
// Each (round, device) call's compute time in a simulation's first layout, its passes summed:
// [round * devices + device].
[[nodiscard]] std::vector<double> call_times(const sim::Simulation& simulation);

// Predicts `workloads` with `kernel` through the simulator on `hardware` (a name or file the
// catalog resolves).
[[nodiscard]] std::vector<WorkloadPrediction> predict_workloads(const std::vector<MeasuredWorkload>& workloads,
                                                                const sim::KernelProfile& kernel,
                                                                const std::string& hardware,
                                                                const model::ConfigCatalog& catalog);

// Leave one group out: for each group, fit on the others (from `base`, with `options`) and predict it.
// `calls`: measured_calls(workloads, ...), counted once by the caller.
[[nodiscard]] std::vector<WorkloadPrediction> leave_one_group_out(const std::vector<MeasuredWorkload>& workloads,
                                                                  const std::vector<MeasuredCall>& calls,
                                                                  const sim::KernelProfile& base,
                                                                  const std::string& hardware,
                                                                  const model::ConfigCatalog& catalog,
                                                                  const FitOptions& options = {});

// What the measurements leave to any model that gives equal work an equal time: the calls of one
// group with the same work (query tile profile, call shape and pass) form a class, and each is
// "predicted" by its class's median measured time. Identical calls timed apart (clock drift, a
// busy neighbour) put this floor under every model's error; a model near it has nothing left to
// learn from these files.
// `calls`: measured_calls(workloads, ...).
[[nodiscard]] std::vector<WorkloadPrediction> consistency_floor(const std::vector<MeasuredWorkload>& workloads,
                                                                const std::vector<MeasuredCall>& calls);

// Two layouts of one file that timed calls of equal work apart: over the equal-work classes
// both time (consistency_floor's), the median ratio of the slower's median time to the faster's.
struct LayoutDrift {
  std::string group;
  std::string slow_layout;
  std::string fast_layout;
  double ratio = 1;
  Count classes = 0;
};

// Per group, its two layouts whose equal-work calls lie furthest apart, where above `threshold`:
// no kernel model can tell them apart, so the file's layouts were timed in different states of
// the GPU or host, and their speedups carry it. `calls`: measured_calls(workloads, ...).
[[nodiscard]] std::vector<LayoutDrift> equal_work_drift(const std::vector<MeasuredWorkload>& workloads,
                                                        const std::vector<MeasuredCall>& calls,
                                                        double threshold = kDriftThreshold);

[[nodiscard]] AccuracySummary summarize_accuracy(const std::vector<WorkloadPrediction>& predictions);

// The median over a workload's timed calls (measured and predicted above 0) of measured /
// predicted; absent when none is. A layout whose calls all run some percent off while the other
// layouts of its file do not was either timed in another state of the GPU or host (clock, power,
// a compile running beside it) or makes a kind of call the model misses; calls of equal work in
// two layouts (the consistency floor's classes) tell the two apart.
[[nodiscard]] std::optional<double> median_measured_over_predicted(const WorkloadPrediction& prediction);

// Its printers (JSON, Markdown): output/accuracy_printers.hpp.

}  // namespace stripesim::validate
