#pragma once
// The shipped configurations (configs/models, configs/hardware) looked up by name or alias,
// or any JSON file given by path.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/flops/transformer_model.hpp"

namespace stripesim::model {

// Whether a --model/--hardware/--kernel/--topology value names a file rather than a shipped
// config: it has a '/' or ends in .json.
[[nodiscard]] bool is_config_path(std::string_view text);

// The .json file of `dir` whose stem is `wanted`, case aside ("FA2" finds fa2.json, as models and
// hardware are found); none when no stem matches or `dir` is no folder. `stems` receives every
// stem of the folder in name order, for the caller's list of known names.
[[nodiscard]] std::optional<std::filesystem::path> find_json_by_stem(const std::filesystem::path& dir, std::string_view wanted,
                                                                   std::vector<std::string>& stems);

// A shipped config as help lists it: its file's stem and the other names its file gives it.
struct ShippedConfig {
  std::string stem;                  // "a100-80gb"
  std::vector<std::string> aliases;  // "a100" (the file's name when it differs from the stem, then its aliases)
};

// One command's view of the presets. A folder's files are read the first time one of its presets
// is looked up, all of them, and kept for every later lookup through this catalog or its copies
// (a step sweep looks its hardware up once a row), so that every lookup can refuse a name two
// presets answer to and a preset that does not read, whichever it asks for. Safe to share
// between threads. A catalog whose root is "" has no folders: every name is unknown.
class ConfigCatalog {
 public:
  explicit ConfigCatalog(std::string root);

  [[nodiscard]] const std::string& root() const { return root_; }
  // A name ("1b", "a100"), a file stem ("a100-80gb"), an alias, or a path to a .json file. A name
  // is refused when no preset or two answer to it, or when a preset of its folder does not read.
  [[nodiscard]] TransformerModel model(const std::string& name_or_path) const;
  [[nodiscard]] HardwareProfile hardware(const std::string& name_or_path) const;
  // The hardware preset that answers to `name` (a name only, never read as a path: a profile's
  // kernels_from or a kernel's hardware), none when no preset does or there is no folder of
  // them; refused like hardware() when two answer to it or a preset does not read.
  [[nodiscard]] std::optional<HardwareProfile> find_hardware(const std::string& name) const;
  // The shipped profile whose device_names the driver's name for a GPU contains (the longest
  // such name, case aside: "NVIDIA H100 PCIe" is h100-pcie, "NVIDIA H100 80GB HBM3" h100-sxm);
  // none when no profile claims it. Every preset must read, as for a lookup by name, and two that
  // claim it with names as long are refused.
  [[nodiscard]] std::optional<HardwareProfile> hardware_for_device(std::string_view device_name) const;
  // What configs/models and configs/hardware ship, in file name order: the CLI's help is written
  // from these, so a new preset is its JSON file and nothing else. Only listed, not checked: a
  // file that does not parse (or a folder named like one) is listed by its stem, and refused
  // when a lookup reads it.
  [[nodiscard]] std::vector<ShippedConfig> shipped_models() const;
  [[nodiscard]] std::vector<ShippedConfig> shipped_hardware() const;

  struct Presets;  // the folders read so far, shared by the catalog's copies (opaque)

 private:
  std::string root_;
  std::shared_ptr<Presets> presets_;
};

}  // namespace stripesim::model
