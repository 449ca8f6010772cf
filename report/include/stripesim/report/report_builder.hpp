#pragma once
// A Markdown report with SVG figures from the JSON documents the commands write (recognised by
// their `schema`): analyze, tms, sweep, simulate and validate.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stripesim::report {

struct ReportInput {
  std::string path;  // as given, for the report's list of inputs
  nlohmann::json document;
};

struct ReportFile {
  std::string name;  // relative to the report folder
  std::string content;
};

// report.md first, then the figures it links to. Throws model::InputError for a document
// without a known schema.
[[nodiscard]] std::vector<ReportFile> build_report(const std::vector<ReportInput>& inputs);

// The schema family of a document ("analyze" for "stripesim.analyze/1"), or "" when unknown.
[[nodiscard]] std::string schema_kind(const nlohmann::json& document);

}  // namespace stripesim::report
