#include "stripesim/validate/reference_cache.hpp"

#include <algorithm>

namespace stripesim::validate {

ReferenceKey ReferenceKey::of(const RingCase& c, ReferenceOf what) {
  return {c.seq_len, c.heads, c.kv_heads, c.head_dim, c.mask, c.seed, c.q_scale, c.precision, what};
}

DenseReference ReferenceCache::get(const RingCase& ring_case, const std::function<std::vector<double>()>& compute,
                                   ReferenceOf what) {
  const ReferenceKey key = ReferenceKey::of(ring_case, what);
  const std::lock_guard lock(mutex_);
  const auto hit = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (hit != entries_.end()) {
    entries_.splice(entries_.begin(), entries_, hit);  // now the most recently used
    return hit->reference;
  }
  auto reference = std::make_shared<const std::vector<double>>(compute());
  const auto bytes = static_cast<std::int64_t>(reference->size() * sizeof(double));
  if (bytes > max_bytes_) return reference;
  while (!entries_.empty() && bytes_ + bytes > max_bytes_) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
  entries_.push_front({key, reference, bytes});
  bytes_ += bytes;
  return reference;
}

std::size_t ReferenceCache::entries() const {
  const std::lock_guard lock(mutex_);
  return entries_.size();
}

std::int64_t ReferenceCache::bytes() const {
  const std::lock_guard lock(mutex_);
  return bytes_;
}

void ReferenceCache::clear() {
  const std::lock_guard lock(mutex_);
  entries_.clear();
  bytes_ = 0;
}

ReferenceCache& shared_reference_cache() {
  static ReferenceCache cache;
  return cache;
}

}  // namespace stripesim::validate
