#pragma once
// Layouts that simulations share, each built when first used. A plan sets up every mesh of its
// GPUs, and many never run: too big for memory, or beaten on a bound. The meshes that differ in
// -M and -D alone ring the same layout. A layout searched for, not written down (balanced over
// 1024 devices and millions of tokens), takes seconds to build and tens of megabytes to hold:
// built only for a mesh that runs, once for all the meshes that ring it.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/layout_spec.hpp"

namespace stripesim::sim {

// A layout checked (model::plan_layout raised every error it can) and built on first use, once,
// whichever thread asks first; the others wait for that build.
class LazyLayout {
 public:
  explicit LazyLayout(model::LayoutPlan plan) : plan_(std::move(plan)) {}
  [[nodiscard]] const model::Layout& get() const;

 private:
  model::LayoutPlan plan_;
  mutable std::once_flag built_;
  mutable std::optional<model::Layout> layout_;
};

// One LazyLayout per key, for every simulation planned with the cache.
class LayoutCache {
 public:
  // The layout stored under `key`, or `plan` stored under it. Safe from several threads.
  [[nodiscard]] std::shared_ptr<const LazyLayout> get(const std::string& key, model::LayoutPlan plan);

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const LazyLayout>> layouts_;
};

}  // namespace stripesim::sim
