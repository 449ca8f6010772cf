#include "stripesim/model/io/name_match.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>

namespace stripesim::model {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool same_name(std::string_view a, std::string_view b) { return lowercase(a) == lowercase(b); }

namespace {

// Levenshtein distance: insertions, deletions and substitutions cost one each.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string did_you_mean(std::string_view wanted, const std::vector<std::string>& known) {
  const std::string want = lowercase(wanted);
  const std::string* best = nullptr;
  size_t best_distance = 0;
  for (const std::string& name : known) {
    const size_t distance = edit_distance(want, lowercase(name));
    if (best == nullptr || distance < best_distance) {
      best = &name;
      best_distance = distance;
    }
  }
  if (best == nullptr) return "";
  const size_t allowed = std::max(want.size(), best->size()) / 4;  // none for names of three letters or fewer
  if (best_distance <= allowed) return fmt::format(" (did you mean '{}'?)", *best);
  // A name cut short ("--memory" for "--memory-gib") is far in edits but unambiguous when it
  // begins exactly one known name; three letters (dashes aside) make it more than a guess.
  const size_t letters = want.size() - std::min(want.find_first_not_of('-'), want.size());
  if (letters < 3) return "";
  const std::string* completion = nullptr;
  for (const std::string& name : known) {
    if (!lowercase(name).starts_with(want)) continue;
    if (completion != nullptr) return "";
    completion = &name;
  }
  return completion != nullptr ? fmt::format(" (did you mean '{}'?)", *completion) : "";
}

}  // namespace stripesim::model
