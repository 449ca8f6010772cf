#pragma once
// The --model and --hardware help lines, written from what the config folder ships
// (ConfigCatalog::shipped_*), so that adding a preset is adding its JSON file: no list of
// names is kept by hand in the commands.
#include <string>

namespace stripesim::cli {

// "a model in configs/models (1b, 3b, ...) or a JSON file".
[[nodiscard]] std::string model_choices();
// "a preset in configs/hardware (a100-80gb or a100, b200, ...) or a JSON file".
[[nodiscard]] std::string hardware_choices();

}  // namespace stripesim::cli
