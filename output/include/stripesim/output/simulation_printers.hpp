#pragma once
// A simulation (sim/simulation.hpp) as a table, as JSON (stripesim.simulate/1,
// reports/schema/simulate.schema.json), as CSV (sim::simulation_rows) and as a Chrome trace.
#include <nlohmann/json.hpp>
#include <string>

#include "stripesim/output/output_format.hpp"
#include "stripesim/sim/simulation.hpp"

namespace stripesim::output {

// `rounds`: include every (round, device) record (large for big rings: 922 MB at N = 1024);
// `rounds_included` says whether they are there.
[[nodiscard]] nlohmann::ordered_json to_json(const sim::Simulation& simulation, bool rounds);
// Chrome trace event format (opens in Perfetto / chrome://tracing): a track per device's
// compute stream and per link direction.
[[nodiscard]] nlohmann::ordered_json chrome_trace(const sim::Simulation& simulation);
// The layouts' times, idle and exposed communication (scope ring) or the step's breakdown,
// throughput and memory (scope layer or step).
[[nodiscard]] std::string simulation_table(const sim::Simulation& simulation);

// What render offers for it, in the order --format lists them (the command offers exactly these).
inline constexpr OutputFormat kSimulationFormats[] = {OutputFormat::table, OutputFormat::json, OutputFormat::csv};
// table, json (`rounds`: with the per-(round, device) records) or csv.
[[nodiscard]] std::string render(const sim::Simulation& simulation, OutputFormat format, bool rounds);

}  // namespace stripesim::output
