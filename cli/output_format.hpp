#pragma once
// The --format flag: a command offers some of the output formats (stripesim/output/output_format.hpp)
// through add_format_option (the choices, the help and the bad-input message come from its list)
// and renders the one chosen with the printers of stripesim/output.
#include <CLI/CLI.hpp>
#include <span>
#include <string>
#include <string_view>

#include "stripesim/output/output_format.hpp"

namespace stripesim::cli {

using output::format_name;
using output::not_offered;
using output::OutputFormat;

// --format on `cmd`, writing the chosen name to `target` (its value now is the default), one of
// `offered` in that order: the printer's own list (output::kTmsFormats, ...). `help` says what the formats hold.
CLI::Option* add_format_option(CLI::App* cmd, std::string& target, std::span<const OutputFormat> offered,
                               const std::string& help);

// The format a --format value names (one add_format_option let through).
[[nodiscard]] OutputFormat output_format(std::string_view name);

}  // namespace stripesim::cli
