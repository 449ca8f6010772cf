#pragma once
// The three renderings of an analysis: a table for people, JSON (the contract), tidy CSV.
#include <string>

#include "output_format.hpp"
#include "stripesim/model/workflows/analysis.hpp"

namespace stripesim::cli {

// One row per layout with the headline metrics; with `matrices`, each layout's per-round
// matrices of unmasked pairs, active tiles and partial tiles follow.
[[nodiscard]] std::string format_analysis_table(const model::Analysis& analysis, bool matrices);
[[nodiscard]] std::string format_analysis_json(const model::Analysis& analysis);
// One row per layout with the summary metrics (model::analysis_rows); with `matrices`, one row
// per (layout, round, device) instead.
[[nodiscard]] std::string format_analysis_csv(const model::Analysis& analysis, bool matrices);

[[nodiscard]] std::string format_analysis(const model::Analysis& analysis, OutputFormat format, bool matrices);

}  // namespace stripesim::cli
