#include "stripesim/model/flops/tms.hpp"

#include <fmt/format.h>

#include "stripesim/model/flops/attention_heads.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::model {

const LayoutTms& TmsResult::layout(const std::string& name) const {
  for (const auto& entry : layouts) {
    if (entry.layout == name) return entry;
  }
  throw std::out_of_range("TmsResult: no layout " + name);
}

std::pair<Metrics, Metrics> WorkMetricsCache::get(const TmsPlan& plan, size_t index) {
  const TmsRequest& q = plan.request;
  const Key key{tms_layouts(q)[index], q.seq_len, q.devices, plan.tile.query, plan.tile.key, q.tiling, q.mask};
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = entries_.find(key); it != entries_.end()) return it->second;
  }
  // One thread: the sweep runs its points side by side.
  const Work work = count_work(plan.layouts[index].build(1), plan.mask, plan.tile, 1, WorkDetail::totals, q.tiling);
  std::pair<Metrics, Metrics> metrics{compute_metrics(work.unmasked_elements), compute_metrics(work.active_tiles)};
  const std::lock_guard lock(mutex_);
  entries_.emplace(key, metrics);
  return metrics;
}

namespace {

// What plan_tms checks before the mask and the layouts: M, and that recomputation has a backward.
void check_request_settings(const TmsRequest& request) {
  require_backward_for_recompute(request.pass, request.recompute);
  // TMS counts every (round, device) of every layout: N^2 block pairs, as simulate does, so the
  // same bound (16384 devices took minutes and gigabytes).
  constexpr Count kMaxTmsDevices = 4096;
  if (request.devices < 1 || request.devices > kMaxTmsDevices) {
    throw InputError(Input::devices, std::to_string(request.devices),
                     fmt::format("must be between 1 and {} (TMS counts all N x N block pairs)", kMaxTmsDevices));
  }
  if (request.model_parallel < 1) {
    throw InputError(Input::model_parallel, std::to_string(request.model_parallel), "must be at least 1");
  }
  // The three are always there: given again, a layout would print as a second, identical row.
  for (const std::string& extra : request.extra_layouts) {
    const std::optional<LayoutKind> kind = layout_kind_of(extra);
    if (kind == LayoutKind::contiguous || kind == LayoutKind::striped || kind == LayoutKind::zigzag) {
      throw InputError(Input::layouts, extra, "is always compared (contiguous, striped, zigzag); list only layouts beyond them");
    }
  }
  // Split as the simulator splits them: query heads evenly, K/V heads evenly or replicated.
  (void)model_parallel_heads(request.model.heads, request.model_parallel, "heads", /*replicate=*/false);
  (void)model_parallel_heads(request.model.kv_heads, request.model_parallel, "K/V heads", /*replicate=*/true);
}

}  // namespace

std::vector<std::string> tms_layouts(const TmsRequest& request) {
  std::vector<std::string> layouts{"contiguous", "striped", "zigzag"};
  layouts.insert(layouts.end(), request.extra_layouts.begin(), request.extra_layouts.end());
  return layouts;
}

TmsPlan plan_tms(const TmsRequest& request) {
  check_request_settings(request);
  TmsPlan plan{request, request.tile.value_or(request.hardware.default_tile), parse_mask(request.mask, request.seq_len), {}};
  const LayoutContext context{&plan.mask, plan.tile, request.tiling};
  const std::vector<std::string> layouts = tms_layouts(request);
  try {
    for (const auto& name : layouts) plan.layouts.push_back(plan_layout(name, request.seq_len, request.devices, context));
  } catch (const IndivisibleLength& e) {
    throw for_every_layout(e, layouts, request.devices);
  }
  return plan;
}

TmsResult compute_tms(const TmsRequest& request, WorkMetricsCache* cache) { return run_tms(plan_tms(request), cache); }

TmsResult run_tms(const TmsPlan& plan, WorkMetricsCache* cache) {
  const TmsRequest& request = plan.request;
  WorkMetricsCache local_cache;
  WorkMetricsCache& metrics_cache = cache != nullptr ? *cache : local_cache;

  TmsResult result;
  result.request = request;
  result.tile = plan.tile;
  result.mask_kind = plan.mask.kind();
  result.attention_flop_weight = request.attention_flop_weight.value_or(request.hardware.attention_flop_weight);
  result.flops = count_flops(request.model, request.convention);
  result.multipliers = training_multipliers(request.convention, request.pass, request.recompute);
  const double c = static_cast<double>(request.seq_len / request.devices);
  const double m = static_cast<double>(request.model_parallel);
  result.non_attention_per_device = c * result.flops.non_attention_per_token * result.multipliers.matmul / m;
  const double attention_per_pair =
      result.attention_flop_weight * result.flops.attention_per_pair * result.multipliers.attention / m;
  const double tile_area = static_cast<double>(result.tile.query) * static_cast<double>(result.tile.key);

  const std::vector<std::string> names = tms_layouts(request);
  for (size_t i = 0; i < names.size(); ++i) {
    const auto [elements, tiles] = metrics_cache.get(plan, i);
    LayoutTms entry{names[i], 0, 0, elements, tiles, 0, 0};
    entry.time = result.non_attention_per_device + attention_per_pair * static_cast<double>(elements.lockstep);
    entry.time_tiles =
        result.non_attention_per_device + attention_per_pair * static_cast<double>(tiles.lockstep) * tile_area;
    result.layouts.push_back(std::move(entry));
  }
  const LayoutTms& contiguous = result.layouts.front();
  const double reference = contiguous.time;
  const double reference_tiles = contiguous.time_tiles;
  for (LayoutTms& entry : result.layouts) {
    entry.tms = reference / entry.time;
    entry.tms_tiles = reference_tiles / entry.time_tiles;
  }
  return result;
}

}  // namespace stripesim::model
