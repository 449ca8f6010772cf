#include "stripesim/output/step_fit_printers.hpp"

#include <fmt/format.h>

#include "stripesim/output/rows.hpp"

namespace stripesim::output {

nlohmann::ordered_json to_json(const sim::StepFit& fit) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : fit.rows) {
    rows.push_back({{"hardware", r.measured.hardware},
                    {"model", r.measured.model},
                    {"model_parallel", r.measured.model_parallel},
                    {"devices", r.measured.devices},
                    {"seq_len", r.measured.seq_len},
                    {"measured", r.measured.speedup},
                    {"predicted", r.predicted},
                    {"held_out", optional_json(r.held_out)}});
  }
  return {{"schema", sim::kStepFitSchema},
          {"hardware", fit.hardware.name},
          {"kernel", fit.kernel.name},
          {"matmul_efficiency", *fit.hardware.matmul_efficiency},
          {"elementwise_bytes_per_dmodel", fit.hardware.elementwise_bytes_per_dmodel},
          {"partial_ratio", fit.partial_ratio},
          {"mean_abs_error", fit.mean_abs_error},
          {"worst_abs_error", fit.worst_abs_error},
          {"held_out_mean_abs_error", optional_json(fit.held_out_mean_abs_error)},
          {"held_out_worst_abs_error", optional_json(fit.held_out_worst_abs_error)},
          {"rows", std::move(rows)}};
}

std::string step_fit_table(const sim::StepFit& fit) {
  std::string out = fmt::format(
      "step fit on {} measured speedups: {} element-wise work {:.4g} B per token per d_model (matmuls at {:.3g} of the "
      "peak, as given), kernel {} partial tile = {:.2f} x full\n"
      "mean absolute error {:.3f}, worst {:.3f}; {}\n\n",
      fit.rows.size(), fit.hardware.name, fit.hardware.elementwise_bytes_per_dmodel, *fit.hardware.matmul_efficiency,
      fit.kernel.name, fit.partial_ratio, fit.mean_abs_error, fit.worst_abs_error,
      fit.held_out_mean_abs_error
          ? fmt::format("each sequence-parallel degree held out in turn: {:.3f}, worst {:.3f}", *fit.held_out_mean_abs_error,
                        *fit.held_out_worst_abs_error)
          : std::string("nothing held out: the rows hold one sequence-parallel degree, so no fit leaves it out "
                        "(measure a second degree to score the fit on one it was not fitted on)"));
  out += fmt::format("{:<8} {:<6} {:>3} {:>3} {:>8} {:>9} {:>10} {:>9}\n", "hardware", "model", "M", "N", "n",
                     "measured", "predicted", "held out");
  for (const auto& r : fit.rows) {
    out += fmt::format("{:<8} {:<6} {:>3} {:>3} {:>8} {:>9.3f} {:>10.3f} {:>9}\n", r.measured.hardware, r.measured.model,
                       r.measured.model_parallel, r.measured.devices, r.measured.seq_len, r.measured.speedup, r.predicted,
                       r.held_out ? fmt::format("{:.3f}", *r.held_out) : std::string("-"));
  }
  return out;
}

std::string render(const sim::StepFit& fit, OutputFormat format) {
  switch (format) {
    case OutputFormat::table: return step_fit_table(fit);
    case OutputFormat::json: return to_json(fit).dump(2) + "\n";
    case OutputFormat::csv:
    case OutputFormat::markdown: break;
  }
  throw not_offered(format);
}

}  // namespace stripesim::output
