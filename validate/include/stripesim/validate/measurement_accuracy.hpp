#pragma once
// `stripesim validate --measurements FILE... --block-costs FILE...`: a kernel profile fitted on
// (--calibrate) or scored against (--compare, each file left out in turn) timings measured
// outside stripesim; nothing runs on a backend. The plan reads and checks every file and finds
// the hardware and the kernel the fit starts from; the run fits and predicts.
#include <memory>
#include <string>
#include <vector>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/validate/kernel_accuracy.hpp"
#include "stripesim/validate/kernel_fit.hpp"
#include "stripesim/validate/kernel_measurements.hpp"

namespace stripesim::validate {

struct MeasurementAccuracyRequest {
  std::vector<std::string> measurements;  // kernel timing files (kernel_measurements.hpp)
  std::vector<std::string> block_costs;   // block-cost CSVs
  std::string block_costs_kernel;         // their column prefix (sdpa, flex, ...)
  std::string hardware;                   // a name or JSON; empty: the profile claiming the files' device
  std::string kernel;                     // the profile the fit starts from; empty: the hardware's default
  bool compare = false;                   // score each file with a fit on the others (else on everything)
  bool no_fit = false;                    // with compare: every file predicted by the starting profile as given
  FitOptions fit;                         // what is known of the kernel (--block-order)
  std::string command;                    // the command line, recorded in the fitted profile and the report
};

struct MeasurementAccuracyPlan {
  MeasurementAccuracyRequest request;
  // Shared with the result, whose predictions point into it.
  std::shared_ptr<const std::vector<MeasuredWorkload>> workloads;
  model::HardwareProfile hardware;
  sim::KernelProfile base;
  std::vector<MeasuredCall> calls;  // every timed call, checked against the work model
  std::vector<std::string> groups;  // the files (and block-cost rows) in order: what --compare leaves out
  std::vector<bool> in_sample;      // per workload: whether `base` was fitted on its file (fitted_on)
};

// How the profile that predicted each workload came to be.
enum class AccuracyMethod {
  fit_on_everything,    // --calibrate: the profile fitted on every file
  leave_one_group_out,  // --compare: each file (or block-cost row) by a profile fitted on all the others
  profile_as_given,     // --compare --no-fit: every file by the starting profile, fitted on none of them
};
[[nodiscard]] const char* describe(AccuracyMethod method);

// The fit on everything (the profile --calibrate writes, sourced and counted; none with --no-fit)
// and how well the profile, or with --compare each leave-one-out fit, predicts every workload,
// beside the consistency floor of the same files.
struct KernelAccuracy {
  std::string command;
  AccuracyMethod method = AccuracyMethod::fit_on_everything;
  std::shared_ptr<const std::vector<MeasuredWorkload>> workloads;
  KernelFit fit;
  std::vector<WorkloadPrediction> predictions;  // point into `workloads`
  AccuracySummary floor;
  std::vector<LayoutDrift> drift;  // equal_work_drift of the workloads
};

// Whether `profile` was fitted on the measurement or block-cost file at `path`: whether the
// command that fitted it, which --calibrate records in sources.costs, names that file. A --no-fit
// score on such a file is in-sample, not held out.
[[nodiscard]] bool fitted_on(const sim::KernelProfile& profile, const std::string& path);

// Throws model::InputError for a file that does not read, a device no profile claims without
// --hardware, a call the work model does not recognise, or --compare (without --no-fit) over
// fewer than two groups.
[[nodiscard]] MeasurementAccuracyPlan plan_measurement_accuracy(const MeasurementAccuracyRequest& request,
                                                                const model::ConfigCatalog& catalog);
[[nodiscard]] KernelAccuracy run_measurement_accuracy(const MeasurementAccuracyPlan& plan, const model::ConfigCatalog& catalog);

}  // namespace stripesim::validate
