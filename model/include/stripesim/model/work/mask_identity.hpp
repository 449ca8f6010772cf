#pragma once
// Whether two mask specs are one mask, however they are spelled: what lets a list of masks
// (sweep --masks, validate --mask) refuse one given twice, which would repeat its rows.
#include <string_view>
#include <vector>

#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

// True when `a` and `b` build the same mask at every length of `lengths` and at a million tokens
// besides, where two distributions that drew one document each at short lengths (lognormal:4096
// and lognormal:32768 at 1001 tokens) part: window:4k and window:4096, documents:fixed:4k and
// documents:fixed:4096. False where some length refuses either (that error belongs where the
// mask is used) or a list of lengths fits one length only.
[[nodiscard]] bool same_mask(std::string_view a, std::string_view b, std::vector<Count> lengths);

}  // namespace stripesim::model
