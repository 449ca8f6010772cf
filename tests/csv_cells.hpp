#pragma once
// The cells of one line of stripesim's CSV output, as RFC 4180 reads them: a field holding a comma
// or a quote is quoted, and a quote inside it doubled (output::csv_field writes them so; a mask
// such as documents:8k,24k is one).
#include <map>
#include <sstream>
#include <string>
#include <vector>

inline std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted && ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += ch;
    }
  }
  return cells;
}

// Every row of a CSV text after its header, each cell by its column's name.
inline std::vector<std::map<std::string, std::string>> csv_rows(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  const std::vector<std::string> header = csv_cells(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(lines, line)) {
    const std::vector<std::string> cells = csv_cells(line);
    std::map<std::string, std::string>& row = rows.emplace_back();
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
  }
  return rows;
}
