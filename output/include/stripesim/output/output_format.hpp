#pragma once
// The output formats, described once. A command offers some of them on its --format flag and
// each printer renders the one chosen in an exhaustive switch over OutputFormat, so that a new
// format is named by the compiler in every printer that must render it.
#include <stdexcept>
#include <string>
#include <string_view>

namespace stripesim::output {

enum class OutputFormat { table, json, csv, markdown };

inline constexpr OutputFormat kOutputFormats[] = {OutputFormat::table, OutputFormat::json, OutputFormat::csv,
                                                  OutputFormat::markdown};

[[nodiscard]] std::string_view format_name(OutputFormat format);

// For the switch's cases a printer does not render: the command could not have offered them.
[[nodiscard]] inline std::logic_error not_offered(OutputFormat format) {
  return std::logic_error("--format " + std::string(format_name(format)) + " is not offered here");
}

}  // namespace stripesim::output
