#include "stripesim/validate/ring_problem.hpp"

#include <algorithm>
#include <cmath>

#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/splitmix64.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::validate {
namespace {

std::vector<double> random_values(Count count, std::uint64_t seed) {
  model::SplitMix64 random(seed);
  std::vector<double> values(static_cast<size_t>(count));
  for (double& value : values) value = 2.0 * random.uniform() - 1.0;
  return values;
}

// The keys a device's queries may see, as disjoint sorted intervals: the union of every query's
// [lowest_key, highest_key]. A block is skipped when none of its keys falls in the union.
std::vector<std::pair<Position, Position>> visible_keys(const DeviceShard& shard) {
  std::vector<std::pair<Position, Position>> intervals;
  intervals.reserve(shard.positions.size());
  for (size_t l = 0; l < shard.positions.size(); ++l) intervals.emplace_back(shard.lowest_key[l], shard.highest_key[l]);
  std::sort(intervals.begin(), intervals.end());
  std::vector<std::pair<Position, Position>> merged;
  for (const auto& interval : intervals) {
    if (!merged.empty() && interval.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, interval.second);
    } else {
      merged.push_back(interval);
    }
  }
  return merged;
}

bool any_visible(const std::vector<std::pair<Position, Position>>& visible, const std::vector<Position>& keys) {
  for (const Position k : keys) {
    auto it = std::upper_bound(visible.begin(), visible.end(), std::pair<Position, Position>{k, INT64_MAX});
    if (it != visible.begin() && std::prev(it)->second >= k) return true;
  }
  return false;
}

}  // namespace

RingPlan plan_ring_problem(RingCase ring_case) {
  check_ring_case(ring_case);
  model::Mask mask = model::parse_mask(ring_case.mask, ring_case.seq_len);
  if (mask.padded()) {
    // A padding row sees no key: its softmax has nothing to normalise, which the validator's
    // kernels and its dense reference do not define.
    throw model::InputError(model::Input::mask, ring_case.mask,
                            "padding tokens (V+P lengths) are not validated: their rows attend to nothing; give the "
                            "lengths without padding (analyze, simulate and plan take them)",
                            model::Shown::quoted);
  }
  model::LayoutPlan layout =
      model::plan_layout(ring_case.layout, ring_case.seq_len, ring_case.devices, model::LayoutContext{&mask, ring_case.tile});
  return RingPlan{std::move(ring_case), std::move(mask), std::move(layout)};
}

RingProblem::RingProblem(RingCase ring_case) : RingProblem(plan_ring_problem(std::move(ring_case))) {}

RingProblem::RingProblem(const RingPlan& plan) : case_(plan.ring_case), mask_(plan.mask), layout_(plan.layout.build()) {
  const Count n = case_.seq_len;
  const Count devices = case_.devices;
  const Count c = block_size();
  shards_.resize(static_cast<size_t>(devices));
  for (Count d = 0; d < devices; ++d) {
    DeviceShard& shard = shards_[static_cast<size_t>(d)];
    shard.positions.resize(static_cast<size_t>(c));
    shard.lowest_key.resize(static_cast<size_t>(c));
    shard.highest_key.resize(static_cast<size_t>(c));
    for (Count l = 0; l < c; ++l) {
      const Position p = layout_.position(d, l);
      shard.positions[static_cast<size_t>(l)] = p;
      shard.lowest_key[static_cast<size_t>(l)] = mask_.lowest_key(p);
      shard.highest_key[static_cast<size_t>(l)] = mask_.highest_key(p);
    }
  }
  // Distinct streams for Q, K and V, all from the case's seed.
  q_ = random_values(n * case_.heads * case_.head_dim, case_.seed * 3 + 0);
  for (double& value : q_) value *= case_.q_scale;
  k_ = random_values(n * case_.kv_heads * case_.head_dim, case_.seed * 3 + 1);
  v_ = random_values(n * case_.kv_heads * case_.head_dim, case_.seed * 3 + 2);
  // dO's stream sits in the other half of the seed space, apart from every seed's Q, K, V.
  if (case_.backward) dout_ = random_values(n * case_.heads * case_.head_dim, (case_.seed * 3) ^ (std::uint64_t{1} << 63));

  block_active_.assign(static_cast<size_t>(devices * devices), 0);
  for (Count d = 0; d < devices; ++d) {
    const auto visible = visible_keys(shard(d));
    for (Count r = 0; r < devices; ++r) {
      const Count source = model::kv_source(d, r, devices);
      block_active_[static_cast<size_t>(r * devices + d)] = any_visible(visible, shard(source).positions) ? 1 : 0;
    }
  }
}

double RingProblem::scale() const { return 1.0 / std::sqrt(static_cast<double>(case_.head_dim)); }

std::vector<Position> positions_in_rank_order(const RingProblem& problem) {
  std::vector<Position> positions;
  for (Count d = 0; d < problem.ring_case().devices; ++d) {
    const std::vector<Position>& own = problem.shard(d).positions;
    positions.insert(positions.end(), own.begin(), own.end());
  }
  return positions;
}

}  // namespace stripesim::validate
