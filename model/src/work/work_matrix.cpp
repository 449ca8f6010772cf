#include "stripesim/model/work/work_matrix.hpp"

#include <numeric>

namespace stripesim::model {

std::vector<Count> WorkMatrix::device_totals() const {
  std::vector<Count> totals(static_cast<size_t>(devices_), 0);
  for (Count r = 0; r < rounds_; ++r) {
    for (Count d = 0; d < devices_; ++d) totals[static_cast<size_t>(d)] += at(r, d);
  }
  return totals;
}

Count WorkMatrix::total() const { return std::accumulate(cells_.begin(), cells_.end(), Count{0}); }

}  // namespace stripesim::model
