#include "stripesim/model/io/spec_syntax.hpp"

namespace stripesim::model {

std::string expected_list(std::span<const SpecSyntax> syntaxes, bool names) {
  std::string out;
  for (size_t i = 0; i < syntaxes.size(); ++i) {
    if (i > 0) out += i + 1 == syntaxes.size() ? " or " : ", ";
    out += names ? syntaxes[i].name : syntaxes[i].syntax;
  }
  return out;
}

std::string joined_syntaxes(std::span<const SpecSyntax> syntaxes, std::string_view separator) {
  std::string out;
  for (const SpecSyntax& each : syntaxes) out += (out.empty() ? "" : std::string(separator)) + std::string(each.syntax);
  return out;
}

}  // namespace stripesim::model
