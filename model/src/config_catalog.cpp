#include "stripesim/model/config_catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "stripesim/model/input_error.hpp"
#include "stripesim/model/json_file.hpp"
#include "stripesim/model/name_match.hpp"

namespace stripesim::model {
namespace {

bool is_path(const std::string& text) { return text.find('/') != std::string::npos || text.ends_with(".json"); }

// Loads every file of `root/kind` and returns the first whose name, stem or alias matches, case
// aside ("H100", "llama3-8B"); an unknown name is answered with the nearest known one.
std::vector<std::string> all_names(const TransformerModel& m) { return {m.name}; }
std::vector<std::string> all_names(const HardwareProfile& h) {
  std::vector<std::string> names{h.name};
  names.insert(names.end(), h.aliases.begin(), h.aliases.end());
  return names;
}

template <typename Config, typename Parse, typename Matches>
Config find(const std::string& root, const std::string& kind, const std::string& flag, const std::string& wanted,
            Parse parse, Matches matches) {
  if (is_path(wanted)) return parse(read_json_file(wanted, flag + " " + wanted), flag + " " + wanted);
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(root) / kind;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(fmt::format("{} '{}': configuration folder '{}' does not exist (set STRIPESIM_CONFIG_DIR)", flag,
                                 wanted, dir.string()));
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> names, every_name;
  for (const auto& file : files) {
    Config config = parse(read_json_file(file.string(), file.string()), file.string());
    if (same_name(file.stem().string(), wanted) || matches(config, wanted)) return config;
    names.push_back(file.stem().string());
    every_name.push_back(file.stem().string());
    for (const std::string& other : all_names(config)) every_name.push_back(other);
  }
  std::string known;
  for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
  throw InputError(fmt::format("{} '{}': unknown{}, expected one of {} or a path to a JSON file", flag, wanted,
                               did_you_mean(wanted, every_name), known));
}

}  // namespace

TransformerModel ConfigCatalog::model(const std::string& name_or_path) const {
  return find<TransformerModel>(root_, "models", "--model", name_or_path, transformer_model_from_json,
                                [](const TransformerModel& m, const std::string& w) { return same_name(m.name, w); });
}

HardwareProfile ConfigCatalog::hardware(const std::string& name_or_path) const {
  return find<HardwareProfile>(root_, "hardware", "--hardware", name_or_path, hardware_profile_from_json,
                               [](const HardwareProfile& h, const std::string& w) {
                                 return std::ranges::any_of(all_names(h), [&](const std::string& n) { return same_name(n, w); });
                               });
}

}  // namespace stripesim::model
