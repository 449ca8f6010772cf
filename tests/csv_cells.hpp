#pragma once
// The cells of one line of stripesim's CSV output, as RFC 4180 reads them: a field holding a comma
// or a quote is quoted, and a quote inside it doubled (output::csv_field writes them so; a mask
// such as documents:8k,24k is one).
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
