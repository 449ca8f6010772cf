#include "output_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::cli {

void write_output(const std::string& text, const std::string& path) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw model::InputError(fmt::format("--output '{}': is a directory, expected a file name", path));
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw model::InputError(fmt::format("--output '{}': directory '{}' does not exist", path, parent.string()));
  }
  const std::string temporary = fmt::format("{}.tmp{}", path, ::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw model::InputError(fmt::format("--output '{}': cannot open for writing", path));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      out.close();
      fs::remove(temporary, ec);
      throw model::InputError(fmt::format("--output '{}': write failed (disk full?)", path));
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    throw model::InputError(fmt::format("--output '{}': cannot replace the file", path));
  }
}

}  // namespace stripesim::cli
