#pragma once
// Calibration: the simulator's kernel profile and link parameters fitted to what a backend
// measured. The kernel part is the one fit every measurement goes through (kernel_fit.hpp: the
// kernel time model's own features, so the fit tunes exactly the model the simulator runs); a
// hand-off is latency + bytes / bandwidth, fitted by the same non-negative least squares.
#include <string>
#include <vector>

#include "stripesim/model/hardware_profile.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/validate/kernel_measurements.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate {

struct HandoffSample {
  double bytes = 0;
  double measured_us = 0;
};

// A validator case as a measured workload (its kernel medians per (round, device), forward).
[[nodiscard]] MeasuredWorkload measured_workload(const CaseResult& result);
// Every hand-off, as medians.
[[nodiscard]] std::vector<HandoffSample> handoff_samples(const CaseResult& result);

struct Calibration {
  model::HardwareProfile profile;  // the base profile with the link parameters replaced
  sim::KernelProfile kernel;       // the base kernel with its costs fitted
  double hop_latency_us = 0;       // one hand-off's fixed cost
  Count kernel_samples = 0;
  Count handoff_samples = 0;
  double fit_median_abs_error = 0;  // of the kernel samples it was fitted on
};

// Fits on `cases` (at least one launched kernel); `device` names the measured device in the
// profiles. The hardware's SM count stays as it is (it comes from the hardware, not timings).
[[nodiscard]] Calibration calibrate(const std::vector<const CaseResult*>& cases, model::HardwareProfile base,
                                    sim::KernelProfile kernel, const std::string& device);

// Least squares with non-negative coefficients, rows weighted by `weights`: the small dense solver
// both fits use (exposed for tests).
[[nodiscard]] std::vector<double> fit_non_negative(const std::vector<std::vector<double>>& rows,
                                                   const std::vector<double>& targets, const std::vector<double>& weights);

}  // namespace stripesim::validate
