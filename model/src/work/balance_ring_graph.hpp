#pragma once
// The balanced layout's polish for lockstep (balanced_layout.cpp): the ring's work as a graph of
// pieces, with swaps of equal-length pieces between devices. Internal to the work model.
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

#include "balance_assignment.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::model::balance {

// The ring's work as a graph of pieces: which piece's queries read which piece's keys, in tiles
// (every query tile's key tiles, each counted on the piece holding its first token), and the
// [round][device] work matrix that follows from where the pieces sit. Exact for whole blocks.
class RingGraph {
 public:
  RingGraph(const Pricing& pricing, const Assignment& a);

  // Sum over rounds of the busiest device.
  [[nodiscard]] Count lockstep() const { return std::accumulate(round_max_.begin(), round_max_.end(), Count{0}); }
  // The same work as pair_work() of assignment(): [query device * N + key device].
  [[nodiscard]] std::vector<Count> pair_work() const;

  // Swaps pieces of equal length between devices while the lockstep drops and no device grows
  // past today's busiest: first moving each piece with cross-device work (heaviest first) next to
  // the piece it reads or is read by most.
  void improve(Count budget);

  // Back to pieces per device.
  [[nodiscard]] Assignment assignment() const;

 private:
  using Node = PlacedPiece;

  Count& cell(Count query_device, Count key_device) {
    return work_[static_cast<size_t>(round_of(query_device, key_device, devices_) * devices_ + query_device)];
  }
  [[nodiscard]] Count max_of_round(Count r) const {
    return *std::max_element(work_.begin() + r * devices_, work_.begin() + (r + 1) * devices_);
  }

  [[nodiscard]] Count cross_weight(size_t i) const;
  [[nodiscard]] Count heaviest_partner_device(size_t i) const;

  // Exchanges the devices of pieces x and y, updating the work matrix and the rounds it touches.
  void swap(size_t x, size_t y);

  Count devices_;
  std::vector<Count> load_;
  std::vector<Node> nodes_;
  std::vector<std::vector<std::pair<size_t, Count>>> reads_;
  std::vector<std::vector<std::pair<size_t, Count>>> read_by_;
  std::vector<Count> work_;  // [round][device]
  std::vector<Count> round_max_;
  std::vector<Count> touched_;
  std::vector<char> is_touched_;
  std::vector<size_t> partners_;
  static constexpr size_t kPartnersTried = 16;
};

}  // namespace stripesim::model::balance
