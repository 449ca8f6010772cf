#include "output_format.hpp"

#include <stdexcept>
#include <vector>

namespace stripesim::cli {

CLI::Option* add_format_option(CLI::App* cmd, std::string& target, std::span<const OutputFormat> offered,
                               const std::string& help) {
  std::vector<std::string> names;
  for (const OutputFormat format : offered) names.emplace_back(format_name(format));
  // Case aside, as `layout --format` and every name the commands look up ("JSON" reads as "json").
  return cmd->add_option("--format", target, help)->transform(CLI::IsMember(names, CLI::ignore_case))->capture_default_str();
}

OutputFormat output_format(std::string_view name) {
  for (const OutputFormat format : output::kOutputFormats) {
    if (format_name(format) == name) return format;
  }
  throw std::logic_error("--format " + std::string(name) + ": not a format");  // add_format_option let it through
}

}  // namespace stripesim::cli
