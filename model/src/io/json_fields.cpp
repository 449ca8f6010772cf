#include "stripesim/model/io/json_fields.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/io/size_parse.hpp"

namespace stripesim::model {

JsonFields::JsonFields(const nlohmann::json& object, std::string label) : object_(object), label_(std::move(label)) {
  if (!object_.is_object()) throw InputError(fmt::format("{}: expected a JSON object", label_));
}

void JsonFields::allow_only(std::initializer_list<std::string_view> known) const {
  allow_only(std::vector<std::string_view>(known));
}

void JsonFields::allow_only(const std::vector<std::string_view>& known) const {
  for (const auto& [key, value] : object_.items()) {
    bool found = false;
    for (const auto k : known) found = found || k == key;
    if (!found) {
      std::string names;
      for (const auto k : known) names += (names.empty() ? "" : ", ") + std::string(k);
      const std::vector<std::string> known_names(known.begin(), known.end());
      throw InputError(fmt::format("{}: unknown field \"{}\"{} (known: {})", label_, key, did_you_mean(key, known_names), names));
    }
  }
  // Every file that allows a "description" means free text for its readers, which some readers
  // never parse: its type is checked here, once for all of them.
  if (object_.contains("description")) (void)string("description");
}

const nlohmann::json& JsonFields::raw(const std::string& key) const {
  if (!object_.contains(key)) throw InputError(fmt::format("{}: missing field \"{}\"", label_, key));
  return object_.at(key);
}

std::string JsonFields::string(const std::string& key) const {
  const auto& value = raw(key);
  if (!value.is_string()) throw InputError(fmt::format("{}: expected a string, got {}", where(key), json_excerpt(value)));
  return value.get<std::string>();
}

void JsonFields::require_schema(std::string_view expected) const {
  const auto& value = raw("schema");
  if (!value.is_string() || value.get<std::string>() != expected) {
    throw InputError(fmt::format("{}: expected \"{}\", got {}", where("schema"), expected, json_excerpt(value)));
  }
}

std::string JsonFields::non_empty_string(const std::string& key) const {
  std::string text = string(key);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw InputError(fmt::format("{}: must not be empty", where(key)));
  return text;
}

std::string JsonFields::string_or(const std::string& key, std::string fallback) const {
  return has(key) ? string(key) : fallback;
}

Count json_count(const nlohmann::json& integer, const std::string& what) {
  if (integer.is_number_unsigned() && integer.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<Count>::max())) {
    throw InputError(fmt::format("{}: {} is too large (at most 2^63 - 1)", what, json_excerpt(integer)));
  }
  return integer.get<Count>();
}

Count JsonFields::positive_count(const std::string& key, Count at_most) const {
  const auto& value = raw(key);
  Count count = 0;
  if (value.is_number_integer()) {
    count = json_count(value, where(key));
  } else if (value.is_string()) {
    count = parse_count(value.get<std::string>(), where(key));
  } else {
    throw InputError(fmt::format("{}: expected a positive integer, got {}", where(key), json_excerpt(value)));
  }
  if (count < 1) throw InputError(fmt::format("{}: must be at least 1, got {}", where(key), count));
  if (count > at_most) throw InputError(fmt::format("{}: must be between 1 and {}, got {}", where(key), at_most, count));
  return count;
}

const nlohmann::json& JsonFields::non_empty_array(const std::string& key) const {
  const auto& value = raw(key);
  if (!value.is_array() || value.empty()) throw InputError(fmt::format("{}: expected a non-empty array", where(key)));
  return value;
}

const nlohmann::json& JsonFields::object(const std::string& key) const {
  const auto& value = raw(key);
  if (!value.is_object()) throw InputError(fmt::format("{}: expected an object, got {}", where(key), json_excerpt(value)));
  return value;
}

std::vector<Count> JsonFields::count_list(const std::string& key) const {
  const auto& value = non_empty_array(key);
  std::vector<Count> counts;
  for (size_t i = 0; i < value.size(); ++i) {
    const auto& item = value[i];
    if (item.is_number_integer()) {
      counts.push_back(json_count(item, where_item(key, i)));
    } else if (item.is_string()) {
      counts.push_back(parse_count(item.get<std::string>(), where_item(key, i)));
    } else {
      throw InputError(fmt::format("{}: expected an integer or a string like \"128k\", got {}", where_item(key, i), json_excerpt(item)));
    }
  }
  return counts;
}

Count JsonFields::positive_integer(const std::string& key, Count at_most) const {
  const auto& value = raw(key);
  if (!value.is_number_integer()) throw InputError(fmt::format("{}: expected a positive integer, got {}", where(key), json_excerpt(value)));
  return positive_count(key, at_most);
}

Count JsonFields::positive_integer_or(const std::string& key, Count fallback, Count at_most) const {
  return has(key) ? positive_integer(key, at_most) : fallback;
}

Count JsonFields::positive_count_or(const std::string& key, Count fallback, Count at_most) const {
  return has(key) ? positive_count(key, at_most) : fallback;
}

void require_physical_range(double number, const std::string& what, bool zero_allowed) {
  if (zero_allowed && number == 0) return;
  if (!(number >= kSmallestPositiveValue && number <= kLargestValue)) {
    throw InputError(fmt::format("{}: {:g} is outside [{:g}, {:g}], the range a physical value here can take", what, number,
                                 kSmallestPositiveValue, kLargestValue));
  }
}

double JsonFields::positive_number(const std::string& key) const {
  const auto& value = raw(key);
  if (!value.is_number()) throw InputError(fmt::format("{}: expected a number, got {}", where(key), json_excerpt(value)));
  const double number = value.get<double>();
  if (!(number > 0)) throw InputError(fmt::format("{}: must be positive, got {}", where(key), json_excerpt(value)));
  require_physical_range(number, where(key));
  return number;
}

double JsonFields::positive_number_or(const std::string& key, double fallback) const {
  return has(key) ? positive_number(key) : fallback;
}

bool JsonFields::boolean_or(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!raw(key).is_boolean()) throw InputError(fmt::format("{}: expected true or false", where(key)));
  return raw(key).get<bool>();
}

Count JsonFields::non_negative_count(const std::string& key) const {
  const auto& value = raw(key);
  if (!value.is_number_integer()) throw InputError(fmt::format("{}: expected a non-negative integer, got {}", where(key), json_excerpt(value)));
  const Count count = json_count(value, where(key));
  if (count < 0) throw InputError(fmt::format("{}: must not be negative, got {}", where(key), count));
  return count;
}

double JsonFields::non_negative_number_or(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  const auto& value = raw(key);
  if (!value.is_number()) throw InputError(fmt::format("{}: expected a number, got {}", where(key), json_excerpt(value)));
  const double number = value.get<double>();
  if (!(number >= 0)) throw InputError(fmt::format("{}: must not be negative, got {}", where(key), json_excerpt(value)));
  require_physical_range(number, where(key), /*zero_allowed=*/true);
  return number;
}

double JsonFields::numerical_error(const std::string& key) const {
  if (!has(key)) throw InputError(fmt::format("{}: missing", where(key)));
  const auto& value = raw(key);
  if (!value.is_number()) throw InputError(fmt::format("{}: expected a number, got {}", where(key), json_excerpt(value)));
  const double number = value.get<double>();
  if (!(number >= 0 && number <= kLargestValue)) {
    throw InputError(fmt::format("{}: expected a number from 0 to {:g}, got {}", where(key), kLargestValue, json_excerpt(value)));
  }
  return number;
}

std::vector<std::string> JsonFields::string_list_or(const std::string& key, std::vector<std::string> fallback) const {
  if (!has(key)) return fallback;
  const auto& value = raw(key);
  if (!value.is_array()) throw InputError(fmt::format("{}: expected an array of strings", where(key)));
  std::vector<std::string> items;
  for (size_t i = 0; i < value.size(); ++i) items.push_back(string_item(value, key, i));
  return items;
}

std::vector<std::string> JsonFields::distinct_string_list_or(const std::string& key, std::vector<std::string> fallback,
                                                            std::string (*identity)(std::string_view)) const {
  std::vector<std::string> items = string_list_or(key, std::move(fallback));
  if (!has(key)) return items;
  // An empty name names nothing (and, as a device name, is part of every driver's name).
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].empty()) throw InputError(fmt::format("{}: expected a name, got \"\"", where_item(key, i)));
  }
  require_distinct(key, items, [&](const std::string& name) { return identity ? identity(name) : lowercase(name); });
  return items;
}

std::string JsonFields::string_item(const nlohmann::json& array, const std::string& key, size_t index) const {
  const auto& item = array[index];
  if (!item.is_string()) throw InputError(fmt::format("{}: expected a string, got {}", where_item(key, index), json_excerpt(item)));
  return item.get<std::string>();
}

}  // namespace stripesim::model
