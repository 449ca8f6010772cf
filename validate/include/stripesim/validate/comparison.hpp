#pragma once
// Predicted against measured: each case of a validation matrix predicted with the simulator's
// kernel cost and ring model from a (calibrated) hardware profile, and set beside what the
// backend measured, per (round, device), per round and in total.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/hardware_profile.hpp"
#include "stripesim/validate/calibration.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate {

inline constexpr const char* kValidateSchema = "stripesim.validate/1";

struct CasePrediction {
  std::vector<double> kernel_us;  // [round * devices + device]
  double handoff_us = 0;          // one hop
  double total_us = 0;
};

// `parallel_devices`: every device is a real GPU working at once (nccl), so the total is the
// simulated ring's makespan. Otherwise one processor runs the N virtual devices one after
// another (cpu, cuda) and the total is the sum of every kernel and hand-off.
[[nodiscard]] CasePrediction predict_case(const CaseResult& result, const model::HardwareProfile& profile,
                                          const sim::KernelProfile& kernel, bool parallel_devices);

enum class CaseRole { checked, calibration, held_out };

struct CaseComparison {
  CaseRole role = CaseRole::checked;
  CasePrediction prediction;
  double measured_total_us = 0;
  double total_error = 0;  // (predicted - measured) / measured
  // One hop, set beside prediction.handoff_us: the median of the case's timed hand-offs (0 when
  // none was timed). The hand-off fit (Calibration's latency and bandwidth) is judged on it.
  double handoff_measured_us = 0;
  std::vector<double> round_predicted_us;  // max over devices, per round
  std::vector<double> round_measured_us;
};

[[nodiscard]] CaseComparison compare_case(const CaseResult& result, const CasePrediction& prediction, CaseRole role);

struct ErrorSummary {
  Count cases = 0;
  double median_abs_total_error = 0;
  double max_abs_total_error = 0;
  Count kernels = 0;  // (round, device) kernels compared
  double median_abs_kernel_error = 0;
  double max_abs_kernel_error = 0;
};

[[nodiscard]] ErrorSummary summarize_errors(const std::vector<CaseResult>& results,
                                            const std::vector<CaseComparison>& comparisons, CaseRole role);

// The whole validator run, as written to JSON and Markdown.
struct ValidationReport {
  std::string command;  // the exact command line
  std::string backend;
  std::string device;
  RunOptions options;
  std::vector<CaseResult> results;
  std::optional<Calibration> calibration;          // --calibrate, --compare without --profile
  std::optional<model::HardwareProfile> profile;   // the profile predictions used
  std::optional<sim::KernelProfile> kernel;        // the kernel profile predictions used
  std::vector<CaseComparison> comparisons;         // empty without predictions
};

[[nodiscard]] nlohmann::ordered_json to_json(const ValidationReport& report, bool rounds);
[[nodiscard]] std::string to_markdown(const ValidationReport& report);

}  // namespace stripesim::validate
