#pragma once
// Exact counting of the (query, key) pairs a mask allows between two sets of positions, without
// enumerating pairs. Two strategies, picked by cost:
//  - run pairs: both sets as arithmetic runs; for one query run and one key run the count is a
//    sum of clamped floors, done in O(log) by the floor_sum reduction (O(documents) more for a
//    documents mask). Structured layouts have one or two runs per block, so this is O(1).
//  - merge: both sets sorted; one pass with two pointers, valid because the mask's key interval
//    [lowest_key(q), highest_key(q)] never moves left as q grows. For arbitrary permutations.
#include <span>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"

namespace stripesim::model {

// sum_{i=0}^{count-1} floor((a*i + b) / m) for a, b >= 0, m >= 1, when the result and
// m * count stay below 2^63 (true for every block of a sequence of at most 2^31 tokens).
[[nodiscard]] Count floor_sum(Count count, Count m, Count a, Count b);

// Number of keys of `run` at positions <= x.
[[nodiscard]] Count keys_at_or_below(const Run& run, Position x);

// Pairs (q, k), q from `queries`, k from `keys`, with mask.allows(q, k).
[[nodiscard]] Count count_run_pairs(const Run& queries, const Run& keys, const Mask& mask);

// The same over sorted position lists.
[[nodiscard]] Count count_sorted_pairs(std::span<const Position> queries_sorted,
                                       std::span<const Position> keys_sorted, const Mask& mask);

}  // namespace stripesim::model
