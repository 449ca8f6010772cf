#pragma once
// How well a kernel profile predicts measured workloads (validate/measurement_accuracy.hpp) as
// JSON (stripesim.kernel-accuracy/1, reports/schema/kernel-accuracy.schema.json) and as a
// Markdown report.
#include <nlohmann/json.hpp>
#include <string>

#include "stripesim/validate/measurement_accuracy.hpp"

namespace stripesim::output {

// The fit, every workload and the summary, with `comparisons` in the shape the report's
// predicted-against-measured figure reads, and the consistency floor's summary.
[[nodiscard]] nlohmann::ordered_json to_json(const validate::KernelAccuracy& accuracy);
[[nodiscard]] std::string to_markdown(const validate::KernelAccuracy& accuracy);

}  // namespace stripesim::output
