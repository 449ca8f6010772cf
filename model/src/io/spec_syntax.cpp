#include "stripesim/model/io/spec_syntax.hpp"

#include <vector>

namespace stripesim::model {

std::string or_list(std::span<const std::string_view> items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

std::string expected_list(std::span<const SpecSyntax> syntaxes, bool names) {
  std::vector<std::string_view> items;
  for (const SpecSyntax& each : syntaxes) items.push_back(names ? each.name : each.syntax);
  return or_list(items);
}

std::string joined_syntaxes(std::span<const SpecSyntax> syntaxes, std::string_view separator) {
  std::string out;
  for (const SpecSyntax& each : syntaxes) out += (out.empty() ? "" : std::string(separator)) + std::string(each.syntax);
  return out;
}

}  // namespace stripesim::model
