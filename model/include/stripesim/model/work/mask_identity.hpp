#pragma once
// Whether two mask specs are one mask, however they are spelled: what lets a list of masks
// (sweep --masks, validate --mask) refuse one given twice, which would repeat its rows.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

// Two specs are one mask when they build the same mask at every length of `lengths` and at a
// million tokens besides, where two distributions that drew one document each at short lengths
// (lognormal:4096 and lognormal:32768 at 1001 tokens) part: window:4k and window:4096,
// documents:fixed:4k and documents:fixed:4096, documents:128,128 and documents:0128,128 at 256.
// A spec one of `lengths` refuses is one with none (that error belongs where the mask is used);
// at the million tokens a spec that cannot build there (a list of lengths fits its own alone)
// is judged by `lengths` only.
[[nodiscard]] bool same_mask(std::string_view a, std::string_view b, const std::vector<Count>& lengths);

struct RepeatedMask {
  size_t mask = 0;     // the later spec in the list
  size_t earlier = 0;  // the one it repeats
};
// The first spec of `masks` that is one mask with an earlier one, as same_mask judges; each spec
// built once a length.
[[nodiscard]] std::optional<RepeatedMask> repeated_mask(const std::vector<std::string>& masks, std::vector<Count> lengths);

}  // namespace stripesim::model
