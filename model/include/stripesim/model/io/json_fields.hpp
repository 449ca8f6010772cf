#pragma once
// Typed access to fields of user-written JSON objects, with errors that name the file and the
// field, and rejection of unknown fields (a typo should fail loudly, not be ignored).
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

// The range a number read as a physical quantity (a time in us, a rate, a size in bytes, a
// ratio) may take. Outside it, products and quotients downstream turn into inf, 0 or NaN
// (a bandwidth of 5e-324 GB/s made every hop free; a launch of 1e308 us made every time inf),
// so such a number is refused where it is read. Zero stays allowed where the field allows it.
inline constexpr double kSmallestPositiveValue = 1e-9;
inline constexpr double kLargestValue = 1e12;
// Throws InputError "`what`: VALUE is outside [1e-09, 1e+12] ..." unless the number lies in that
// range (or is 0 with `zero_allowed`).
void require_physical_range(double number, const std::string& what, bool zero_allowed = false);

// A JSON integer as a Count: one above 2^63 - 1 (which would wrap to a negative count) is an
// InputError naming `what`.
[[nodiscard]] Count json_count(const nlohmann::json& integer, const std::string& what);

class JsonFields {
 public:
  // `label` names the document in messages ("configs/models/1b.json").
  JsonFields(const nlohmann::json& object, std::string label);

  // Throws if the object holds a field not in `known`, or a "description" that is not a string.
  void allow_only(std::initializer_list<std::string_view> known) const;
  void allow_only(const std::vector<std::string_view>& known) const;

  [[nodiscard]] bool has(const std::string& key) const { return object_.contains(key); }
  [[nodiscard]] const nlohmann::json& raw(const std::string& key) const;
  [[nodiscard]] std::string string(const std::string& key) const;
  [[nodiscard]] std::string string_or(const std::string& key, std::string fallback) const;
  // Throws unless the field "schema" holds `expected` (an id of schemas.hpp), naming what it holds:
  // 'F field "schema": expected "stripesim.validate/1", got "stripesim.kernel/1"'.
  void require_schema(std::string_view expected) const;
  // A string with something in it besides blanks (a name, a description a reader relies on).
  [[nodiscard]] std::string non_empty_string(const std::string& key) const;
  // A positive integer, or a string with a k/M/G suffix; at most `at_most`.
  [[nodiscard]] Count positive_count(const std::string& key, Count at_most = std::numeric_limits<Count>::max()) const;
  [[nodiscard]] Count positive_count_or(const std::string& key, Count fallback,
                                        Count at_most = std::numeric_limits<Count>::max()) const;
  // A JSON integer of 1 or more, at most `at_most`: a field its schema types as an integer (a file
  // stripesim writes, a kernel profile), where "256" or "1k" is refused, not read as a number.
  [[nodiscard]] Count positive_integer(const std::string& key, Count at_most = std::numeric_limits<Count>::max()) const;
  [[nodiscard]] Count positive_integer_or(const std::string& key, Count fallback,
                                          Count at_most = std::numeric_limits<Count>::max()) const;
  // A JSON integer of 0 or more (a count a file records: 1.5 is refused, not truncated); required.
  [[nodiscard]] Count non_negative_count(const std::string& key) const;
  [[nodiscard]] double positive_number(const std::string& key) const;
  [[nodiscard]] double positive_number_or(const std::string& key, double fallback) const;
  [[nodiscard]] double non_negative_number_or(const std::string& key, double fallback) const;
  // A numerical error or tolerance (required): 0 or more and at most kLargestValue, however small
  // (an fp64 ring's error is 1e-16 and its tolerance 1e-10, below the physical quantities' range).
  [[nodiscard]] double numerical_error(const std::string& key) const;
  // true or false (a JSON boolean, not 0/1 or "yes").
  [[nodiscard]] bool boolean_or(const std::string& key, bool fallback) const;
  // The array of strings at key (it may be empty), or fallback when the field is absent.
  [[nodiscard]] std::vector<std::string> string_list_or(const std::string& key, std::vector<std::string> fallback) const;
  // The same for a list of names (layouts, masks, columns, a hardware's aliases and device
  // names): an empty one, or one given twice, is refused, as the flags refuse it (it would print
  // the same row twice). Two items are the same when `identity`
  // gives them one value: by default the name, case aside (layout_identity for layouts).
  [[nodiscard]] std::vector<std::string> distinct_string_list_or(const std::string& key, std::vector<std::string> fallback,
                                                                 std::string (*identity)(std::string_view) = nullptr) const;

  // parse(the string at key); an InputError it raises by kind (parse_tile_shape's "--tile ...")
  // names this field instead of the flag.
  template <typename Parse>
  [[nodiscard]] auto parsed(const std::string& key, Parse parse) const {
    const std::string text = string(key);
    return located(where(key), [&] { return parse(text); });
  }

  // parse(each string of the non-empty array at key), an error naming the item it is about
  // (field "tiles[1]").
  template <typename Parse>
  [[nodiscard]] auto parsed_list(const std::string& key, Parse parse) const {
    const nlohmann::json& value = non_empty_array(key);
    std::vector<decltype(parse(std::string()))> items;
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string text = string_item(value, key, i);
      items.push_back(located(where_item(key, i), [&] { return parse(text); }));
    }
    return items;
  }

  // Refuses an item of the list read from key that equals an earlier one after `key_of` (a
  // grid's axis, a list of names: it would print the same rows twice, where the flags refuse
  // it), naming both ("seq_lens[2]: given twice in the list (as seq_lens[0])").
  template <typename Item, typename Key>
  void require_distinct(const std::string& key, const std::vector<Item>& items, Key key_of) const {
    for (size_t i = 1; i < items.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (key_of(items[i]) == key_of(items[j])) {
          throw InputError(fmt::format("{}: given twice in the list (as {}[{}])", where_item(key, i), key, j));
        }
      }
    }
  }
  template <typename Item>
  void require_distinct(const std::string& key, const std::vector<Item>& items) const {
    require_distinct(key, items, [](const Item& item) -> const Item& { return item; });
  }

  // The array at key, which must hold at least one item.
  [[nodiscard]] const nlohmann::json& non_empty_array(const std::string& key) const;
  // The object at key (a record kept for readers is still checked for its form).
  [[nodiscard]] const nlohmann::json& object(const std::string& key) const;
  // The non-empty array at key of integers or strings like "128k" (range checks are the caller's);
  // an error names the item (field "seq_lens[1]").
  [[nodiscard]] std::vector<Count> count_list(const std::string& key) const;

  [[nodiscard]] std::string where(const std::string& key) const { return label_ + " field \"" + key + "\""; }
  [[nodiscard]] std::string where_item(const std::string& key, size_t index) const {
    return where(fmt::format("{}[{}]", key, index));
  }
  [[nodiscard]] const std::string& label() const { return label_; }

  // work(), an InputError it raises by kind named at `where` (a check shared with the flags,
  // run on a file's field).
  template <typename Work>
  static auto located(const std::string& where, Work&& work) {
    try {
      return work();
    } catch (const InputError& e) {
      throw e.at(where);
    }
  }

 private:
  // The string at array[index] (the array at key), or an error naming that item.
  [[nodiscard]] std::string string_item(const nlohmann::json& array, const std::string& key, size_t index) const;

  const nlohmann::json& object_;
  std::string label_;
};

}  // namespace stripesim::model
