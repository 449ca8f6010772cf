#include "stripesim/model/io/executable_path.hpp"

#include <system_error>

namespace stripesim::model {

std::optional<std::filesystem::path> beside_executable(const std::filesystem::path& relative) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  return (exe.parent_path() / relative).lexically_normal();
}

}  // namespace stripesim::model
