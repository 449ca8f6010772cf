#pragma once
// How well a kernel profile predicts measured workloads (validate/measurement_accuracy.hpp) as
// JSON (stripesim.kernel-accuracy/1, reports/schema/kernel-accuracy.schema.json) and as a
// Markdown report.
#include <nlohmann/json.hpp>
#include <string>

#include "stripesim/output/output_format.hpp"
#include "stripesim/validate/measurement_accuracy.hpp"

namespace stripesim::output {

// The fit, every workload and the summary, with `comparisons` in the shape the report's
// predicted-against-measured figure reads, and the consistency floor's summary.
[[nodiscard]] nlohmann::ordered_json to_json(const validate::KernelAccuracy& accuracy);
[[nodiscard]] std::string to_markdown(const validate::KernelAccuracy& accuracy);

// What render offers for it, in the order --format lists them: validate's own formats, since one
// --format serves the measured files and the backends' runs.
inline constexpr OutputFormat kAccuracyFormats[] = {OutputFormat::table, OutputFormat::json, OutputFormat::markdown};
// json, or markdown (also for table: no table says more than the Markdown a person reads).
[[nodiscard]] std::string render(const validate::KernelAccuracy& accuracy, OutputFormat format);

}  // namespace stripesim::output
