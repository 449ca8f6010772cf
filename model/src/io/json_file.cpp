#include "stripesim/model/io/json_file.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {

std::string read_text_file(const std::string& path, std::string_view label) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{}: file '{}' does not exist", label, path));
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("{}: '{}' is a directory, expected a file", label, path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open '{}' for reading", label, path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: error while reading '{}'", label, path));
  return text.str();
}

nlohmann::json read_json_file(const std::string& path, std::string_view label) {
  const std::string text = read_text_file(path, label);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: '{}' is not valid JSON (at byte {})", label, path, e.byte));
  }
}

}  // namespace stripesim::model
