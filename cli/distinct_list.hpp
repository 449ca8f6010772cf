#pragma once
// A flag's comma-separated list parsed item by item, where two items that parse to the same
// value (32k and 32768) would only repeat rows of the output: refused, naming the item.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/layout_spec.hpp"

namespace stripesim::cli {

template <typename T, typename Parse>
std::vector<T> parse_distinct_list(const std::string& text, const std::string& flag, Parse parse) {
  std::vector<T> items;
  for (const auto& item : model::split_list(text, flag)) {
    T value = parse(item);
    if (std::find(items.begin(), items.end(), value) != items.end()) {
      throw model::InputError(fmt::format("{} '{}': given twice in the list", flag, item));
    }
    items.push_back(std::move(value));
  }
  return items;
}

// The values of a repeated flag, or of a list CLI11 split: one given twice would only repeat
// work or rows; refused, naming it ("--mask 'causal': given twice").
inline void require_distinct(const std::vector<std::string>& items, const std::string& flag, std::string_view how = "given twice") {
  for (auto it = items.begin(); it != items.end(); ++it) {
    if (std::find(items.begin(), it, *it) != it) throw model::InputError(fmt::format("{} '{}': {}", flag, *it, how));
  }
}

}  // namespace stripesim::cli
