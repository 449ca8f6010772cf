#pragma once
// Scratch files of the tests: under the system's temporary folder, in a folder of this test
// process's own, so two suites running at once (a clean CI clone beside a developer's build,
// the sanitizer build beside the plain one) never write each other's files. The folder is
// removed when the process exits.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace stripesim_test_scratch {

struct Folder {
  std::filesystem::path path;
  Folder() : path(std::filesystem::temp_directory_path() / ("stripesim_tests_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  Folder(const Folder&) = delete;
  Folder& operator=(const Folder&) = delete;
  ~Folder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace stripesim_test_scratch

inline std::filesystem::path temp_dir() {
  static const stripesim_test_scratch::Folder folder;
  return folder.path;
}

inline std::filesystem::path temp_path(const std::string& name) { return temp_dir() / name; }

// An empty folder `name` under the scratch folder (emptied if an earlier test left it).
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  const std::filesystem::path dir = temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}
