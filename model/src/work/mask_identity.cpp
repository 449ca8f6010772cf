#include "stripesim/model/work/mask_identity.hpp"

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/mask.hpp"

namespace stripesim::model {

bool same_mask(std::string_view a, std::string_view b, const std::vector<Count>& lengths) {
  return repeated_mask({std::string(a), std::string(b)}, lengths).has_value();
}

std::optional<RepeatedMask> repeated_mask(const std::vector<std::string>& masks, std::vector<Count> lengths) {
  const size_t given = lengths.size();
  lengths.push_back(Count{1} << 20);
  // alike[i][j], j < i: masks i and j agree at every length built so far.
  std::vector<std::vector<bool>> alike(masks.size());
  for (size_t i = 0; i < masks.size(); ++i) alike[i].assign(i, true);
  for (size_t at = 0; at < lengths.size(); ++at) {
    const Count n = lengths[at];
    // One length's masks at once, each built once (a mask of 2^24 documents is 800 MB).
    std::vector<std::optional<Mask>> built;
    built.reserve(masks.size());
    for (const std::string& spec : masks) {
      try {
        built.emplace_back(parse_mask(spec, n));
      } catch (const InputError&) {
        built.emplace_back(std::nullopt);
      }
    }
    // At the million tokens only where both build there: a list of lengths, which fits one length,
    // has no mask to compare at it.
    const bool probe = at == given;
    for (size_t i = 0; i < masks.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (probe && (!built[i] || !built[j])) continue;
        alike[i][j] = alike[i][j] && built[i] && built[j] && *built[i] == *built[j];
      }
    }
  }
  for (size_t i = 0; i < masks.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (alike[i][j]) return RepeatedMask{i, j};
    }
  }
  return std::nullopt;
}

}  // namespace stripesim::model
