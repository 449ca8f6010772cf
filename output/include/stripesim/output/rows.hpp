#pragma once
// Flat rows (one JSON object per row, the same keys in the same order) as tidy CSV or as an
// aligned table: how every grid (sweeps) and every per-layout summary is written.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/output/output_format.hpp"

namespace stripesim::output {

// A value that may be absent: the value, or null (an empty CSV cell).
template <typename T>
[[nodiscard]] nlohmann::ordered_json optional_json(const std::optional<T>& x) {
  return x ? nlohmann::ordered_json(*x) : nlohmann::ordered_json(nullptr);
}

[[nodiscard]] std::string rows_to_csv(const std::vector<nlohmann::ordered_json>& rows);
[[nodiscard]] std::string rows_to_table(const std::vector<nlohmann::ordered_json>& rows);
// CSV and table cells: strings as they are, null empty, numbers in their shortest exact form (table: 4 decimals).
[[nodiscard]] std::string cell_text(const nlohmann::ordered_json& value, bool round);
// A sweep's rows (TMS, balance or step sweep) with what its JSON says about them.
struct SweepTable {
  const char* schema = "";  // model::kSweepSchema, kBalanceSchema
  std::string description;
  model::Tiling tiling = model::Tiling::fixed;
  std::vector<nlohmann::ordered_json> rows;
};
// What render offers for it, in the order --format lists them (the command offers exactly these).
inline constexpr OutputFormat kSweepFormats[] = {OutputFormat::csv, OutputFormat::json, OutputFormat::table};
// csv, table, or json (the rows wrapped with the schema, the description and the tiling).
[[nodiscard]] std::string render(const SweepTable& sweep, OutputFormat format);

// RFC 4180 quoting when a field holds a comma, quote or newline.
[[nodiscard]] std::string csv_field(const std::string& text);

}  // namespace stripesim::output
