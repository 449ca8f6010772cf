#include "stripesim/model/workflows/experiment_files.hpp"

#include <array>
#include <filesystem>
#include <string_view>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"

namespace stripesim::model {
namespace {

constexpr std::string_view kHostfile = "hostfile:";

// `spec` with the file it names (`file`, its tail) read from base_dir; unchanged without one.
std::string with_tail_from(const std::string& spec, const std::string& file, const std::string& base_dir) {
  if (file.empty()) return spec;
  return spec.substr(0, spec.size() - file.size()) + from_base(file, base_dir);
}

std::string mask_from(const std::string& spec, const std::string& base_dir) {
  const std::string file = mask_file(spec);
  if (file.empty()) return spec;
  // "documents:" FILE [":window=W"]: the file moves, a window suffix stays.
  const size_t file_end = std::string_view("documents:").size() + file.size();
  return "documents:" + from_base(file, base_dir) + spec.substr(file_end);
}

std::string config_from(const std::string& value, const std::string& base_dir) {
  return is_config_path(value) ? from_base(value, base_dir) : value;
}

std::string topology_from(const std::string& spec, const std::string& base_dir) {
  if (const std::string file = hostfile_of(spec); !file.empty()) return with_tail_from(spec, file, base_dir);
  return config_from(spec, base_dir);
}

// The fields whose values (a string, or an array of strings) may name files, and how each does.
using Rewrite = std::string (*)(const std::string&, const std::string&);
struct FileField {
  std::string_view key;
  Rewrite rewrite;
};
constexpr std::array<FileField, 9> kFileFields{{
    {"mask", mask_from},
    {"masks", mask_from},
    {"layouts", [](const std::string& spec, const std::string& base) { return with_tail_from(spec, layout_file(spec), base); }},
    {"model", config_from},
    {"models", config_from},
    {"hardware", config_from},
    {"kernel", config_from},
    {"topology", topology_from},
    {"measured", [](const std::string& path, const std::string& base) { return from_base(path, base); }},
}};

void rewrite_strings(nlohmann::json& value, Rewrite rewrite, const std::string& base_dir) {
  if (value.is_string()) {
    value = rewrite(value.get<std::string>(), base_dir);
  } else if (value.is_array()) {
    for (auto& each : value) {
      if (each.is_string()) each = rewrite(each.get<std::string>(), base_dir);
    }
  }
}

void walk(nlohmann::json& value, const std::string& base_dir) {
  if (value.is_array()) {
    for (auto& each : value) walk(each, base_dir);
    return;
  }
  if (!value.is_object()) return;
  for (auto& [key, field] : value.items()) {
    const FileField* file_field = nullptr;
    for (const FileField& each : kFileFields) {
      if (each.key == key) file_field = &each;
    }
    if (file_field != nullptr) {
      rewrite_strings(field, file_field->rewrite, base_dir);
    } else {
      walk(field, base_dir);  // groups, a step object
    }
  }
}

}  // namespace

std::string folder_of(const std::string& file) {
  const std::string folder = std::filesystem::path(file).parent_path().string();
  return folder.empty() ? "." : folder;
}

std::string from_base(const std::string& path, const std::string& base_dir) {
  if (base_dir.empty() || path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

std::string hostfile_of(std::string_view topology_spec) {
  if (topology_spec.size() <= kHostfile.size() || lowercase(topology_spec.substr(0, kHostfile.size())) != kHostfile) return "";
  return std::string(topology_spec.substr(kHostfile.size()));
}

nlohmann::json with_files_from(nlohmann::json config, const std::string& base_dir) {
  if (!base_dir.empty()) walk(config, base_dir);
  return config;
}

nlohmann::json with_files_beside(nlohmann::json experiment, const std::string& experiment_path) {
  return with_files_from(std::move(experiment), folder_of(experiment_path));
}

}  // namespace stripesim::model
