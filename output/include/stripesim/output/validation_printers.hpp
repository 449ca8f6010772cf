#pragma once
// A validator run (validate/comparison.hpp: every case's check and timings, predicted against
// measured) as a table, as JSON (stripesim.validate/1, reports/schema/validate.schema.json) and
// as a Markdown report.
#include <nlohmann/json.hpp>
#include <string>

#include "stripesim/output/output_format.hpp"
#include "stripesim/validate/comparison.hpp"

namespace stripesim::output {

// `rounds`: every (round, device) kernel time beside the case's summary.
[[nodiscard]] nlohmann::ordered_json to_json(const validate::ValidationReport& report, bool rounds);
[[nodiscard]] std::string to_markdown(const validate::ValidationReport& report);
[[nodiscard]] std::string validation_table(const validate::ValidationReport& report);

// What render offers for it, in the order --format lists them (the command offers exactly these).
inline constexpr OutputFormat kValidationFormats[] = {OutputFormat::table, OutputFormat::json, OutputFormat::markdown};
// table, json (with the rounds) or markdown.
[[nodiscard]] std::string render(const validate::ValidationReport& report, OutputFormat format);

}  // namespace stripesim::output
