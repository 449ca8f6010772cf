#pragma once
// An analysis (model/workflows/analysis.hpp) as people and tools read it: a table, the JSON
// contract (stripesim.analyze/1, reports/schema/analyze.schema.json), tidy CSV.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/model/workflows/analysis.hpp"
#include "stripesim/output/output_format.hpp"

namespace stripesim::output {

// [round][device], as every output that carries per-round numbers writes them.
[[nodiscard]] nlohmann::ordered_json to_json(const model::WorkMatrix& matrix);
[[nodiscard]] nlohmann::ordered_json to_json(const model::Metrics& metrics, double lockstep_speedup_vs_contiguous);
[[nodiscard]] nlohmann::ordered_json to_json(const model::Analysis& analysis);
// One flat row per layout (the configuration, every metric as elements_* and tiles_*, the tile
// bound columns, best): analyze's summary CSV.
[[nodiscard]] std::vector<nlohmann::ordered_json> analysis_rows(const model::Analysis& analysis);

// One row per layout with the headline metrics; with `matrices`, each layout's per-round
// matrices of unmasked pairs, active tiles and partial tiles follow.
[[nodiscard]] std::string analysis_table(const model::Analysis& analysis, bool matrices);
// The summary rows (analysis_rows); with `matrices`, one row per (layout, round, device) instead.
[[nodiscard]] std::string analysis_csv(const model::Analysis& analysis, bool matrices);

// What render offers for it, in the order --format lists them (the command offers exactly these).
inline constexpr OutputFormat kAnalysisFormats[] = {OutputFormat::table, OutputFormat::json, OutputFormat::csv};
// table, json or csv (`matrices`: the table's and the CSV's per-round matrices; the JSON always has them).
[[nodiscard]] std::string render(const model::Analysis& analysis, OutputFormat format, bool matrices);

}  // namespace stripesim::output
