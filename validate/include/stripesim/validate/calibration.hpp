#pragma once
// Calibration: the simulator's kernel and link parameters fitted to what a backend measured.
// The kernel cost is sim::KernelCost's, so the fit tunes exactly the model the simulator runs:
//   kernel = launch + max(waves * mean block, longest block)
//   mean block = (streams * (active + partial * extra) * tile_us + blocks * block_overhead) / blocks
//   tile_us = tile FLOPs * us_per_flop, us_per_flop = slots / (peak * efficiency)
// It is linear in (launch, us_per_flop, us_per_flop * extra, block_overhead) once the branch of
// the max is fixed, so the fit alternates a weighted least-squares solve (relative residuals:
// the error we report is relative) with re-picking each sample's branch. A hand-off is
// latency + bytes / bandwidth, fitted the same way.
#include <string>
#include <vector>

#include "stripesim/model/hardware_profile.hpp"
#include "stripesim/sim/kernel_cost.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate {

struct KernelSample {
  sim::RoundTiles tiles;
  Count query_tiles = 0;  // per head
  Count streams = 0;      // heads
  double tile_flops = 0;  // 4 * TQ * TK * head_dim
  double measured_us = 0;
};

struct HandoffSample {
  double bytes = 0;
  double measured_us = 0;
};

// Every (round, device) the backend launched a kernel for, and every hand-off, as medians.
[[nodiscard]] std::vector<KernelSample> kernel_samples(const CaseResult& result);
[[nodiscard]] std::vector<HandoffSample> handoff_samples(const CaseResult& result);

struct Calibration {
  model::HardwareProfile profile;  // the base profile with kernel and link parameters replaced
  double us_per_flop_per_slot = 0;
  double hop_latency_us = 0;       // one hand-off's fixed cost
  Count kernel_samples = 0;
  Count handoff_samples = 0;
  double fit_median_abs_error = 0;  // of the kernel samples it was fitted on
};

// Fits on `cases` (at least one kernel sample) for precision `precision` of the base profile's
// peak table; `device` names the measured device in the profile. The base profile's SM count
// and blocks per SM stay as they are (they come from the hardware, not from timings).
[[nodiscard]] Calibration calibrate(const std::vector<const CaseResult*>& cases, model::HardwareProfile base,
                                    Precision precision, const std::string& device);

// Least squares with non-negative coefficients, rows weighted by `weights`: the small dense solver
// both fits use (exposed for tests).
[[nodiscard]] std::vector<double> fit_non_negative(const std::vector<std::vector<double>>& rows,
                                                   const std::vector<double>& targets, const std::vector<double>& weights);

}  // namespace stripesim::validate
