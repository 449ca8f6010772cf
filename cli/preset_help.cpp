#include "preset_help.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "config_dir.hpp"
#include "stripesim/model/io/config_catalog.hpp"

namespace stripesim::cli {
namespace {

std::string choices(std::string_view what, std::string_view folder, const std::vector<model::ShippedConfig>& shipped) {
  std::vector<std::string> names;
  for (const auto& config : shipped) {
    names.push_back(config.aliases.empty() ? config.stem
                                           : fmt::format("{} or {}", config.stem, fmt::join(config.aliases, " or ")));
  }
  if (names.empty()) return fmt::format("{} in {} or a JSON file", what, folder);
  return fmt::format("{} in {} ({}) or a JSON file", what, folder, fmt::join(names, ", "));
}

}  // namespace

// Every command registers its help at start-up and several list the same presets: each folder is
// read once per process, not once per option.
std::string model_choices() {
  static const std::string text =
      choices("a model", "configs/models", model::ConfigCatalog(config_dir()).shipped_models());
  return text;
}

std::string hardware_choices() {
  static const std::string text =
      choices("a preset", "configs/hardware", model::ConfigCatalog(config_dir()).shipped_hardware());
  return text;
}

}  // namespace stripesim::cli
