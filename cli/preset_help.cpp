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

std::string model_choices() { return choices("a model", "configs/models", model::ConfigCatalog(config_dir()).shipped_models()); }

std::string hardware_choices() {
  return choices("a preset", "configs/hardware", model::ConfigCatalog(config_dir()).shipped_hardware());
}

}  // namespace stripesim::cli
