#pragma once
// Where the shipped configurations live: $STRIPESIM_CONFIG_DIR, else the source tree's
// configs/ recorded at build time.
#include <cstdlib>
#include <string>

namespace stripesim::cli {

[[nodiscard]] inline std::string config_dir() {
  if (const char* env = std::getenv("STRIPESIM_CONFIG_DIR"); env != nullptr && *env != '\0') return env;
  return STRIPESIM_DEFAULT_CONFIG_DIR;
}

}  // namespace stripesim::cli
