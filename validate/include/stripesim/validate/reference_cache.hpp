#pragma once
// Dense references, computed once per problem and shared by every case that has the same
// answer. A validation matrix runs each (sequence length, mask) under several layouts, device
// counts and tiles; the dense attention in original order depends on none of those, and on a
// GPU-sized case it is the most expensive thing the validator computes. Entries are bounded by
// bytes (a 64k x 16 x 128 reference is 1 GiB of doubles), the least recently used evicted first.
#include <compare>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stripesim/validate/ring_case.hpp"

namespace stripesim::validate {

// What a reference is of: the output (reference_attention) or, for a backward case, the gradients
// (reference_gradients).
enum class ReferenceOf { output, gradients };

// Exactly what a reference depends on: the inputs (sizes, seed and Q's scale), the mask, and the precision
// the inputs are rounded to. The host (fp32, fp64) and GPU (bf16, fp16) backends compute in
// disjoint precisions, so one key never stands for both kinds of reference.
struct ReferenceKey {
  Count seq_len = 0;
  Count heads = 0;
  Count kv_heads = 0;
  Count head_dim = 0;
  std::string mask;  // the spec as given: two spellings of one mask are two entries, never a wrong hit
  std::uint64_t seed = 0;
  double q_scale = 1;
  Precision precision = Precision::fp32;
  ReferenceOf what = ReferenceOf::output;

  [[nodiscard]] static ReferenceKey of(const RingCase& ring_case, ReferenceOf what = ReferenceOf::output);
  friend auto operator<=>(const ReferenceKey&, const ReferenceKey&) = default;
};

using DenseReference = std::shared_ptr<const std::vector<double>>;

class ReferenceCache {
 public:
  static constexpr std::int64_t kDefaultMaxBytes = std::int64_t{8} << 30;  // 8 GiB of host memory

  explicit ReferenceCache(std::int64_t max_bytes = kDefaultMaxBytes) : max_bytes_(max_bytes) {}

  // The reference of `ring_case`'s key: the stored one, or compute()'s, stored. Storing evicts
  // the least recently used entries until the rest fit in max_bytes; a reference larger than
  // max_bytes on its own is returned without being stored. The caller's pointer stays valid
  // after eviction. Thread-safe; compute() runs under the lock, so a reference is computed once.
  [[nodiscard]] DenseReference get(const RingCase& ring_case, const std::function<std::vector<double>()>& compute,
                                   ReferenceOf what = ReferenceOf::output);

  [[nodiscard]] std::size_t entries() const;
  [[nodiscard]] std::int64_t bytes() const;
  void clear();

 private:
  struct Entry {
    ReferenceKey key;
    DenseReference reference;
    std::int64_t bytes = 0;
  };

  std::int64_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::int64_t bytes_ = 0;
};

// The process's cache, the one run_case uses.
[[nodiscard]] ReferenceCache& shared_reference_cache();

}  // namespace stripesim::validate
