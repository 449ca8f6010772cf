#pragma once
// Where the shipped configurations live, the first that applies of:
//   1. $STRIPESIM_CONFIG_DIR;
//   2. the installed copy beside the executable, <exe dir>/../share/stripesim/configs (where
//      `cmake --install` puts configs/): an installed stripesim must not depend on the source tree
//      it was built from, which may be gone, or a different version, by the time it runs;
//   3. the source tree's configs/ recorded at build time (the build tree's executable, which has
//      nothing installed beside it).
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "stripesim/model/io/executable_path.hpp"

namespace stripesim::cli {

[[nodiscard]] inline std::string config_dir() {
  if (const char* env = std::getenv("STRIPESIM_CONFIG_DIR"); env != nullptr && *env != '\0') return env;
  // No executable path (no /proc): straight to the build-time folder.
  if (const auto installed = model::beside_executable(STRIPESIM_INSTALLED_CONFIG_DIR)) {
    std::error_code ec;
    if (std::filesystem::is_directory(*installed, ec)) return installed->string();
  }
  return STRIPESIM_DEFAULT_CONFIG_DIR;
}

}  // namespace stripesim::cli
