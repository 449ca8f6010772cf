#pragma once
// The shipped configurations (configs/models, configs/hardware) looked up by name or alias,
// or any JSON file given by path.
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/hardware_profile.hpp"
#include "stripesim/model/transformer_model.hpp"

namespace stripesim::model {

// Whether a --model/--hardware/--kernel/--topology value names a file rather than a shipped
// config: it has a '/' or ends in .json.
[[nodiscard]] bool is_config_path(std::string_view text);

class ConfigCatalog {
 public:
  explicit ConfigCatalog(std::string root) : root_(std::move(root)) {}

  [[nodiscard]] const std::string& root() const { return root_; }
  // A name ("1b", "a100"), a file stem ("a100-80gb"), an alias, or a path to a .json file.
  [[nodiscard]] TransformerModel model(const std::string& name_or_path) const;
  [[nodiscard]] HardwareProfile hardware(const std::string& name_or_path) const;

 private:
  std::string root_;
};

}  // namespace stripesim::model
