#include "block_pair_memo.hpp"

#include <limits>
#include <map>

namespace stripesim::model::detail {

namespace {

// A run pair's code in a key: how the runs relate as wholes, or the offset between their firsts
// (|offset| < n, so it never meets the two codes below).
constexpr std::int64_t kEveryPairAllowed = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kNoPairAllowed = kEveryPairAllowed + 1;

bool depends_on_offset_alone(MaskKind kind) {
  switch (kind) {
    case MaskKind::causal:
    case MaskKind::window:
    case MaskKind::bidirectional: return true;
    case MaskKind::documents: return false;  // where the documents start is not an offset
  }
  return false;
}

}  // namespace

BlockPairMemo::BlockPairMemo(const Layout& layout, const Mask& mask, bool varlen)
    : mask_(mask), capacity_(4 * static_cast<size_t>(layout.devices())) {
  if (varlen || !depends_on_offset_alone(mask.kind())) return;
  const Count devices = layout.devices();
  std::map<std::vector<std::array<std::int64_t, 3>>, std::int64_t> shapes;
  runs_.reserve(static_cast<size_t>(devices));
  shape_.reserve(static_cast<size_t>(devices));
  for (Count d = 0; d < devices; ++d) {
    runs_.push_back(layout.runs(d));
    std::vector<std::array<std::int64_t, 3>> shape;
    for (const Run& run : runs_.back()) shape.push_back({run.stride, run.length, run.local_begin});
    shape_.push_back(shapes.try_emplace(std::move(shape), static_cast<std::int64_t>(shapes.size())).first->second);
  }
}

std::optional<BlockPairMemo::Key> BlockPairMemo::key(DeviceId query_device, DeviceId key_device) const {
  if (runs_.empty()) return std::nullopt;
  const auto& queries = runs_[static_cast<size_t>(query_device)];
  const auto& keys = runs_[static_cast<size_t>(key_device)];
  if (queries.size() * keys.size() > kMaxRunPairs) return std::nullopt;
  Key key;
  key.values[key.size++] = shape_[static_cast<size_t>(query_device)];
  key.values[key.size++] = shape_[static_cast<size_t>(key_device)];
  for (const Run& q : queries) {
    // Every key of [lowest_key(q.last), highest_key(q.first)] is seen by every query of the run,
    // and none outside [lowest_key(q.first), highest_key(q.last)] by any (the ends never decrease).
    const Position all_from = mask_.lowest_key(q.last());
    const Position all_to = mask_.highest_key(q.first);
    const Position any_from = mask_.lowest_key(q.first);
    const Position any_to = mask_.highest_key(q.last());
    for (const Run& k : keys) {
      std::int64_t code = k.first - q.first;
      if (k.first >= all_from && k.last() <= all_to) code = kEveryPairAllowed;
      if (k.first > any_to || k.last() < any_from) code = kNoPairAllowed;
      key.values[key.size++] = code;
    }
  }
  return key;
}

const QueryTileProfile& BlockPairMemo::intern(QueryTileProfile rows) {
  const std::lock_guard lock(profiles_mutex_);
  return *profiles_.insert(std::move(rows)).first;
}

size_t ProfileHash::operator()(const QueryTileProfile& profile) const {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the counts
  for (const QueryTileLoad& load : profile) {
    for (const Count value : {load.full, load.partial}) {
      h ^= static_cast<std::uint64_t>(value);
      h *= 1099511628211ull;
    }
  }
  return static_cast<size_t>(h);
}

size_t BlockPairMemo::KeyHash::operator()(const Key& key) const {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
  for (size_t i = 0; i < key.size; ++i) {
    h ^= static_cast<std::uint64_t>(key.values[i]);
    h *= 1099511628211ull;
  }
  return static_cast<size_t>(h ^ (h >> 29));
}

}  // namespace stripesim::model::detail
