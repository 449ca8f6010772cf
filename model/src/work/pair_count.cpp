#include "stripesim/model/work/pair_count.hpp"

#include <algorithm>
#include <cstdint>

namespace stripesim::model {
namespace {

// Every term floor_sum adds is part of its result, which the callers bound by c^2 <= 2^62, and
// the reduced numerator stays below m * n <= 2^62: unsigned 64-bit arithmetic is exact.
using Wide = std::uint64_t;

Count ceil_div_nonneg(Count numerator, Count denominator) { return (numerator + denominator - 1) / denominator; }

// sum_{i=0}^{length-1} clamp(floor((a*i + b) / m) + 1, 0, cap) for a, m >= 1 and any b:
// the number of keys of a run with stride m and `cap` keys at or below a query sequence that
// grows by a per step. The summand never decreases, so it is 0, then a plain floor sum, then cap.
Count clamped_floor_sum(Count length, Count m, Count a, Count b, Count cap) {
  // First index whose summand is >= 1: a*i + b >= 0.
  const Count begin = std::min(length, b >= 0 ? 0 : ceil_div_nonneg(-b, a));
  // First index whose summand reaches cap: a*i + b >= (cap - 1) * m.
  const Count threshold = (cap - 1) * m - b;
  const Count end = std::max(begin, std::min(length, threshold <= 0 ? 0 : ceil_div_nonneg(threshold, a)));
  Count sum = (length - end) * cap;
  if (end > begin) sum += floor_sum(end - begin, m, a, a * begin + b) + (end - begin);
  return sum;
}

}  // namespace

Count floor_sum(Count count, Count m, Count a, Count b) {
  Wide n = static_cast<Wide>(count);
  Wide mod = static_cast<Wide>(m);
  Wide slope = static_cast<Wide>(a);
  Wide offset = static_cast<Wide>(b);
  Wide sum = 0;
  while (n > 0) {
    if (slope >= mod) {
      sum += n * (n - 1) / 2 * (slope / mod);
      slope %= mod;
    }
    if (offset >= mod) {
      sum += n * (offset / mod);
      offset %= mod;
    }
    const Wide top = slope * n + offset;
    if (top < mod) break;
    // Swap the roles of rows and columns of the lattice-point count under the line.
    n = top / mod;
    offset = top % mod;
    std::swap(mod, slope);
  }
  return static_cast<Count>(sum);
}

Count keys_at_or_below(const Run& run, Position x) {
  if (x < run.first) return 0;
  return std::min(run.length, (x - run.first) / run.stride + 1);
}

Count count_run_pairs(const Run& queries, const Run& keys, const Mask& mask) {
  if (queries.length == 0 || keys.length == 0) return 0;
  // Keys at or below highest_key(q), summed over the run's queries.
  Count upper = 0;
  switch (mask.kind()) {
    case MaskKind::bidirectional: upper = queries.length * keys.length; break;
    case MaskKind::causal:
    case MaskKind::window:
    case MaskKind::documents:
      upper = clamped_floor_sum(queries.length, keys.stride, queries.stride, queries.first - keys.first, keys.length);
      break;
    case MaskKind::prefix: {
      // Queries inside the prefix see every key of it; from q = P on, the causal floor sum.
      const Position p = mask.prefix_length();
      const Count in_prefix = queries.first >= p ? 0 : std::min(queries.length, ceil_div_nonneg(p - queries.first, queries.stride));
      upper = in_prefix * keys_at_or_below(keys, p - 1);
      if (in_prefix < queries.length) {
        upper += clamped_floor_sum(queries.length - in_prefix, keys.stride, queries.stride,
                                   queries.first + in_prefix * queries.stride - keys.first, keys.length);
      }
      break;
    }
  }
  // Minus the keys below lowest_key(q).
  Count lower = 0;
  switch (mask.kind()) {
    case MaskKind::causal:
    case MaskKind::bidirectional:
    case MaskKind::prefix: break;
    case MaskKind::window:
      // Keys at or below q - W.
      lower = clamped_floor_sum(queries.length, keys.stride, queries.stride,
                                queries.first - mask.effective_window() - keys.first, keys.length);
      break;
    case MaskKind::documents: {
      // lowest_key is the document start, constant over the queries inside one document, until a
      // window's q - W + 1 passes it (from q = start + W on): from there the window's floor sum.
      // A padding query sees nothing: every key at or below it is below its lowest key.
      const auto& starts = mask.document_starts();
      const Position first_q = queries.first;
      const Position last_q = queries.last();
      const Count window = mask.windowed() ? mask.effective_window() : 0;
      const auto first_at_or_after = [&](Position p) {
        return p <= first_q ? Count{0} : std::min(queries.length, ceil_div_nonneg(p - first_q, queries.stride));
      };
      const auto keys_at_or_below_queries = [&](Count i_begin, Count i_end, Count offset) {
        return clamped_floor_sum(i_end - i_begin, keys.stride, queries.stride,
                                 first_q + i_begin * queries.stride - offset - keys.first, keys.length);
      };
      for (size_t doc = mask.document_of(first_q); doc + 1 < starts.size() && starts[doc] <= last_q; ++doc) {
        const Position start = starts[doc];
        const Count i_begin = first_at_or_after(start);
        const Count i_padding = first_at_or_after(mask.padding_start(doc));
        const Count i_end = first_at_or_after(starts[doc + 1]);
        const Count i_window =
            window > 0 ? std::clamp(first_at_or_after(start + window), i_begin, i_padding) : i_padding;
        if (i_window > i_begin && start > keys.first) lower += (i_window - i_begin) * keys_at_or_below(keys, start - 1);
        if (i_padding > i_window) lower += keys_at_or_below_queries(i_window, i_padding, window);
        if (i_end > i_padding) lower += keys_at_or_below_queries(i_padding, i_end, 0);
      }
      break;
    }
  }
  return upper - lower;
}

Count count_sorted_pairs(std::span<const Position> queries_sorted, std::span<const Position> keys_sorted,
                         const Mask& mask) {
  size_t below_hi = 0;  // keys <= highest_key(q)
  size_t below_lo = 0;  // keys <  lowest_key(q)
  const size_t key_count = keys_sorted.size();
  Count pairs = 0;
  LowestKeyWalk lowest_key(mask);
  for (const Position q : queries_sorted) {
    const Position hi = mask.highest_key(q);
    const Position lo = lowest_key(q);
    while (below_hi < key_count && keys_sorted[below_hi] <= hi) ++below_hi;
    while (below_lo < key_count && keys_sorted[below_lo] < lo) ++below_lo;
    if (below_hi > below_lo) pairs += static_cast<Count>(below_hi - below_lo);
  }
  return pairs;
}

}  // namespace stripesim::model
