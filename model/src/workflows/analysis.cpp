#include "stripesim/model/workflows/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <utility>
#include <optional>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/work/document_layouts.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::model {
AnalyzeConfig analyze_config_from_json(const nlohmann::json& doc, AnalyzeConfig base, const std::string& label) {
  const JsonFields f(doc, label);
  f.allow_only({"description", "seq_len", "devices", "tile", "tiling", "layouts", "mask", "pad_documents"});
  base.seq_len = f.positive_count_or("seq_len", base.seq_len);
  base.devices = f.positive_count_or("devices", base.devices);
  if (f.has("tile")) base.tile = f.parsed("tile", parse_tile_shape);
  if (f.has("tiling")) base.tiling = parse_tiling(f.string("tiling"), f.where("tiling"));
  base.mask = f.string_or("mask", base.mask);
  base.layouts = f.distinct_string_list_or("layouts", base.layouts, layout_identity);
  base.pad_documents = f.boolean_or("pad_documents", base.pad_documents);
  if (base.layouts.empty()) throw InputError(fmt::format("{}: needs at least one layout", f.where("layouts")));
  return base;
}

AnalysisPlan plan_analysis(const AnalyzeConfig& config) {
  // Three N x N matrices per layout are kept and printed: beyond this they need gigabytes.
  if (config.devices < 1 || config.devices > kMaxAnalyzeDevices) {
    throw InputError(Input::devices, std::to_string(config.devices),
                     fmt::format("must be between 1 and {} (analyze keeps N x N matrices per layout)", kMaxAnalyzeDevices));
  }
  return plan_layouts(config);
}

AnalysisPlan plan_layouts(const AnalyzeConfig& config) {
  if (config.layouts.empty()) throw InputError(Input::layouts, "", "needs at least one layout");
  // Validate the mask and every layout before the first count.
  AnalysisPlan plan{config, parse_mask(config.mask, config.seq_len), config.seq_len, 0, {}};
  if (config.pad_documents) {
    PaddedDocuments padded = pad_documents(plan.mask, config.devices);
    plan.mask = std::move(padded.mask);
    plan.padding_tokens = padded.padding_tokens;
    plan.seq_len = padded.seq_len;
  }
  const LayoutContext context{&plan.mask, config.tile, config.tiling};
  plan.layouts.reserve(config.layouts.size());
  try {
    for (const auto& spec : config.layouts) plan.layouts.push_back(plan_layout(spec, plan.seq_len, config.devices, context));
  } catch (const IndivisibleLength& e) {
    throw for_every_layout(e, config.layouts, config.devices);
  }
  return plan;
}

namespace {

// Speedup and imbalance divide by each layout's own total, so a layout that needs many more tiles
// in all (striped on packed documents) still looks balanced; dividing every layout by one bound
// ranks them by what their busiest device really computes.
void rank_against_tile_bound(Analysis& analysis) {
  Count fewest = analysis.results.front().tiles.total;
  for (const LayoutResult& r : analysis.results) fewest = std::min(fewest, r.tiles.total);
  analysis.tile_bound = static_cast<double>(fewest) / static_cast<double>(analysis.config.devices);
  for (size_t i = 0; i < analysis.results.size(); ++i) {
    LayoutResult& r = analysis.results[i];
    // Every mask allows each query its own key (n >= 1), so every layout has a tile and the bound is positive.
    r.tiles_vs_bound = static_cast<double>(r.tiles.slowest_device) / analysis.tile_bound;
    r.tiles_lockstep_vs_bound = static_cast<double>(r.tiles.lockstep) / analysis.tile_bound;
    const LayoutResult& best = analysis.results[analysis.best];
    // Compared in exact counts, not ratios, so that equal layouts tie and the first listed wins.
    if (std::pair(r.tiles.slowest_device, r.tiles.lockstep) < std::pair(best.tiles.slowest_device, best.tiles.lockstep)) {
      analysis.best = i;
    }
  }
}

}  // namespace

Analysis run_analysis(const AnalyzeConfig& config, unsigned threads) { return run_analysis(plan_analysis(config), threads); }

Analysis run_analysis(const AnalysisPlan& plan, unsigned threads) {
  const AnalyzeConfig& config = plan.config;
  Analysis analysis{config, plan.mask, plan.seq_len, plan.padding_tokens, {}, 0, 0};
  const Count n = analysis.seq_len;
  std::optional<Work> contiguous;
  for (const LayoutPlan& planned : plan.layouts) {
    const Layout layout = planned.build(threads);
    LayoutResult result{
        layout.name(), count_work(layout, analysis.mask, config.tile, threads, WorkDetail::totals, config.tiling), {}, {},
        0, 0, 0, 0, {}};
    result.elements = compute_metrics(result.work.unmasked_elements);
    result.tiles = compute_metrics(result.work.active_tiles);
    if (tiling_matters(config.tiling, analysis.mask.kind())) result.document_pieces = document_pieces(layout, analysis.mask);
    if (layout.kind() == LayoutKind::contiguous && !contiguous) contiguous = result.work;
    analysis.results.push_back(std::move(result));
  }
  // The reference is plain Ring Attention, computed even when it was not asked for.
  if (!contiguous) {
    contiguous = count_work(Layout::contiguous(n, config.devices), analysis.mask, config.tile, threads, WorkDetail::totals,
                            config.tiling);
  }
  const Metrics reference_elements = compute_metrics(contiguous->unmasked_elements);
  const Metrics reference_tiles = compute_metrics(contiguous->active_tiles);
  for (LayoutResult& result : analysis.results) {
    result.elements_lockstep_speedup_vs_contiguous =
        static_cast<double>(reference_elements.lockstep) / static_cast<double>(result.elements.lockstep);
    result.tiles_lockstep_speedup_vs_contiguous =
        static_cast<double>(reference_tiles.lockstep) / static_cast<double>(result.tiles.lockstep);
  }
  rank_against_tile_bound(analysis);
  return analysis;
}

nlohmann::ordered_json mask_to_json(const Mask& mask, const std::string& spec) {
  // The kind alone, so a reader can test kind == "window"; a width or prefix length has a field
  // of its own (below).
  nlohmann::ordered_json out{{"spec", spec}, {"kind", mask_kind_name(mask.kind())}};
  // Each kind's own fields (reports/schema/analyze.schema.json lists them under "mask").
  switch (mask.kind()) {
    case MaskKind::causal:
    case MaskKind::bidirectional: break;
    case MaskKind::window: out["window"] = mask.window_width(); break;
    case MaskKind::prefix: out["prefix"] = mask.prefix_length(); break;
    case MaskKind::documents:
      if (mask.windowed()) out["window"] = mask.window_width();
      out["document_lengths"] = mask.document_lengths();
      if (mask.padded()) out["document_padding"] = mask.document_padding();
      break;
  }
  return out;
}

}  // namespace stripesim::model
