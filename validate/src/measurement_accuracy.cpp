#include "stripesim/validate/measurement_accuracy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <iomanip>
#include <sstream>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"

namespace stripesim::validate {

bool fitted_on(const sim::KernelProfile& profile, const std::string& path) {
  // --calibrate writes the command that fitted the profile into sources.costs ("fitted by:
  // stripesim validate --calibrate ... --measurements DIR/FILE ..."), its paths as typed where it
  // ran. A file is the one named when that path, whole, ends the file's own full path: the same
  // file from another folder, not merely a file of the same name (sdpa-retimed/ beside sdpa/).
  if (!profile.sources.is_object() || !profile.sources.contains("costs") || !profile.sources["costs"].is_string()) return false;
  const std::string& costs = profile.sources["costs"].get_ref<const std::string&>();
  if (!costs.starts_with("fitted by: ")) return false;
  const std::vector<std::string> file = path_components(model::file_identity(path));
  if (file.empty()) return false;
  std::istringstream words(costs);
  std::string flag, word;
  // Words as the recorded command quotes them: a path a shell would split stands in '...'.
  while (words >> std::quoted(word, '\'')) {
    if (flag == "--measurements" || flag == "--block-costs") {
      const std::vector<std::string> named = path_components(word);
      if (!named.empty() && named.size() <= file.size() && std::equal(named.rbegin(), named.rend(), file.rbegin())) return true;
    }
    flag = word;
  }
  return false;
}

MeasurementAccuracyPlan plan_measurement_accuracy(const MeasurementAccuracyRequest& request,
                                                  const model::ConfigCatalog& catalog) {
  MeasurementAccuracyPlan plan;
  plan.request = request;
  std::vector<std::string> files = request.measurements;
  files.insert(files.end(), request.block_costs.begin(), request.block_costs.end());
  const std::vector<std::string> labels = file_labels(files);
  std::vector<MeasuredWorkload> workloads;
  std::vector<size_t> file_of;  // each workload's index in `files`
  for (size_t i = 0; i < request.measurements.size(); ++i) {
    for (auto& w : read_measurements(files[i], labels[i])) {
      workloads.push_back(std::move(w));
      file_of.push_back(i);
    }
  }
  for (size_t i = request.measurements.size(); i < files.size(); ++i) {
    for (auto& w : read_block_costs(files[i], request.block_costs_kernel, labels[i])) {
      workloads.push_back(std::move(w));
      file_of.push_back(i);
    }
  }
  if (workloads.empty()) throw model::InputError("--measurements, --block-costs: the files hold no workload");
  const std::optional<model::HardwareProfile> device =
      request.hardware.empty() ? catalog.hardware_for_device(workloads.front().device) : catalog.hardware(request.hardware);
  if (!device) {
    throw model::InputError(fmt::format("--hardware: needed, the files' device '{}' is not one stripesim knows",
                                        workloads.front().device));
  }
  plan.hardware = *device;
  plan.base = sim::load_kernel_profile(request.kernel, catalog, plan.hardware);
  for (const size_t i : file_of) plan.in_sample.push_back(fitted_on(plan.base, files[i]));
  plan.calls = measured_calls(workloads, plan.hardware, plan.base);  // checks every file before fitting
  // A file's 0 is a call that did not run, which a call with work never is (a file without
  // active_blocks is held to stripesim's own count): it would score as infinitely fast. (The
  // validator's own runs leave untimed calls at 0; files time every call.)
  for (const MeasuredCall& call : plan.calls) {
    if (call.measured_us == 0 && has_work(call)) {
      throw model::InputError(fmt::format("{}: round {} device {} is 0 (a call that did not run), but stripesim counts active tiles "
                                          "there for this layout, mask and tile; time it",
                                          workloads[call.workload].us_where, call.round, call.device));
    }
  }
  for (const auto& w : workloads) {
    if (std::find(plan.groups.begin(), plan.groups.end(), w.group) == plan.groups.end()) plan.groups.push_back(w.group);
  }
  if (request.no_fit && !request.compare) throw model::InputError("--no-fit: only with --compare (--calibrate fits)");
  if (request.no_fit && request.fit.block_order) {
    throw model::InputError("--block-order, --no-fit: the order is a choice of the fit, and --no-fit fits nothing");
  }
  if (request.compare && !request.no_fit && plan.groups.size() < 2) {
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
  out.floor = summarize_accuracy(consistency_floor(workloads, plan.calls));
  out.drift = equal_work_drift(workloads, plan.calls);
  if (request.no_fit) {
    // The profile as it stands, scored on timings it was never fitted on: nothing is fitted.
    out.method = AccuracyMethod::profile_as_given;
    out.fit.profile = plan.base;
    out.predictions = predict_workloads(workloads, plan.base, plan.hardware.name, catalog);
    for (size_t i = 0; i < out.predictions.size(); ++i) out.predictions[i].held_out = !plan.in_sample[i];
    return out;
  }
  // The fit on everything is the profile --calibrate writes; --compare also reports it beside the
  // leave-one-out scores.
  out.fit = fit_kernel(plan.calls, plan.base, plan.hardware, request.fit);
  out.fit.profile.hardware = plan.hardware.name;
  out.fit.profile.sources["costs"] = "fitted by: " + request.command;
  out.fit.profile.fit["files"] = request.measurements.size() + request.block_costs.size();
  out.fit.profile.fit["groups"] = plan.groups.size();
  out.method = request.compare ? AccuracyMethod::leave_one_group_out : AccuracyMethod::fit_on_everything;
  out.predictions = request.compare ? leave_one_group_out(workloads, plan.calls, plan.base, plan.hardware.name, catalog, request.fit)
                                    : predict_workloads(workloads, out.fit.profile, plan.hardware.name, catalog);
  return out;
}

const char* describe(AccuracyMethod method) {
  switch (method) {
    case AccuracyMethod::fit_on_everything: return "every workload predicted by the profile fitted on all of them";
    case AccuracyMethod::leave_one_group_out:
      return "leave one group out: each file (or block-cost row's call of one mask and pass) predicted by a profile fitted "
             "on all the others, started cold (from tile counts, not from --kernel's costs; a pass the others do not time, "
             "or a forward they time only inside forward+backward sums, keeps --kernel's costs)";
    case AccuracyMethod::profile_as_given:
      return "the kernel profile as given (--no-fit): nothing fitted; a workload whose file the profile's own fit "
             "command names (sources.costs) is in-sample, the others held out";
  }
  return "";
}

}  // namespace stripesim::validate
