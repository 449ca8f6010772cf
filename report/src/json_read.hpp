#pragma once
// Reading the documents `report` draws, field by field, so that a field missing or of the wrong
// type is named where it sits ("/results/0/time_us: expected a number, got \"abc\""), not only
// by the JSON library's "type must be number, but is string". A FieldError carries the node it
// was read from; build_report turns that into the field's path within the input file.
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace stripesim::report {

struct FieldError : std::runtime_error {
  FieldError(const nlohmann::json* node, std::string key, const std::string& problem)
      : std::runtime_error(problem), node(node), key(std::move(key)) {}
  const nlohmann::json* node;  // the object read from (or the value itself, with an empty key)
  std::string key;             // the field of `node`, "" for the node itself
};

// `parent`'s field `key`, which must exist (an object, an array or any value).
[[nodiscard]] inline const nlohmann::json& field(const nlohmann::json& parent, const std::string& key) {
  if (!parent.is_object()) throw FieldError(&parent, "", "expected an object, got " + std::string(parent.type_name()));
  const auto it = parent.find(key);
  if (it == parent.end()) throw FieldError(&parent, key, "missing");
  return *it;
}

// `parent`'s field `key` as an array (what a loop walks).
[[nodiscard]] inline const nlohmann::json& array_field(const nlohmann::json& parent, const std::string& key) {
  const nlohmann::json& value = field(parent, key);
  if (!value.is_array()) throw FieldError(&parent, key, "expected an array, got " + value.dump());
  return value;
}

// The same for a list the report draws one entry of per item (results, rows, layouts): an empty
// one has nothing to draw, so the file is not one its command writes.
[[nodiscard]] inline const nlohmann::json& non_empty_array_field(const nlohmann::json& parent, const std::string& key) {
  const nlohmann::json& value = array_field(parent, key);
  if (value.empty()) throw FieldError(&parent, key, "expected at least one entry, got []");
  return value;
}

// Item `index` of an array, which must hold it.
[[nodiscard]] inline const nlohmann::json& element(const nlohmann::json& array, size_t index) {
  if (!array.is_array()) throw FieldError(&array, "", "expected an array, got " + std::string(array.type_name()));
  if (index >= array.size()) throw FieldError(&array, std::to_string(index), "missing");
  return array[index];
}

// A value as T: a string, a finite number, or an integer (a whole number that fits in T).
template <typename T>
[[nodiscard]] T value_as(const nlohmann::json& value, const nlohmann::json* node, const std::string& key) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) throw FieldError(node, key, "expected a string, got " + value.dump());
    return value.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) throw FieldError(node, key, "expected true or false, got " + value.dump());
    return value.get<bool>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number() || !std::isfinite(value.get<double>())) throw FieldError(node, key, "expected a number, got " + value.dump());
    return value.get<T>();
  } else {
    static_assert(std::is_integral_v<T>);
    const bool whole = value.is_number_integer() ||
                       (value.is_number_float() && std::trunc(value.get<double>()) == value.get<double>() &&
                        std::abs(value.get<double>()) < 9.2e18);
    if (!whole || (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))) {
      throw FieldError(node, key, "expected an integer, got " + value.dump());
    }
    return value.get<T>();
  }
}

// `parent`'s field `key` as T.
template <typename T>
[[nodiscard]] T read(const nlohmann::json& parent, const std::string& key) {
  return value_as<T>(field(parent, key), &parent, key);
}

// `parent`'s field `key` as T, or `absent` where a file written before the field existed lacks it.
template <typename T>
[[nodiscard]] T read_or(const nlohmann::json& parent, const std::string& key, T absent) {
  return parent.is_object() && parent.contains(key) ? read<T>(parent, key) : absent;
}

// `parent`'s field `key` as a size (tokens, devices, a tile side, buffers): an integer >= 1, as
// every command writes it (a 0 would divide by zero where the report scales a figure).
[[nodiscard]] inline long long read_size(const nlohmann::json& parent, const std::string& key) {
  const long long size = read<long long>(parent, key);
  if (size < 1) throw FieldError(&parent, key, "expected at least 1, got " + std::to_string(size));
  return size;
}

// Item `index` of an array as T.
template <typename T>
[[nodiscard]] T read_item(const nlohmann::json& array, size_t index) {
  return value_as<T>(element(array, index), &array, std::to_string(index));
}

// A simulate document's scope ("attention", "layer", "step"; files written before scopes existed
// simulated attention alone).
[[nodiscard]] inline std::string scope_of(const nlohmann::json& config) { return read_or<std::string>(config, "scope", "attention"); }

// Where `target` sits within `root`, as a JSON pointer ("/results/0/time_us"); "" for the root,
// and "(unknown)" if it is not inside it.
[[nodiscard]] std::string json_path(const nlohmann::json& root, const nlohmann::json* target);

}  // namespace stripesim::report
