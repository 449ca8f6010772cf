#pragma once
// Parsing of the integer quantities users type: "262144", "256k" (x1024), "1M" (x1048576),
// "2G" (x2^30). Anything else (signs, spaces, fractions, overflow) is an InputError naming `what`.
// And of the real numbers in files and specs ("1.2", "-0.5", "1e3"): finite, nothing around them.
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

// The suffixes parse_count takes, as help texts state them.
inline constexpr const char* kCountSuffixes = "suffixes k = 1024, M = 1048576, G = 2^30";

[[nodiscard]] Count parse_count(std::string_view text, const InputName& what);
// A count as users write one: with the largest suffix that divides it exactly, from k up
// (32768 "32k", 262144 "256k", 1048576 "1M", 3000 "3000"); parse_count reads it back.
[[nodiscard]] std::string count_with_suffix(Count value);
[[nodiscard]] double parse_number(std::string_view text, const InputName& what);

// The two factors of a product as users write one, "AxB" (or "AXB"), cut at its first x:
// tiles (128x128), meshes (2x4), clusters (cluster:2x8) and hybrids (hybrid:4x2) alike.
// nullopt where there is no x or a side is empty; each caller parses the sides as its numbers.
[[nodiscard]] std::optional<std::pair<std::string_view, std::string_view>> split_product(std::string_view text);

}  // namespace stripesim::model
