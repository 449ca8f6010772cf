#pragma once
// A plan (sim/plan.hpp: context parallelism x layout x mesh ranked by predicted throughput) as a
// table, as JSON (stripesim.plan/1, reports/schema/plan.schema.json) and as CSV.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/output/output_format.hpp"
#include "stripesim/sim/plan.hpp"

namespace stripesim::output {

[[nodiscard]] nlohmann::ordered_json to_json(const sim::Plan& plan);
// One row per ranked candidate (the same keys in each): the JSON's "ranked" and the CSV.
[[nodiscard]] std::vector<nlohmann::ordered_json> plan_rows(const sim::Plan& plan);
[[nodiscard]] std::string plan_table(const sim::Plan& plan);

// What render offers for it, in the order --format lists them (the command offers exactly these).
inline constexpr OutputFormat kPlanFormats[] = {OutputFormat::table, OutputFormat::json, OutputFormat::csv};
// table, json or csv.
[[nodiscard]] std::string render(const sim::Plan& plan, OutputFormat format);

}  // namespace stripesim::output
