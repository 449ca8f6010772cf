#pragma once
// Writing a command's output: to stdout, or to a file that appears whole or not at all
// (written beside its destination, then renamed), so a failure never leaves a partial file.
#include <string>

namespace stripesim::cli {

// Throws model::InputError naming `path` when it cannot be written.
void write_output(const std::string& text, const std::string& path);

}  // namespace stripesim::cli
