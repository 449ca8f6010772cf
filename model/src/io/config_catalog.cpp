#include "stripesim/model/io/config_catalog.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/name_match.hpp"

namespace stripesim::model {
namespace {

// The names a config answers to besides its file's stem.
std::vector<std::string> all_names(const TransformerModel& m) { return {m.name}; }
std::vector<std::string> all_names(const HardwareProfile& h) {
  std::vector<std::string> names{h.name};
  names.insert(names.end(), h.aliases.begin(), h.aliases.end());
  return names;
}

// The JSON files of `dir`, in name order.
std::vector<std::filesystem::path> config_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Loads the files of `root/kind` in name order and returns the first whose stem, name or alias
// matches, case aside ("H100", "llama3-8B"); an unknown name is answered with the nearest known
// one. (Reading every file to refuse a name two presets answer to made a step sweep, which looks
// its hardware up once a row, read every preset a row: left for a lookup that caches.)
template <typename Config, typename Parse>
Config find(const std::string& root, const std::string& kind, Input input, const std::string& wanted, Parse parse) {
  const std::string flag(flag_of(input));
  // The hardware profile picked may be refitted in place (calibrate-step --hardware-out); the
  // others read to find it, and a model, may not.
  const FileUse use = input == Input::hardware ? FileUse::hardware_profile : FileUse::input;
  if (is_config_path(wanted)) {
    const std::string label = flag + " " + wanted;
    try {
      return parse(read_json_file(wanted, label, use), label);
    } catch (const InputError& e) {
      // Raised again by kind, so that a file whose field named this one (an experiment's "model")
      // is blamed instead of a flag the user never gave; on the command line it reads the same:
      // "<flag> <path>[ field \"x\" = v]: <detail>", the file's own field kept beside the path.
      const std::string_view message = e.what();
      const size_t colon = message.find(": ", label.size());
      if (!message.starts_with(label) || colon == std::string_view::npos) throw;
      throw InputError(input, std::string(message.substr(flag.size() + 1, colon - flag.size() - 1)),
                       std::string(message.substr(colon + 2)));
    }
  }
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(root) / kind;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(input, wanted,
                     fmt::format("configuration folder '{}' does not exist (set STRIPESIM_CONFIG_DIR)", dir.string()),
                     Shown::quoted);
  }
  std::vector<std::string> names, every_name;
  for (const auto& file : config_files(std::filesystem::path(root) / kind)) {
    Config config = parse(read_json_file(file.string(), file.string(), FileUse::input), file.string());
    std::vector<std::string> answers_to = all_names(config);
    answers_to.push_back(file.stem().string());
    if (std::ranges::any_of(answers_to, [&](const std::string& name) { return same_name(name, wanted); })) {
      if (use != FileUse::input) note_read_as(file.string(), file.string(), use);
      return config;
    }
    names.push_back(file.stem().string());
    every_name.insert(every_name.end(), answers_to.begin(), answers_to.end());
  }
  std::string known;
  for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
  throw InputError(input, wanted,
                   fmt::format("unknown{}, expected one of {} or a path to a JSON file", did_you_mean(wanted, every_name), known),
                   Shown::quoted);
}

std::vector<ShippedConfig> shipped(const std::string& root, const std::string& kind) {
  std::vector<ShippedConfig> configs;
  for (const auto& file : config_files(std::filesystem::path(root) / kind)) {
    ShippedConfig config{file.stem().string(), {}};
    // Listed, not read, where it is not a file (a folder named x.json): a lookup refuses it by name.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) {
      configs.push_back(std::move(config));
      continue;
    }
    std::ifstream in(file);
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    const auto add = [&](const nlohmann::json& name) {
      if (!name.is_string()) return;
      const std::string text = name.get<std::string>();
      if (!same_name(text, config.stem) && std::ranges::find(config.aliases, text) == config.aliases.end()) {
        config.aliases.push_back(text);
      }
    };
    if (doc.is_object()) {
      if (doc.contains("name")) add(doc["name"]);
      if (doc.contains("aliases") && doc["aliases"].is_array()) {
        for (const auto& alias : doc["aliases"]) add(alias);
      }
    }
    configs.push_back(std::move(config));
  }
  return configs;
}

}  // namespace

std::vector<ShippedConfig> ConfigCatalog::shipped_models() const { return shipped(root_, "models"); }
std::vector<ShippedConfig> ConfigCatalog::shipped_hardware() const { return shipped(root_, "hardware"); }

std::optional<std::filesystem::path> find_json_by_stem(const std::filesystem::path& dir, std::string_view wanted,
                                                     std::vector<std::string>& stems) {
  std::optional<std::filesystem::path> found;
  for (const auto& file : config_files(dir)) {
    stems.push_back(file.stem().string());
    if (!found && same_name(file.stem().string(), wanted)) found = file;
  }
  return found;
}

bool is_config_path(std::string_view text) { return text.find('/') != std::string_view::npos || text.ends_with(".json"); }

TransformerModel ConfigCatalog::model(const std::string& name_or_path) const {
  return find<TransformerModel>(root_, "models", Input::model, name_or_path, transformer_model_from_json);
}

HardwareProfile ConfigCatalog::hardware(const std::string& name_or_path) const {
  HardwareProfile profile = find<HardwareProfile>(root_, "hardware", Input::hardware, name_or_path, hardware_profile_from_json);
  if (is_config_path(name_or_path)) profile.file = name_or_path;
  return profile;
}

std::optional<HardwareProfile> ConfigCatalog::hardware_for_device(std::string_view device_name) const {
  const std::string device = lowercase(device_name);
  std::optional<HardwareProfile> best;
  std::string best_file;
  size_t best_length = 0;
  for (const auto& file : config_files(std::filesystem::path(root_) / "hardware")) {
    HardwareProfile profile =
        hardware_profile_from_json(read_json_file(file.string(), file.string(), FileUse::input), file.string());
    for (const std::string& name : profile.device_names) {
      if (name.size() > best_length && device.find(lowercase(name)) != std::string::npos) {
        best_length = name.size();
        best = profile;
        best_file = file.string();
      }
    }
  }
  if (best) note_read_as(best_file, best_file, FileUse::hardware_profile);  // the one picked, as find() marks it
  return best;
}

}  // namespace stripesim::model
