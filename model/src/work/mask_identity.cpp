#include "stripesim/model/work/mask_identity.hpp"

#include <algorithm>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/mask.hpp"

namespace stripesim::model {

bool same_mask(std::string_view a, std::string_view b, std::vector<Count> lengths) {
  lengths.push_back(Count{1} << 20);
  try {
    return std::ranges::all_of(lengths, [&](Count n) { return parse_mask(a, n) == parse_mask(b, n); });
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace stripesim::model
