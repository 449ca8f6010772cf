#pragma once
// Layout specs as users write them: contiguous, striped, zigzag, block-striped:S,
// permutation:FILE. A permutation file is JSON: {"blocks": [[p, ...], ...]}, one array per
// device listing the original positions it holds in local order (a bare array of arrays works too).
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/layout.hpp"

namespace stripesim::model {

[[nodiscard]] Layout parse_layout(std::string_view spec, Count seq_len, Count devices);

[[nodiscard]] Layout load_permutation_file(const std::string& path, Count seq_len, Count devices);

// Splits "a,b,c" into its non-empty items; an empty item is an InputError naming `what`.
[[nodiscard]] std::vector<std::string> split_list(std::string_view text, std::string_view what);

}  // namespace stripesim::model
