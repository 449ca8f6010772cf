#pragma once
// Writing a command's output: to stdout, or to a file that appears whole or not at all
// (written beside its destination, then renamed), so a failure never leaves a partial file.
#include <string>
#include <utility>
#include <vector>

namespace stripesim::cli {

// Throws model::InputError naming `flag` (the option that gave the path) and `path` when it
// cannot be written.
void write_output(const std::string& text, const std::string& path, const std::string& flag = "--output");

// The checks write_output makes before it writes (not a directory, its folder exists), for
// every output of a command at once: run before the first file is written, so one bad path
// leaves no other file behind. Each pair is (path, the flag that gave it); "" and "-" pass.
void check_output_path(const std::string& path, const std::string& flag = "--output");
void check_output_paths(const std::vector<std::pair<std::string, std::string>>& paths_and_flags);

// Whether two paths name one file (after resolving '.', '..' and links; the file need not exist).
[[nodiscard]] bool same_file(const std::string& a, const std::string& b);

// Creates the folder `dir` (and its parents) for a command's files; throws model::InputError
// naming `flag` when it cannot.
void create_output_folder(const std::string& dir, const std::string& flag = "--out-dir");

}  // namespace stripesim::cli
