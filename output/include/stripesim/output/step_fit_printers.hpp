#pragma once
// A step fit (sim/step_sweep.hpp: the element-wise and partial-tile costs fitted to measured
// speedups) as a table and as JSON (stripesim.step-fit/1).
#include <nlohmann/json.hpp>
#include <string>

#include "stripesim/output/output_format.hpp"
#include "stripesim/sim/step_sweep.hpp"

namespace stripesim::output {

[[nodiscard]] nlohmann::ordered_json to_json(const sim::StepFit& fit);
[[nodiscard]] std::string step_fit_table(const sim::StepFit& fit);

// What render offers for it, in the order --format lists them (the command offers exactly these).
inline constexpr OutputFormat kStepFitFormats[] = {OutputFormat::table, OutputFormat::json};
// table or json.
[[nodiscard]] std::string render(const sim::StepFit& fit, OutputFormat format);

}  // namespace stripesim::output
