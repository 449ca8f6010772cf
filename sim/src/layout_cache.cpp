#include "stripesim/sim/layout_cache.hpp"

namespace stripesim::sim {

const model::Layout& LazyLayout::get() const {
  std::call_once(built_, [this] { layout_.emplace(plan_.build()); });
  return *layout_;
}

std::shared_ptr<const LazyLayout> LayoutCache::get(const std::string& key, model::LayoutPlan plan) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto [it, added] = layouts_.try_emplace(key);
  if (added) it->second = std::make_shared<const LazyLayout>(std::move(plan));
  return it->second;
}

}  // namespace stripesim::sim
