#include "stripesim/model/io/config_catalog.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>

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

// A folder of presets as read once: each file with the names it answers to, in name order. The
// first file that does not read ends the reading and refuses every lookup by name, since any
// name could have been its.
template <typename Config>
struct PresetFolder {
  struct Preset {
    std::filesystem::path file;
    std::vector<std::string> names;  // its name and aliases, then its file's stem
    Config config;
  };
  std::filesystem::path dir;
  bool exists = false;
  std::vector<Preset> presets;
  std::exception_ptr unreadable;
};

// A catalog without a root has no folders (a comparison whose profiles are all in memory).
template <typename Config, typename Parse>
PresetFolder<Config> read_folder(const std::string& root, const std::string& kind, Parse parse) {
  const std::filesystem::path dir = std::filesystem::path(root) / kind;
  PresetFolder<Config> folder{dir, false, {}, nullptr};
  std::error_code ec;
  folder.exists = !root.empty() && std::filesystem::is_directory(dir, ec);
  if (!folder.exists) return folder;
  for (const auto& file : config_files(dir)) {
    try {
      Config config = parse(read_json_file(file.string(), file.string(), FileUse::input), file.string());
      std::vector<std::string> names = all_names(config);
      names.push_back(file.stem().string());
      folder.presets.push_back({file, std::move(names), std::move(config)});
    } catch (const InputError&) {
      folder.unreadable = std::current_exception();
      break;
    }
  }
  return folder;
}

// The folder, read on its first use. Written once under the lock and never again, so the
// reference stays good after it.
template <typename Config, typename Parse>
const PresetFolder<Config>& folder_of(std::mutex& mutex, std::optional<PresetFolder<Config>>& slot, const std::string& root,
                                      const std::string& kind, Parse parse) {
  const std::lock_guard lock(mutex);
  if (!slot) slot = read_folder<Config>(root, kind, parse);
  return *slot;
}

// A folder with a preset that does not read: that preset's error, and why a lookup of another
// name read it.
template <typename Config>
void refuse_unreadable(const PresetFolder<Config>& folder, std::string_view wanted) {
  if (!folder.unreadable) return;
  try {
    std::rethrow_exception(folder.unreadable);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}; every preset of {} must read (a lookup of '{}' reads them all)", e.what(), folder.dir.string(),
                                 wanted));
  }
}

// The preset that answers to `wanted`, case aside ("H100", "llama3-8B"); none when none does. A
// name two presets answer to is refused (name order would pick one silently), as is every
// name while a preset of the folder does not read.
template <typename Config>
const typename PresetFolder<Config>::Preset* answering(const PresetFolder<Config>& folder, Input input, const std::string& wanted) {
  refuse_unreadable(folder, wanted);
  const typename PresetFolder<Config>::Preset* found = nullptr;
  for (const auto& preset : folder.presets) {
    if (std::ranges::none_of(preset.names, [&](const std::string& name) { return same_name(name, wanted); })) continue;
    if (found) {
      throw InputError(input, wanted,
                       fmt::format("two presets answer to it, {} and {}; rename one or give a path to a JSON file",
                                   found->file.string(), preset.file.string()),
                       Shown::quoted);
    }
    found = &preset;
  }
  return found;
}

// A path read as the flag's file; errors come back by kind, so that a file whose field named
// this one (an experiment's "model") is blamed instead of a flag the user never gave. On the
// command line it reads the same: "<flag> <path>[ field \"x\" = v]: <detail>", the file's own
// field kept beside the path.
template <typename Parse>
auto read_path(Input input, const std::string& path, FileUse use, Parse parse) {
  const std::string flag(flag_of(input));
  const std::string label = flag + " " + path;
  try {
    return parse(read_json_file(path, label, use), label);
  } catch (const InputError& e) {
    const std::string_view message = e.what();
    const size_t colon = message.find(": ", label.size());
    if (!message.starts_with(label) || colon == std::string_view::npos) throw;
    throw InputError(input, std::string(message.substr(flag.size() + 1, colon - flag.size() - 1)),
                     std::string(message.substr(colon + 2)));
  }
}

// A preset by name, refused when unknown (answered with the nearest known name) or when the
// folder does not exist.
template <typename Config>
const typename PresetFolder<Config>::Preset& named(const PresetFolder<Config>& folder, Input input, const std::string& wanted) {
  if (!folder.exists) {
    throw InputError(input, wanted,
                     fmt::format("configuration folder '{}' does not exist (set STRIPESIM_CONFIG_DIR)", folder.dir.string()),
                     Shown::quoted);
  }
  if (const auto* preset = answering(folder, input, wanted)) return *preset;
  std::vector<std::string> every_name;
  std::string known;
  for (const auto& preset : folder.presets) {
    every_name.insert(every_name.end(), preset.names.begin(), preset.names.end());
    known += (known.empty() ? "" : ", ") + preset.file.stem().string();
  }
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

struct ConfigCatalog::Presets {
  std::mutex mutex;
  std::optional<PresetFolder<TransformerModel>> models;
  std::optional<PresetFolder<HardwareProfile>> hardware;
};

ConfigCatalog::ConfigCatalog(std::string root) : root_(std::move(root)), presets_(std::make_shared<Presets>()) {}

namespace {

const PresetFolder<HardwareProfile>& hardware_folder(ConfigCatalog::Presets& presets, const std::string& root) {
  return folder_of(presets.mutex, presets.hardware, root, "hardware", hardware_profile_from_json);
}

}  // namespace

TransformerModel ConfigCatalog::model(const std::string& name_or_path) const {
  if (is_config_path(name_or_path)) return read_path(Input::model, name_or_path, FileUse::input, transformer_model_from_json);
  const auto& folder = folder_of(presets_->mutex, presets_->models, root_, "models", transformer_model_from_json);
  return named(folder, Input::model, name_or_path).config;
}

// The hardware profile picked may be refitted in place (calibrate-step --hardware-out); the
// others read to find it, and a model, may not.
HardwareProfile ConfigCatalog::hardware(const std::string& name_or_path) const {
  if (is_config_path(name_or_path)) {
    HardwareProfile profile = read_path(Input::hardware, name_or_path, FileUse::hardware_profile, hardware_profile_from_json);
    profile.file = name_or_path;
    return profile;
  }
  const auto& preset = named(hardware_folder(*presets_, root_), Input::hardware, name_or_path);
  note_read_as(preset.file.string(), preset.file.string(), FileUse::hardware_profile);
  return preset.config;
}

std::optional<HardwareProfile> ConfigCatalog::find_hardware(const std::string& name) const {
  const auto& folder = hardware_folder(*presets_, root_);
  if (!folder.exists) return std::nullopt;
  const auto* preset = answering(folder, Input::hardware, name);
  if (!preset) return std::nullopt;
  return preset->config;
}

std::optional<HardwareProfile> ConfigCatalog::hardware_for_device(std::string_view device_name) const {
  const auto& folder = hardware_folder(*presets_, root_);
  refuse_unreadable(folder, device_name);
  const std::string device = lowercase(device_name);
  const PresetFolder<HardwareProfile>::Preset* best = nullptr;
  const PresetFolder<HardwareProfile>::Preset* tied = nullptr;  // another preset claiming as long a name
  size_t best_length = 0;
  for (const auto& preset : folder.presets) {
    for (const std::string& name : preset.config.device_names) {
      if (name.size() < best_length || device.find(lowercase(name)) == std::string::npos) continue;
      if (name.size() == best_length) {
        if (&preset != best) tied = &preset;
        continue;
      }
      best_length = name.size();
      best = &preset;
      tied = nullptr;
    }
  }
  if (tied) {
    // As a name two presets answer to: which file wins must not depend on how files sort.
    throw InputError(fmt::format("device '{}': two hardware presets claim it, {} and {}; rename the device_names of one or give --hardware",
                                 device_name, best->file.string(), tied->file.string()));
  }
  if (!best) return std::nullopt;
  note_read_as(best->file.string(), best->file.string(), FileUse::hardware_profile);  // the one picked, as hardware() marks it
  return best->config;
}

}  // namespace stripesim::model
