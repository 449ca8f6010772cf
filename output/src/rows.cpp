#include "stripesim/output/rows.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "stripesim/output/number_text.hpp"

namespace stripesim::output {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char ch : text) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

std::string cell_text(const nlohmann::ordered_json& value, bool round) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";  // a cell with no value (a point nothing was measured at)
  if (round && value.is_number_float()) return fmt::format("{:.4f}", as_printed(value.get<double>(), 4));
  return value.dump();
}

std::string rows_to_csv(const std::vector<nlohmann::ordered_json>& rows) {
  std::string out;
  if (rows.empty()) return out;
  const char* separator = "";
  for (const auto& [key, value] : rows.front().items()) {
    out.append(separator).append(csv_field(key));
    separator = ",";
  }
  out += '\n';
  for (const auto& row : rows) {
    separator = "";
    for (const auto& [key, value] : row.items()) {
      out.append(separator).append(csv_field(cell_text(value, false)));
      separator = ",";
    }
    out += '\n';
  }
  return out;
}

std::string rows_to_table(const std::vector<nlohmann::ordered_json>& rows) {
  if (rows.empty()) return "(no rows)\n";
  std::vector<std::string> header;
  for (const auto& [key, value] : rows.front().items()) header.push_back(key);
  std::vector<size_t> width(header.size());
  std::vector<std::vector<std::string>> cells;
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    auto& line = cells.emplace_back();
    size_t c = 0;
    for (const auto& [key, value] : row.items()) {
      line.push_back(cell_text(value, true));
      width[c] = std::max(width[c], line.back().size());
      ++c;
    }
  }
  std::string out;
  for (size_t c = 0; c < header.size(); ++c) out += fmt::format("{}{:<{}}", c ? "  " : "", header[c], width[c]);
  out += "\n";
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) out += fmt::format("{}{:>{}}", c ? "  " : "", line[c], width[c]);
    out += "\n";
  }
  return out;
}

std::string render(const SweepTable& sweep, OutputFormat format) {
  switch (format) {
    case OutputFormat::csv: return rows_to_csv(sweep.rows);
    case OutputFormat::table: return rows_to_table(sweep.rows);
    case OutputFormat::json: {
      nlohmann::ordered_json doc;
      doc["schema"] = sweep.schema;
      doc["description"] = sweep.description;
      doc["tiling"] = model::tiling_name(sweep.tiling);
      doc["rows"] = sweep.rows;
      return doc.dump(2) + "\n";
    }
    case OutputFormat::markdown: break;
  }
  throw not_offered(format);
}

}  // namespace stripesim::output
