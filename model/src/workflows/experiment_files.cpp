#include "stripesim/model/workflows/experiment_files.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <string_view>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"

namespace stripesim::model {
namespace {

constexpr std::string_view kHostfile = "hostfile:";

// What becomes of each relative path a configuration names (rewrite_files passes it no other).
using PathMap = std::function<std::string(const std::string&)>;

// `spec` with the file it names (`file`, its tail) mapped; unchanged without one.
std::string with_tail_mapped(const std::string& spec, const std::string& file, const PathMap& map) {
  if (file.empty()) return spec;
  return spec.substr(0, spec.size() - file.size()) + map(file);
}

std::string mask_mapped(const std::string& spec, const PathMap& map) {
  const std::string file = mask_file(spec);
  if (file.empty()) return spec;
  // "documents:" FILE [":window=W"]: the file moves, a window suffix stays.
  const size_t file_end = std::string_view("documents:").size() + file.size();
  return "documents:" + map(file) + spec.substr(file_end);
}

std::string config_mapped(const std::string& value, const PathMap& map) { return is_config_path(value) ? map(value) : value; }

std::string topology_mapped(const std::string& spec, const PathMap& map) {
  if (const std::string file = hostfile_of(spec); !file.empty()) return with_tail_mapped(spec, file, map);
  return config_mapped(spec, map);
}

// The fields whose values (a string, or an array of strings) may name files, and how each does.
using Rewrite = std::string (*)(const std::string&, const PathMap&);
struct FileField {
  std::string_view key;
  Rewrite rewrite;
};
constexpr std::array<FileField, 9> kFileFields{{
    {"mask", mask_mapped},
    {"masks", mask_mapped},
    {"layouts", [](const std::string& spec, const PathMap& map) { return with_tail_mapped(spec, layout_file(spec), map); }},
    {"model", config_mapped},
    {"models", config_mapped},
    {"hardware", config_mapped},
    {"kernel", config_mapped},
    {"topology", topology_mapped},
    {"measured", [](const std::string& path, const PathMap& map) { return map(path); }},
}};

void rewrite_strings(nlohmann::json& value, Rewrite rewrite, const PathMap& map) {
  if (value.is_string()) {
    value = rewrite(value.get<std::string>(), map);
  } else if (value.is_array()) {
    for (auto& each : value) {
      if (each.is_string()) each = rewrite(each.get<std::string>(), map);
    }
  }
}

void walk(nlohmann::json& value, const PathMap& map) {
  if (value.is_array()) {
    for (auto& each : value) walk(each, map);
    return;
  }
  if (!value.is_object()) return;
  for (auto& [key, field] : value.items()) {
    const FileField* file_field = nullptr;
    for (const FileField& each : kFileFields) {
      if (each.key == key) file_field = &each;
    }
    if (file_field != nullptr) {
      rewrite_strings(field, file_field->rewrite, map);
    } else {
      walk(field, map);  // groups, a step object
    }
  }
}

// Every relative path `config` names, through `map`; absolute ones (and empty ones) as they are.
void rewrite_files(nlohmann::json& config, const PathMap& map) {
  walk(config, [&](const std::string& path) {
    return path.empty() || std::filesystem::path(path).is_absolute() ? path : map(path);
  });
}

// The folder as the file system resolves it (links followed, no trailing separator): two
// spellings of one folder, or a link to it, compare equal.
// What the file system cannot resolve (a loop of links, a folder it may not read) stays as
// spelled, normalised: the reader that opens the file names the problem.
std::filesystem::path resolved(const std::filesystem::path& path) {
  std::error_code error;
  std::filesystem::path out = std::filesystem::weakly_canonical(path, error);
  if (error) out = path.lexically_normal();
  if (!out.has_filename()) out = out.parent_path();
  return out;
}

std::filesystem::path resolved_folder(const std::string& folder) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(folder.empty() ? "." : folder, error);
  return resolved(error ? std::filesystem::path(folder) : absolute);
}

}  // namespace

std::string folder_of(const std::string& file) {
  const std::string folder = std::filesystem::path(file).parent_path().string();
  return folder.empty() ? "." : folder;
}

std::string from_base(const std::string& path, const std::string& base_dir) {
  if (base_dir.empty() || path.empty() || std::filesystem::path(path).is_absolute()) return path;
  const std::filesystem::path joined = std::filesystem::path(base_dir) / path;
  // A '..' after a folder that is a link leads out of the link's target, not back where the
  // link is: dropped lexically, it would name another file (in the path or in the folder).
  const bool climbs = std::ranges::any_of(joined, [](const auto& part) { return part == ".."; });
  return (climbs ? joined : joined.lexically_normal()).string();
}

std::string hostfile_of(std::string_view topology_spec) {
  if (topology_spec.size() <= kHostfile.size() || lowercase(topology_spec.substr(0, kHostfile.size())) != kHostfile) return "";
  return std::string(topology_spec.substr(kHostfile.size()));
}

nlohmann::json with_files_from(nlohmann::json config, const std::string& base_dir) {
  if (!base_dir.empty()) rewrite_files(config, [&](const std::string& path) { return from_base(path, base_dir); });
  return config;
}

nlohmann::json with_files_moved(nlohmann::json config, const std::string& from_dir, const std::string& to_dir) {
  const std::filesystem::path from = resolved_folder(from_dir), to = resolved_folder(to_dir);
  if (from == to) return config;
  rewrite_files(config, [&](const std::string& path) {
    // The folders resolved, the file's own name kept: a link to a file stays the link (repointed,
    // the baseline follows it, as the experiment does). Resolved as spelled: a '..' after a link
    // climbs out of its target, which dropping it lexically first would not.
    const std::filesystem::path joined = from / path;
    const std::filesystem::path file = resolved(joined.parent_path()) / joined.filename();
    const std::filesystem::path relative = file.lexically_relative(to);
    return relative.empty() ? file.string() : relative.string();
  });
  return config;
}

nlohmann::json with_files_beside(nlohmann::json experiment, const std::string& experiment_path) {
  return with_files_from(std::move(experiment), folder_of(experiment_path));
}

}  // namespace stripesim::model
