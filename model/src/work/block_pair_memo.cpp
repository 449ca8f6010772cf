#include "block_pair_memo.hpp"

#include <array>
#include <limits>
#include <map>

namespace stripesim::model::detail {

namespace {

// A run pair's code in a key: how the runs relate as wholes, or the offset between their firsts
// (|offset| < n, so it never meets the two codes below).
constexpr std::int64_t kEveryPairAllowed = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kNoPairAllowed = kEveryPairAllowed + 1;

// FNV-1a over 64-bit values, for both hashes below.
constexpr std::uint64_t kFnvOffset = 1469598103934665603ull;
constexpr std::uint64_t fnv1a(std::uint64_t h, std::int64_t value) {
  return (h ^ static_cast<std::uint64_t>(value)) * 1099511628211ull;
}

bool depends_on_offset_alone(MaskKind kind) {
  switch (kind) {
    case MaskKind::causal:
    case MaskKind::window:
    case MaskKind::bidirectional: return true;
    case MaskKind::documents: return false;  // where the documents start is not an offset
    case MaskKind::prefix: return false;     // nor where the prefix ends
  }
  return false;
}

}  // namespace

BlockPairMemo::BlockPairMemo(const Layout& layout, const Mask& mask, bool varlen)
    : capacity_(4 * static_cast<size_t>(layout.devices())) {
  if (varlen || !depends_on_offset_alone(mask.kind())) return;
  const Count devices = layout.devices();
  std::map<std::vector<std::array<std::int64_t, 3>>, std::int64_t> shapes;
  shape_.reserve(static_cast<size_t>(devices));
  run_begin_.push_back(0);
  for (Count d = 0; d < devices; ++d) {
    std::vector<std::array<std::int64_t, 3>> shape;
    for (const Run& run : layout.runs(d)) {
      shape.push_back({run.stride, run.length, run.local_begin});
      reach_.push_back({run.first, mask.lowest_key(run.last()), mask.highest_key(run.first), mask.lowest_key(run.first),
                        mask.highest_key(run.last())});
      key_runs_.push_back({run.first, run.last()});
    }
    run_begin_.push_back(reach_.size());
    shape_.push_back(shapes.try_emplace(std::move(shape), static_cast<std::int64_t>(shapes.size())).first->second);
  }
}

bool BlockPairMemo::key(DeviceId query_device, DeviceId key_device, Key& key) const {
  if (run_begin_.empty()) return false;
  const auto q = static_cast<size_t>(query_device);
  const auto k = static_cast<size_t>(key_device);
  const size_t query_runs = run_begin_[q + 1] - run_begin_[q];
  const size_t key_runs = run_begin_[k + 1] - run_begin_[k];
  if (query_runs * key_runs > kMaxRunPairs) return false;
  auto& values = key.values;
  std::uint8_t size = 0;
  values[size++] = shape_[q];
  values[size++] = shape_[k];
  for (size_t i = run_begin_[q]; i < run_begin_[q + 1]; ++i) {
    const Reach& queries = reach_[i];
    for (size_t j = run_begin_[k]; j < run_begin_[k + 1]; ++j) {
      const KeyRun& keys = key_runs_[j];
      std::int64_t code = keys.first - queries.first;
      if (keys.first >= queries.all_from && keys.last <= queries.all_to) code = kEveryPairAllowed;
      if (keys.first > queries.any_to || keys.last < queries.any_from) code = kNoPairAllowed;
      values[size++] = code;
    }
  }
  key.size = size;
  return true;
}

const QueryTileProfile& BlockPairMemo::intern(QueryTileProfile rows) {
  const std::lock_guard lock(profiles_mutex_);
  return *profiles_.insert(std::move(rows)).first;
}

size_t ProfileHash::operator()(const QueryTileProfile& profile) const {
  // Four interleaved chains, folded at the end: one chain waits a multiply per value, and a
  // packed-documents ring hashes a million profiles of dozens of rows each.
  std::array<std::uint64_t, 4> h{kFnvOffset, kFnvOffset + 1, kFnvOffset + 2, kFnvOffset + 3};
  const size_t rows = profile.size();
  size_t i = 0;
  for (; i + 2 <= rows; i += 2) {
    h[0] = fnv1a(h[0], profile[i].full);
    h[1] = fnv1a(h[1], profile[i].partial);
    h[2] = fnv1a(h[2], profile[i + 1].full);
    h[3] = fnv1a(h[3], profile[i + 1].partial);
  }
  if (i < rows) {
    h[0] = fnv1a(h[0], profile[i].full);
    h[1] = fnv1a(h[1], profile[i].partial);
  }
  std::uint64_t folded = fnv1a(kFnvOffset, static_cast<std::int64_t>(rows));
  for (const std::uint64_t lane : h) folded = fnv1a(folded, static_cast<std::int64_t>(lane ^ (lane >> 32)));
  return static_cast<size_t>(folded);
}

size_t BlockPairMemo::KeyHash::operator()(const Key& key) const {
  std::uint64_t h = kFnvOffset;
  for (size_t i = 0; i < key.size; ++i) h = fnv1a(h, key.values[i]);
  return static_cast<size_t>(h ^ (h >> 29));  // the high bits folded in: shards take h % 64
}

}  // namespace stripesim::model::detail
