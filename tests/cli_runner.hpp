#pragma once
// Runs the stripesim executable (path from CMake) as a user would, capturing exit code, stdout
// and stderr, so the CLI's contract (exit 2, one line, no partial file) is tested end to end.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "temp_path.hpp"

namespace stripesim::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `args` is appended to the command line as is (the caller quotes what needs quoting).
inline CliResult run_cli(const std::string& args) {
  static int counter = 0;
  const auto dir = temp_dir();
  const std::string tag = std::to_string(counter++);
  const auto out_path = dir / ("stripesim_cli_out_" + tag);
  const auto err_path = dir / ("stripesim_cli_err_" + tag);
  const std::string command = std::string("'") + STRIPESIM_BINARY + "' " + args + " >'" + out_path.string() + "' 2>'" +
                              err_path.string() + "'";
  const int status = std::system(command.c_str());
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return result;
}

// The README's row for a flag: the first line of a table that starts with "| `flag` |" (empty
// when there is none, which the caller's comparison then reports).
inline std::string readme_row(const std::string& flag) {
  std::ifstream in(std::string(STRIPESIM_SOURCE_DIR) + "/README.md");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("| `" + flag + "` |")) return line;
  }
  return "";
}

}  // namespace stripesim::testing
