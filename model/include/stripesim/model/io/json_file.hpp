#pragma once
// Reading a JSON document from disk with errors that name the file (missing, unreadable,
// malformed), so every config and input file fails the same clear way.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace stripesim::model {

// Reads and parses `path`; `label` prefixes error messages ("permutation:perm.json").
[[nodiscard]] nlohmann::json read_json_file(const std::string& path, std::string_view label);

// The whole text of `path`, or an InputError naming `label` when it cannot be read.
[[nodiscard]] std::string read_text_file(const std::string& path, std::string_view label);

}  // namespace stripesim::model
