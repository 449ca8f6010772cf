#pragma once
// Paths relative to the running executable's folder: an installed stripesim finds what is
// installed beside it (configurations, the GPU backends' module) wherever its prefix was moved,
// and the build tree's executable finds the same things where the build puts them.
#include <filesystem>
#include <optional>

namespace stripesim::model {

// `relative` resolved against the folder of the running executable (/proc/self/exe), normalised;
// nullopt where the executable cannot be found so (no /proc): the caller falls back to a path
// recorded at build time.
[[nodiscard]] std::optional<std::filesystem::path> beside_executable(const std::filesystem::path& relative);

}  // namespace stripesim::model
