#include "stripesim/output/output_format.hpp"

namespace stripesim::output {

std::string_view format_name(OutputFormat format) {
  switch (format) {
    case OutputFormat::table: return "table";
    case OutputFormat::json: return "json";
    case OutputFormat::csv: return "csv";
    case OutputFormat::markdown: return "markdown";
  }
  return "";  // unreachable: every format is named above
}

}  // namespace stripesim::output
