#include "stripesim/model/io/input_origins.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "stripesim/model/io/name_match.hpp"

namespace stripesim::model {

InputOrigins InputOrigins::of_file(const nlohmann::json& doc, std::string label, const std::function<bool(Input)>& overridden,
                                   std::string_view within) {
  InputOrigins origins(std::move(label));
  for (const Input input : every_input()) {
    // The file names each input as its flag does, with '_' for '-': "seq_len" for --seq-len.
    std::string field(flag_of(input).substr(2));
    std::ranges::replace(field, '-', '_');
    if (!doc.is_object() || !doc.contains(field) || overridden(input)) continue;
    const nlohmann::json& value = doc.at(field);
    if (value.is_array()) {
      std::vector<std::string> items;
      for (const auto& item : value) items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
      origins.add_list(input, std::string(within) + field, std::move(items));
    } else {
      origins.add(input, std::string(within) + field);
    }
  }
  return origins;
}

void InputOrigins::add(Input input, std::string path) { origins_.push_back({input, std::move(path), {}, false}); }

void InputOrigins::add_flag(Input input, std::string flag) { origins_.push_back({input, std::move(flag), {}, true}); }

void InputOrigins::add_list(Input input, std::string path, std::vector<std::string> items) {
  origins_.push_back({input, std::move(path), std::move(items), false});
}

InputError InputOrigins::locate(const InputError& error) const {
  if (!error.input()) return error;
  const auto origin = std::ranges::find(origins_, *error.input(), &Origin::input);
  if (origin == origins_.end()) return error;
  if (origin->flag) return error.renamed(origin->path);
  if (label_.empty()) return error;
  std::string path = origin->path;
  // The item the error is about, its name matched as the parsers match it (case aside).
  const auto item = std::ranges::find_if(origin->items, [&](const std::string& each) { return same_name(each, error.value()); });
  if (item != origin->items.end()) path += fmt::format("[{}]", item - origin->items.begin());
  return error.at(fmt::format("{} field \"{}\"", label_, path));
}

}  // namespace stripesim::model
