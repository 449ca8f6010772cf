#pragma once
// Files an experiment names (a documents:FILE mask, a permutation:FILE layout, a model, hardware,
// kernel or topology given as a JSON file, a hostfile:FILE topology, a step sweep's measured
// speedups) are read from the experiment's folder when their paths are relative, by every command
// that reads experiments: an experiment kept beside its files runs alike from any working
// directory, and `check` reads a configuration the way `simulate --experiment` does.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace stripesim::model {

// The folder a file is in ("." for a bare name).
[[nodiscard]] std::string folder_of(const std::string& file);

// `path` read from `base_dir` when it is relative (and base_dir given).
[[nodiscard]] std::string from_base(const std::string& path, const std::string& base_dir);

// The file a hostfile:FILE topology spec names ("" for any other spec, or hostfile: alone).
[[nodiscard]] std::string hostfile_of(std::string_view topology_spec);

// `config` (one configuration, or a whole experiment: its groups and step object are walked too)
// with each file it names read from `base_dir` when relative; every other value as given.
[[nodiscard]] nlohmann::json with_files_from(nlohmann::json config, const std::string& base_dir);

// `config` as read from `to_dir` naming the same files it names read from `from_dir`: each
// relative path rewritten relative to to_dir (absolute where no relative path leads there);
// unchanged when the two are one folder. What a configuration copied elsewhere (a baseline
// written away from its experiment) must say to name its files still.
[[nodiscard]] nlohmann::json with_files_moved(nlohmann::json config, const std::string& from_dir, const std::string& to_dir);

// An experiment file's document with its files read from the experiment's folder.
[[nodiscard]] nlohmann::json with_files_beside(nlohmann::json experiment, const std::string& experiment_path);

}  // namespace stripesim::model
