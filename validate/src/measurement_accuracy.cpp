#include "stripesim/validate/measurement_accuracy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::validate {

MeasurementAccuracyPlan plan_measurement_accuracy(const MeasurementAccuracyRequest& request,
                                                  const model::ConfigCatalog& catalog) {
  MeasurementAccuracyPlan plan;
  plan.request = request;
  std::vector<MeasuredWorkload> workloads;
  for (const auto& file : request.measurements) {
    for (auto& w : read_measurements(file)) workloads.push_back(std::move(w));
  }
  for (const auto& file : request.block_costs) {
    for (auto& w : read_block_costs(file, request.block_costs_kernel)) workloads.push_back(std::move(w));
  }
  if (workloads.empty()) throw model::InputError("--measurements, --block-costs: the files hold no workload");
  const std::optional<model::HardwareProfile> device =
      request.hardware.empty() ? catalog.hardware_for_device(workloads.front().device) : catalog.hardware(request.hardware);
  if (!device) {
    throw model::InputError(fmt::format("--hardware: needed, the files' device '{}' is not one stripesim knows",
                                        workloads.front().device));
  }
  plan.hardware = *device;
  plan.base = sim::load_kernel_profile(request.kernel, catalog.root(), plan.hardware);
  plan.calls = measured_calls(workloads, plan.hardware, plan.base);  // checks every file before fitting
  for (const auto& w : workloads) {
    if (std::find(plan.groups.begin(), plan.groups.end(), w.group) == plan.groups.end()) plan.groups.push_back(w.group);
  }
  if (request.compare && plan.groups.size() < 2) {
    throw model::InputError("--compare: needs workloads from at least two files to leave one out");
  }
  plan.workloads = std::make_shared<const std::vector<MeasuredWorkload>>(std::move(workloads));
  return plan;
}

KernelAccuracy run_measurement_accuracy(const MeasurementAccuracyPlan& plan, const model::ConfigCatalog& catalog) {
  const MeasurementAccuracyRequest& request = plan.request;
  const std::vector<MeasuredWorkload>& workloads = *plan.workloads;
  KernelAccuracy out;
  out.command = request.command;
  out.workloads = plan.workloads;
  // The fit on everything is the profile --calibrate writes; --compare also reports it beside the
  // leave-one-out scores.
  out.fit = fit_kernel(plan.calls, plan.base, plan.hardware);
  out.fit.profile.hardware = plan.hardware.name;
  out.fit.profile.sources["costs"] = "fitted by: " + request.command;
  out.fit.profile.fit["files"] = request.measurements.size() + request.block_costs.size();
  out.fit.profile.fit["groups"] = plan.groups.size();
  out.predictions = request.compare ? leave_one_group_out(workloads, plan.calls, plan.base, plan.hardware.name, catalog)
                                    : predict_workloads(workloads, out.fit.profile, plan.hardware.name, catalog);
  out.floor = summarize_accuracy(consistency_floor(workloads, plan.calls));
  return out;
}

}  // namespace stripesim::validate
