#pragma once
// The output formats, described once. A command offers some of them on its --format flag
// (add_format_option: the choices, the help and the bad-input message come from its list) and
// renders the one chosen in an exhaustive switch over OutputFormat, so that a new format is
// named by the compiler in every command that must render it.
#include <CLI/CLI.hpp>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace stripesim::cli {

enum class OutputFormat { table, json, csv, markdown };

[[nodiscard]] std::string_view format_name(OutputFormat format);

// --format on `cmd`, writing the chosen name to `target` (its value now is the default), one of
// `offered` in that order. `help` says what the formats hold.
CLI::Option* add_format_option(CLI::App* cmd, std::string& target, std::initializer_list<OutputFormat> offered,
                               const std::string& help);

// The format a --format value names (one add_format_option let through).
[[nodiscard]] OutputFormat output_format(std::string_view name);

// For the switch's cases a command does not offer: --format could not have chosen them.
[[nodiscard]] inline std::logic_error not_offered(OutputFormat format) {
  return std::logic_error("--format " + std::string(format_name(format)) + " is not offered here");
}

}  // namespace stripesim::cli
