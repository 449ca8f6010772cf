#include "output_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::cli {

void check_output_path(const std::string& path, const std::string& flag) {
  if (path.empty() || path == "-") return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw model::InputError(fmt::format("{} '{}': is a directory, expected a file name", flag, path));
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw model::InputError(fmt::format("{} '{}': directory '{}' does not exist", flag, path, parent.string()));
  }
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code a_ec, b_ec;
  const std::filesystem::path a_path = std::filesystem::weakly_canonical(a, a_ec);
  return std::filesystem::weakly_canonical(b, b_ec) == a_path && !a_ec && !b_ec;
}

void check_output_paths(const std::vector<std::pair<std::string, std::string>>& paths_and_flags) {
  for (size_t i = 0; i < paths_and_flags.size(); ++i) {
    const auto& [path, flag] = paths_and_flags[i];
    check_output_path(path, flag);
    if (path.empty() || path == "-") continue;
    // Two outputs into one file: the second would overwrite the first.
    for (size_t j = 0; j < i; ++j) {
      const auto& [other, other_flag] = paths_and_flags[j];
      if (other.empty() || other == "-") continue;
      if (same_file(other, path)) {
        throw model::InputError(fmt::format("{} '{}', {} '{}': the same file; give each its own", other_flag, other, flag, path));
      }
    }
  }
}

void create_output_folder(const std::string& dir, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) throw model::InputError(fmt::format("{} '{}': cannot create the folder", flag, dir));
}

namespace {

// Writes `text` whole into `target` (the path itself, or a file beside it that then replaces
// it), naming `path` in its errors; a partial file beside the path is removed.
void write_file(const std::string& target, const std::string& text, const std::string& path, const std::string& flag) {
  std::ofstream out(target, std::ios::binary | std::ios::trunc);
  if (!out) throw model::InputError(fmt::format("{} '{}': cannot open for writing", flag, path));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  if (!out) {
    out.close();
    std::error_code ec;
    if (target != path) std::filesystem::remove(target, ec);
    throw model::InputError(fmt::format("{} '{}': write failed (disk full?)", flag, path));
  }
}

}  // namespace

void write_output(const std::string& text, const std::string& path, const std::string& flag) {
  if (path.empty() || path == "-") {
    const size_t written = std::fwrite(text.data(), 1, text.size(), stdout);
    if (written != text.size() || std::fflush(stdout) != 0) {
      throw model::InputError("standard output: write failed (disk full or closed pipe?)");
    }
    return;
  }
  check_output_path(path, flag);
  namespace fs = std::filesystem;
  std::error_code ec;
  // A path that is not a regular file (a terminal, /dev/null, a pipe) is written directly: the
  // write-beside-then-rename that keeps a regular file whole would replace the device itself.
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    write_file(path, text, path, flag);
    return;
  }
  const std::string temporary = fmt::format("{}.tmp{}", path, ::getpid());
  write_file(temporary, text, path, flag);
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    throw model::InputError(fmt::format("{} '{}': cannot replace the file", flag, path));
  }
}

}  // namespace stripesim::cli
