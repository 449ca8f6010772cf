#include "calibrate_step_command.hpp"

#include <fmt/format.h>

#include <memory>

#include "config_dir.hpp"
#include "output_file.hpp"
#include "output_format.hpp"
#include "run_mode.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/workflows/experiment_files.hpp"
#include "stripesim/output/step_fit_printers.hpp"
#include "stripesim/sim/step_sweep.hpp"

namespace stripesim::cli {
namespace {

struct CalibrateStepOptions {
  std::string experiment;
  std::string hardware_out;
  std::string kernel_out;
  std::string format = "table";
  std::string output;
};

constexpr const char* kCalibrateStepExamples = R"(Examples:
  stripesim calibrate-step --experiment configs/experiments/paper-measured.json
      fit the A100's element-wise cost and the blockwise kernel's partial-tile cost to the paper's
      17 measured speedups (1B, mesh 1 x N); prints the fit and each row, held out by N
  stripesim calibrate-step --experiment configs/experiments/paper-measured.json \
      --hardware-out configs/hardware/a100-80gb.json --kernel-out configs/kernels/a100/blockwise.json
      the same, writing the fitted profiles (how the shipped ones were made))";

}  // namespace

std::function<void()> register_calibrate_step_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<CalibrateStepOptions>();
  CalibrateStepOptions& o = *options;
  CLI::App* cmd = app.add_subcommand(
      "calibrate-step", "Fit the element-wise and partial-tile costs of a training step to measured speedups");
  cmd->footer(kCalibrateStepExamples);
  cmd->add_option("--experiment", o.experiment, "Step sweep experiment with a \"measured\" file (configs/experiments/)")
      ->required();
  cmd->add_option("--hardware-out", o.hardware_out, "Write the hardware profile with the fitted element-wise cost to FILE");
  cmd->add_option("--kernel-out", o.kernel_out, "Write the kernel profile with the fitted partial-tile costs to FILE");
  add_format_option(cmd, o.format, output::kStepFitFormats, "Output format");
  cmd->add_option("--output,-o", o.output, "Write to FILE instead of standard output");
  return [cmd, options, mode] {
    if (!cmd->parsed()) return;
    const CalibrateStepOptions& opts = *options;
    const std::string label = "--experiment " + opts.experiment;
    const nlohmann::json experiment = model::with_files_beside(model::read_json_file(opts.experiment, label), opts.experiment);
    if (!sim::is_step_sweep(experiment)) throw model::InputError(label + ": has no \"step\" object (a step sweep experiment)");
    const sim::StepSweepSpec spec = sim::step_sweep_spec_from_json(experiment, label);
    if (spec.measured.empty()) throw model::InputError(label + ": names no \"measured\" file to fit to");
    const model::ConfigCatalog catalog(config_dir());
    const sim::StepFitPlan plan = sim::plan_step_fit(spec, catalog);
    if (mode == RunMode::parse_only) return;
    sim::StepFit fit = sim::fit_step(plan, catalog);
    const std::string held =
        fit.held_out_mean_abs_error
            ? fmt::format("{:.3f} with each sequence-parallel degree held out", *fit.held_out_mean_abs_error)
            : std::string("one sequence-parallel degree: nothing held out");
    const std::string how = fmt::format("{} --experiment {} ({} measured speedups, mean absolute error {:.3f}, {})",
                                        sim::kElementwiseFitSource, opts.experiment, fit.rows.size(), fit.mean_abs_error, held);
    fit.hardware.sources["elementwise_bytes_per_dmodel"] = how;
    fit.kernel.sources["partial_tile_us"] = fmt::format("{:.2f} x the full tile, forward and backward; {}", fit.partial_ratio, how);
    // All or nothing: a failed write leaves neither a profile nor a report claiming a fit.
    OutputFiles outputs;
    if (!opts.hardware_out.empty()) outputs.add(model::to_json(fit.hardware).dump(2) + "\n", opts.hardware_out, "--hardware-out", OutputKind::hardware_profile);
    if (!opts.kernel_out.empty()) outputs.add(sim::to_json(fit.kernel).dump(2) + "\n", opts.kernel_out, "--kernel-out", OutputKind::kernel_profile);
    outputs.add(output::render(fit, output_format(opts.format)), opts.output);
    outputs.commit();
  };
}

}  // namespace stripesim::cli
