#pragma once
// Block pairs of a ring that must count alike, counted once. Under a mask that depends only on
// q - k (causal, window, bidirectional), the work of a (query block, key block) pair follows from
// the blocks' shapes in local order (each run's stride, length and local start) and, for every
// pair of runs, either how they relate as wholes (every pair allowed, or none) or, where the mask
// cuts through them, the offset between their first positions. A striped ring has at most 2N - 1
// such classes among its N^2 pairs (one per difference of devices), a causal zigzag or contiguous
// ring three (keys all earlier, all later, or the device's own), so a 1024-device ring counts
// thousands of pairs, not a million. Thread-safe: count_work's columns look pairs up from
// several threads.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_matrix.hpp"

namespace stripesim::model::detail {

// What the work model records for one (round, device): the allowed pairs, the active and partial
// tiles, and (when asked) each query tile's full and partial key tiles in local order, and each
// key tile's full and partial query tiles.
struct PairOutcome {
  Count elements = 0;
  Count active = 0;
  Count partial = 0;
  Count call_queries = 0;    // a sliced call's queries (CallSlicing::runs), 0: the device's whole block
  QueryTileProfile rows;     // moved into the memo's profiles once stored there
  KeyTileProfile columns;    // the same
  // Set by the memo: one address per distinct profile among its outcomes (a striped ring's 2N - 1
  // classes hold a handful), so profiles are told apart without comparing them.
  const QueryTileProfile* distinct_rows = nullptr;
  const KeyTileProfile* distinct_columns = nullptr;

  [[nodiscard]] const QueryTileProfile& profile() const { return distinct_rows ? *distinct_rows : rows; }
  [[nodiscard]] const KeyTileProfile& key_profile() const { return distinct_columns ? *distinct_columns : columns; }
};

struct ProfileHash {
  size_t operator()(const QueryTileProfile& profile) const;
};

class BlockPairMemo {
 public:
  // Pairs of more run pairs than this are counted as they come: their keys would cost about what
  // counting does (permutations, balanced layouts).
  static constexpr size_t kMaxRunPairs = 16;

  // An empty memo (key() always false) unless the mask depends on q - k alone and the tiles do
  // not follow documents (varlen).
  BlockPairMemo(const Layout& layout, const Mask& mask, bool varlen);

  struct Key {
    std::array<std::int64_t, 2 + kMaxRunPairs> values;  // the first `size` hold the key
    std::uint8_t size = 0;
    friend bool operator==(const Key& a, const Key& b) {
      if (a.size != b.size) return false;
      for (std::uint8_t i = 0; i < a.size; ++i) {  // a few values: a call to memcmp costs more
        if (a.values[i] != b.values[i]) return false;
      }
      return true;
    }
  };

  // Writes the pair's key to `key`; false when the pair is counted as it comes.
  [[nodiscard]] bool key(DeviceId query_device, DeviceId key_device, Key& key) const;

  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  // The outcomes one thread has met, found again without taking a lock (two threads of a striped
  // ring meet the same offsets at the same rounds and would wait on each other's shard).
  using ThreadCache = std::unordered_map<Key, const PairOutcome*, KeyHash>;

  // The outcome stored under `key`, counted by `count(PairOutcome&)` the first time; null when
  // the key is new and the memo full (the caller counts it). A stored outcome lives as long as
  // the memo. Two threads meeting a new key at once may both count it; the first stored is kept,
  // and both counts are equal.
  template <typename CountPair>
  const PairOutcome* find_or_count(const Key& key, ThreadCache& cache, const CountPair& count) {
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
    Shard& shard = shards_[KeyHash{}(key) % shards_.size()];
    const PairOutcome* found = nullptr;
    {
      const std::lock_guard lock(shard.mutex);
      if (const auto it = shard.outcomes.find(key); it != shard.outcomes.end()) found = it->second.get();
    }
    if (!found) {
      if (stored_.load(std::memory_order_relaxed) >= capacity_) return nullptr;
      auto outcome = std::make_unique<PairOutcome>();
      count(*outcome);
      outcome->distinct_rows = &intern(std::move(outcome->rows));
      outcome->rows = {};
      outcome->distinct_columns = &intern(std::move(outcome->columns));
      outcome->columns = {};
      const std::lock_guard lock(shard.mutex);
      const auto [it, added] = shard.outcomes.try_emplace(key, std::move(outcome));
      if (added) stored_.fetch_add(1, std::memory_order_relaxed);
      found = it->second.get();
    }
    cache.emplace(key, found);
    return found;
  }

 private:
  struct Shard {
    std::mutex mutex;
    std::unordered_map<Key, std::unique_ptr<PairOutcome>, KeyHash> outcomes;
  };

  const QueryTileProfile& intern(QueryTileProfile rows);

  // A query run's reach: every key in [all_from, all_to] is seen by each of its queries, none
  // outside [any_from, any_to] by any (the mask's ends never decrease).
  struct Reach {
    Position first = 0;
    Position all_from = 0;
    Position all_to = 0;
    Position any_from = 0;
    Position any_to = 0;
  };
  struct KeyRun {
    Position first = 0;
    Position last = 0;
  };

  // Device d's runs are [run_begin_[d], run_begin_[d + 1]) of both (one array each, so that a
  // ring of thousands of devices reads them without chasing a pointer per device).
  std::vector<size_t> run_begin_;  // empty when the memo is off
  std::vector<Reach> reach_;       // the runs as queries
  std::vector<KeyRun> key_runs_;   // the runs as keys
  std::vector<std::int64_t> shape_;     // per device: the id of its runs' local shape
  std::array<Shard, 64> shards_;
  // At most a few outcomes a device: the classes of the layouts the memo is for (2N - 1 striped,
  // about 2W/c + 3 zigzag under a window of W) fit, and a layout whose pairs hardly repeat (blocks
  // of few runs placed at random) keeps the memory of counting without it.
  size_t capacity_;
  std::atomic<size_t> stored_{0};
  std::mutex profiles_mutex_;
  std::unordered_set<QueryTileProfile, ProfileHash> profiles_;  // nodes: addresses stay valid
};

}  // namespace stripesim::model::detail
