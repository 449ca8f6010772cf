#include "stripesim/model/io/size_parse.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {

Count parse_count(std::string_view text, const InputName& what) {
  auto fail = [&](std::string_view why) -> InputError { return what.error(text, why, Shown::quoted); };
  if (text.empty()) throw fail("expected a non-negative integer, optionally with a k, M or G suffix");
  Count multiplier = 1;
  std::string_view digits = text;
  switch (text.back()) {
    case 'k': case 'K': multiplier = Count{1} << 10; digits.remove_suffix(1); break;
    case 'm': case 'M': multiplier = Count{1} << 20; digits.remove_suffix(1); break;
    case 'g': case 'G': multiplier = Count{1} << 30; digits.remove_suffix(1); break;
    default: break;
  }
  if (digits.empty() || digits.front() < '0' || digits.front() > '9') {
    throw fail("expected a non-negative integer, optionally with a k, M or G suffix");
  }
  Count value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) throw fail("above 2^63 - 1, the largest count stripesim takes");
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    throw fail("expected a non-negative integer, optionally with a k, M or G suffix");
  }
  if (value > std::numeric_limits<Count>::max() / multiplier) throw fail("above 2^63 - 1, the largest count stripesim takes");
  return value * multiplier;
}

std::string count_with_suffix(Count value) {
  for (const auto& [shift, suffix] : {std::pair{30, 'G'}, std::pair{20, 'M'}, std::pair{10, 'k'}}) {
    const Count unit = Count{1} << shift;
    if (value != 0 && value % unit == 0) return std::to_string(value / unit) + suffix;
  }
  return std::to_string(value);
}

double parse_number(std::string_view text, const InputName& what) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    throw what.error(text, "expected a number", Shown::quoted);
  }
  return value;
}

std::optional<std::pair<std::string_view, std::string_view>> split_product(std::string_view text) {
  const auto x = text.find_first_of("xX");
  if (x == std::string_view::npos || x == 0 || x + 1 == text.size()) return std::nullopt;
  return std::pair{text.substr(0, x), text.substr(x + 1)};
}

}  // namespace stripesim::model
