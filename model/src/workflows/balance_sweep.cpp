#include "stripesim/model/workflows/balance_sweep.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/input_origins.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask_identity.hpp"
#include "stripesim/model/workflows/analysis.hpp"
#include "stripesim/model/workflows/grid.hpp"

namespace stripesim::model {

BalanceSweepSpec balance_spec_from_json(const nlohmann::json& doc, const std::string& label) {
  const JsonFields f(doc, label);
  f.allow_only({"kind", "description", "tiling", "groups"});
  if (f.string("kind") != "balance") throw InputError(fmt::format("{}: expected \"balance\"", f.where("kind")));
  BalanceSweepSpec spec;
  spec.label = label;
  spec.description = f.string_or("description", "");
  if (f.has("tiling")) spec.tiling = parse_tiling(f.string("tiling"), f.where("tiling"));
  const auto& groups = f.non_empty_array("groups");
  for (size_t i = 0; i < groups.size(); ++i) {
    const JsonFields g(groups[i], fmt::format("{} group {}", label, i));
    g.allow_only({"seq_lens", "devices", "masks", "tiles", "layouts", "pad_documents"});
    BalanceGroup group;
    group.seq_lens = g.count_list("seq_lens");
    group.devices = g.count_list("devices");
    group.masks = g.distinct_string_list_or("masks", {});
    if (group.masks.empty()) throw InputError(fmt::format("{}: expected a non-empty array", g.where("masks")));
    if (g.has("tiles")) group.tiles = g.parsed_list("tiles", parse_tile_shape);
    group.layouts = g.distinct_string_list_or("layouts", group.layouts, layout_identity);
    g.require_distinct("seq_lens", group.seq_lens);  // each axis of the grid once, as in a sweep
    g.require_distinct("devices", group.devices);
    g.require_distinct("tiles", group.tiles);
    group.pad_documents = g.boolean_or("pad_documents", group.pad_documents);
    if (group.pad_documents && std::ranges::none_of(group.masks, is_documents_mask)) {
      throw InputError(fmt::format("{}: needs a documents mask among \"masks\"", g.where("pad_documents")));
    }
    spec.groups.push_back(std::move(group));
  }
  return spec;
}

namespace {

// A group's axes, in grid order: sequence lengths, devices, masks, tiles.
std::array<size_t, 4> axes(const BalanceGroup& g) { return {g.seq_lens.size(), g.devices.size(), g.masks.size(), g.tiles.size()}; }

}  // namespace

Count count_points(const BalanceSweepSpec& spec) {
  Count total = 0;
  for (const auto& g : spec.groups) total += static_cast<Count>(grid_points(axes(g)));
  return total;
}

BalanceSweepPlan plan_balance_sweep(const BalanceSweepSpec& spec) {
  BalanceSweepPlan plan;
  plan.points.reserve(static_cast<size_t>(count_points(spec)));
  // A point and layout of two groups would print its row twice: told by the mask and layout they
  // are, however spelled (window:1k and window:1024, ptrr:1k and ptrr:1024).
  std::map<std::tuple<Count, Count, std::string, Count, Count, bool, std::string>, size_t> first_group;
  std::map<std::pair<Count, std::string>, std::string> mask_spelled_first;  // (n, spec) -> the first spec of its mask at n
  const auto first_spelling = [&](Count n, const std::string& spec) {
    const auto known = mask_spelled_first.find({n, spec});
    if (known != mask_spelled_first.end()) return known->second;
    std::string first = spec;
    for (const auto& [at, earlier] : mask_spelled_first) {
      if (at.first == n && earlier == at.second && same_mask(earlier, spec, {n})) first = earlier;
    }
    mask_spelled_first.emplace(std::pair{n, spec}, first);
    return first;
  };
  for (size_t group = 0; group < spec.groups.size(); ++group) {
    const BalanceGroup& g = spec.groups[group];
    const auto field = [&](const char* name, size_t i) { return fmt::format("groups[{}].{}[{}]", group, name, i); };
    // A per-document layout in a group without a documents mask would be left out of every row.
    const bool any_documents = std::ranges::any_of(g.masks, is_documents_mask);
    for (const std::string& layout : g.layouts) {
      if (any_documents || !layout.starts_with("doc-")) continue;
      InputOrigins origins(spec.label);
      origins.add_list(Input::layouts, fmt::format("groups[{}].layouts", group), g.layouts);
      origins.run([&] {
        throw InputError(Input::layouts, layout, "is a per-document layout, and no mask of the sweep is a documents mask (it would "
                                                 "be left out of every row)", Shown::quoted);
      });
    }
    // Two spellings of one mask (window:4k and window:4096) pass the list's check of names but
    // would print every row twice.
    if (const std::optional<RepeatedMask> twice = repeated_mask(g.masks, g.seq_lens)) {
      InputOrigins origins(spec.label);
      origins.add(Input::mask, field("masks", twice->mask));
      origins.run([&] {
        throw InputError(Input::mask, g.masks[twice->mask],
                         fmt::format("the same mask as '{}' at every length of the sweep (its rows would print twice)",
                                     g.masks[twice->earlier]),
                         Shown::quoted);
      });
    }
    for_each_grid_point(axes(g), [&](auto at) {
      const auto [s, d, m, t] = at;
      InputOrigins origins(spec.label);
      origins.add(Input::seq_len, field("seq_lens", s));
      origins.add(Input::devices, field("devices", d));
      origins.add(Input::mask, field("masks", m));
      origins.add(Input::tile, field("tiles", t));
      origins.add_list(Input::layouts, fmt::format("groups[{}].layouts", group), g.layouts);
      if (g.pad_documents) origins.add(Input::pad_documents, fmt::format("groups[{}].pad_documents", group));
      AnalyzeConfig config;
      config.layouts.clear();
      config.seq_len = g.seq_lens[s];
      config.devices = g.devices[d];
      config.tile = g.tiles[t];
      config.tiling = spec.tiling;
      config.mask = g.masks[m];
      // Per-document layouts and padding only mean something for a documents mask.
      const bool documents = is_documents_mask(config.mask);
      for (const auto& layout : g.layouts) {
        if (documents || !layout.starts_with("doc-")) config.layouts.push_back(layout);
      }
      config.pad_documents = g.pad_documents && documents;
      for (const std::string& layout : config.layouts) {
        const auto [it, fresh] = first_group.emplace(
            std::tuple{config.seq_len, config.devices, first_spelling(config.seq_len, config.mask), config.tile.query, config.tile.key,
                       config.pad_documents, layout_identity(layout)},
            group);
        if (!fresh && it->second != group) {
          throw InputError(fmt::format("{}: groups[{}] and groups[{}] both hold n = {}, N = {}, mask {}, tile {}, layout {}: its row "
                                       "would print twice",
                                       spec.label, it->second, group, config.seq_len, config.devices, config.mask,
                                       config.tile.to_string(), layout));
        }
      }
      plan.points.push_back(origins.run([&] {
        if (config.layouts.empty() && !g.layouts.empty()) {
          throw InputError(Input::layouts, fmt::format("{}", fmt::join(g.layouts, ",")),
                           fmt::format("per-document layouts apply to documents masks only, and '{}' is not one; "
                                       "list a layout for it too",
                                       config.mask));
        }
        return plan_analysis(config);
      }));
    });
  }
  return plan;
}

std::vector<nlohmann::ordered_json> run_balance_sweep(const BalanceSweepPlan& plan, const SweepProgress& progress,
                                                     unsigned threads) {
  std::vector<nlohmann::ordered_json> rows;
  const Count total = static_cast<Count>(plan.points.size());
  Count done = 0;
  for (const AnalysisPlan& point : plan.points) {
    const AnalyzeConfig& config = point.config;
    const Analysis a = run_analysis(point, threads);
    for (const auto& r : a.results) {
      nlohmann::ordered_json row;
      row["n_seq"] = config.seq_len;
      row["devices"] = config.devices;
      row["mask"] = config.mask;
      row["tile"] = config.tile.to_string();
      row["documents"] = a.mask.kind() == MaskKind::documents ? static_cast<Count>(a.mask.document_lengths().size()) : 0;
      // Padding added (--pad-documents) or given with the lengths (V+P): never both.
      const std::vector<Count>& given = a.mask.document_padding();
      const Count padding = a.padding_tokens + std::accumulate(given.begin(), given.end(), Count{0});
      row["padding_fraction"] = static_cast<double>(padding) / static_cast<double>(a.seq_len);
      row["layout"] = r.layout;
      row["imbalance"] = r.elements.imbalance;
      row["tiles_imbalance"] = r.tiles.imbalance;
      row["lockstep_speedup"] = r.elements.lockstep_speedup;
      row["tiles_lockstep_speedup"] = r.tiles.lockstep_speedup;
      row["tiles_vs_bound"] = r.tiles_vs_bound;
      row["tiles_lockstep_vs_bound"] = r.tiles_lockstep_vs_bound;
      rows.push_back(std::move(row));
    }
    if (progress) progress(++done, total);
  }
  return rows;
}

}  // namespace stripesim::model
