#include "balance_ring_graph.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>

namespace stripesim::model::balance {
namespace {

// Calls read(q, k, tiles) for every query tile of piece q and every piece k holding key tiles it
// reads (a key tile counted on the piece holding its first token, or the first key it reads).
template <typename Read>
void for_each_read(const Pricing& pricing, const std::vector<PlacedPiece>& pieces, Read read) {
  for (size_t q = 0; q < pieces.size(); ++q) {
    const Piece& piece = pieces[q].piece;
    for (Position qa = piece.begin; qa < piece.end();) {
      const Position qb = pricing.query_tile_end(qa, piece.end());
      const auto [lo, hi] = pricing.keys_read(qa, qb);
      auto k = static_cast<size_t>(std::upper_bound(pieces.begin(), pieces.end(), lo,
                                                    [](Position p, const PlacedPiece& x) { return p < x.piece.begin; }) -
                                   pieces.begin() - 1);
      for (; k < pieces.size() && pieces[k].piece.begin <= hi; ++k) {
        const Piece& keys = pieces[k].piece;
        if (const Count tiles = pricing.key_tiles_from(lo, hi, keys.begin, keys.end()); tiles > 0) read(q, k, tiles);
      }
      qa = qb;
    }
  }
}

}  // namespace

RingGraph::RingGraph(const Pricing& pricing, const Assignment& a) : devices_(static_cast<Count>(a.load.size())), load_(a.load) {
  const auto pieces = pieces_in_order(a);
  for (const auto& [piece, device, pinned] : pieces) nodes_.push_back({piece, device, pinned});
  reads_.resize(nodes_.size());
  read_by_.resize(nodes_.size());
  for_each_read(pricing, pieces, [&](size_t q, size_t k, Count tiles) { reads_[q].emplace_back(k, tiles); });
  for (size_t q = 0; q < nodes_.size(); ++q) {
    std::sort(reads_[q].begin(), reads_[q].end());
    // Merge what several query tiles found on the same piece.
    size_t out = 0;
    for (size_t i = 0; i < reads_[q].size(); ++i) {
      if (out > 0 && reads_[q][out - 1].first == reads_[q][i].first) {
        reads_[q][out - 1].second += reads_[q][i].second;
      } else {
        reads_[q][out++] = reads_[q][i];
      }
    }
    reads_[q].resize(out);
    for (const auto& [k, tiles] : reads_[q]) read_by_[k].emplace_back(q, tiles);
  }
  work_.assign(static_cast<size_t>(devices_ * devices_), 0);
  for (size_t q = 0; q < nodes_.size(); ++q) {
    for (const auto& [k, tiles] : reads_[q]) cell(nodes_[q].device, nodes_[k].device) += tiles;
  }
  round_max_.resize(static_cast<size_t>(devices_));
  is_touched_.assign(static_cast<size_t>(devices_), 0);
  for (Count r = 0; r < devices_; ++r) round_max_[static_cast<size_t>(r)] = max_of_round(r);
}

std::vector<Count> RingGraph::pair_work() const {
  std::vector<Count> out(work_.size());
  for (Count r = 0; r < devices_; ++r) {
    for (Count d = 0; d < devices_; ++d) {
      out[static_cast<size_t>(d * devices_ + kv_source(d, r, devices_))] = work_[static_cast<size_t>(r * devices_ + d)];
    }
  }
  return out;
}

void RingGraph::improve(Count budget) {
  const Count top = *std::max_element(load_.begin(), load_.end());
  std::vector<std::map<Count, std::vector<size_t>>> by_length(static_cast<size_t>(devices_));
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].pinned) by_length[static_cast<size_t>(nodes_[i].device)][nodes_[i].piece.length].push_back(i);
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].pinned && cross_weight(i) > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return cross_weight(x) > cross_weight(y); });
  for (const size_t x : order) {
    if (budget-- <= 0) break;
    const Count a = nodes_[x].device;
    const Count b = heaviest_partner_device(x);
    if (b < 0) continue;
    size_t best = x;
    Count best_lockstep = lockstep();
    const auto it = by_length[static_cast<size_t>(b)].find(nodes_[x].piece.length);
    if (it == by_length[static_cast<size_t>(b)].end()) continue;
    // The partners nearest in cost first (they move the loads least); a few of them.
    partners_ = it->second;
    const auto nearer = [&](size_t u, size_t v) {
      return std::abs(nodes_[u].piece.cost - nodes_[x].piece.cost) < std::abs(nodes_[v].piece.cost - nodes_[x].piece.cost);
    };
    if (partners_.size() > kPartnersTried) {
      std::nth_element(partners_.begin(), partners_.begin() + kPartnersTried, partners_.end(), nearer);
      partners_.resize(kPartnersTried);
    }
    for (const size_t y : partners_) {
      const Count delta = nodes_[x].piece.cost - nodes_[y].piece.cost;
      if (load_[static_cast<size_t>(a)] - delta > top || load_[static_cast<size_t>(b)] + delta > top) continue;
      swap(x, y);
      if (lockstep() < best_lockstep) {
        best_lockstep = lockstep();
        best = y;
      }
      swap(x, y);
    }
    if (best == x) continue;
    auto& from = by_length[static_cast<size_t>(a)][nodes_[x].piece.length];
    auto& to = it->second;
    from.erase(std::find(from.begin(), from.end(), x));
    to.erase(std::find(to.begin(), to.end(), best));
    from.push_back(best);
    to.push_back(x);
    const Count delta = nodes_[x].piece.cost - nodes_[best].piece.cost;
    load_[static_cast<size_t>(a)] -= delta;
    load_[static_cast<size_t>(b)] += delta;
    swap(x, best);
  }
}

Assignment RingGraph::assignment() const {
  Assignment a(devices_);
  for (const Node& node : nodes_) {
    (node.pinned ? a.pinned : a.owned)[static_cast<size_t>(node.device)].push_back(node.piece);
  }
  a.load = load_;
  return a;
}

Count RingGraph::cross_weight(size_t i) const {
  Count weight = 0;
  for (const auto* edges : {&reads_[i], &read_by_[i]}) {
    for (const auto& [j, tiles] : *edges) weight += nodes_[j].device != nodes_[i].device ? tiles : 0;
  }
  return weight;
}

Count RingGraph::heaviest_partner_device(size_t i) const {
  std::map<Count, Count> weight;
  for (const auto* edges : {&reads_[i], &read_by_[i]}) {
    for (const auto& [j, tiles] : *edges) {
      if (nodes_[j].device != nodes_[i].device) weight[nodes_[j].device] += tiles;
    }
  }
  Count best = -1;
  Count heaviest = 0;
  for (const auto& [device, w] : weight) {
    if (w > heaviest) {
      best = device;
      heaviest = w;
    }
  }
  return best;
}

void RingGraph::swap(size_t x, size_t y) {
  touched_.clear();
  const auto account = [&](size_t i, Count sign) {
    for (const auto& [k, tiles] : reads_[i]) {
      cell(nodes_[i].device, nodes_[k].device) += sign * tiles;
      touched_.push_back(round_of(nodes_[i].device, nodes_[k].device, devices_));
    }
    for (const auto& [q, tiles] : read_by_[i]) {
      if (q == x || q == y) continue;  // counted from the reader's side
      cell(nodes_[q].device, nodes_[i].device) += sign * tiles;
      touched_.push_back(round_of(nodes_[q].device, nodes_[i].device, devices_));
    }
  };
  account(x, -1);
  account(y, -1);
  std::swap(nodes_[x].device, nodes_[y].device);
  account(x, +1);
  account(y, +1);
  for (const Count r : touched_) {
    if (is_touched_[static_cast<size_t>(r)]) continue;
    is_touched_[static_cast<size_t>(r)] = 1;
    round_max_[static_cast<size_t>(r)] = max_of_round(r);
  }
  for (const Count r : touched_) is_touched_[static_cast<size_t>(r)] = 0;
}

}  // namespace stripesim::model::balance
