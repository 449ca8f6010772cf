#include "stripesim/model/workflows/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "stripesim/model/flops/tms.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/parallel_for.hpp"
#include "stripesim/model/workflows/grid.hpp"

namespace stripesim::model {

std::string column_suffix(const std::string& layout) {
  std::string suffix = layout;
  std::replace_if(suffix.begin(), suffix.end(), [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }, '_');
  return suffix;
}

namespace {

SweepGroup group_from_json(const nlohmann::json& doc, const std::string& label) {
  const JsonFields f(doc, label);
  f.allow_only({"hardware", "models", "meshes", "seq_lens", "tiles"});
  SweepGroup g;
  const auto text = [](const std::string& item) { return item; };
  g.hardware = f.parsed_list("hardware", text);
  g.models = f.parsed_list("models", text);
  g.meshes = f.parsed_list("meshes", [&](const std::string& item) { return parse_mesh(item, f.where("meshes")); });
  g.seq_lens = f.count_list("seq_lens");
  if (f.has("tiles")) {
    g.tiles = f.parsed_list("tiles", [](const std::string& item) {
      return item == "default" ? std::optional<TileShape>() : std::optional<TileShape>(parse_tile_shape(item));
    });
  }
  // Each axis of the group's grid once: a repeated value would print its rows twice.
  const auto name = [](const std::string& item) { return lowercase(item); };
  f.require_distinct("hardware", g.hardware, name);
  f.require_distinct("models", g.models, name);
  f.require_distinct("meshes", g.meshes);
  f.require_distinct("seq_lens", g.seq_lens);
  f.require_distinct("tiles", g.tiles);
  return g;
}


nlohmann::ordered_json make_row(const SweepPoint& point, const TmsResult& r) {
  nlohmann::ordered_json row;
  row["hardware"] = r.request.hardware.name;
  row["model"] = r.request.model.name;
  row["convention"] = to_string(r.request.convention);
  row["mesh"] = point.mesh.to_string();
  row["model_parallel"] = point.mesh.model_parallel;
  row["devices"] = point.mesh.devices;
  row["n_seq"] = point.seq_len;
  row["c"] = point.seq_len / point.mesh.devices;
  row["tile"] = r.tile.to_string();
  row["tms"] = r.layout("striped").tms;
  row["tms_tiles"] = r.layout("striped").tms_tiles;
  for (size_t i = 2; i < r.layouts.size(); ++i) {  // zigzag, then the extras
    row["tms_" + column_suffix(r.layouts[i].layout)] = r.layouts[i].tms;
    row["tms_tiles_" + column_suffix(r.layouts[i].layout)] = r.layouts[i].tms_tiles;
  }
  for (const auto& l : r.layouts) row["imbalance_" + column_suffix(l.layout)] = l.elements.imbalance;
  for (const auto& l : r.layouts) row["tiles_imbalance_" + column_suffix(l.layout)] = l.tiles.imbalance;
  for (const auto& l : r.layouts) row["lockstep_speedup_" + column_suffix(l.layout)] = l.elements.lockstep_speedup;
  for (const auto& l : r.layouts) row["tiles_lockstep_speedup_" + column_suffix(l.layout)] = l.tiles.lockstep_speedup;
  return row;
}

}  // namespace

nlohmann::ordered_json select_columns(const nlohmann::ordered_json& row, const std::vector<std::string>& columns,
                                      std::string_view named) {
  if (columns.empty()) return row;
  nlohmann::ordered_json selected;
  for (const auto& column : columns) {
    if (!row.contains(column)) {
      std::string known;
      for (const auto& [key, value] : row.items()) known += (known.empty() ? "" : ", ") + key;
      throw InputError(fmt::format("{} '{}': unknown column, known: {}", named, column, known));
    }
    selected[column] = row.at(column);
  }
  return selected;
}

SweepSpec sweep_spec_from_json(const nlohmann::json& doc, const std::string& label) {
  const JsonFields f(doc, label);
  // A "step" object makes the file a step sweep (read by sim's step_sweep, never here); listed so
  // that a misspelt one is offered, and "measured" belongs to it.
  f.allow_only({"kind", "description", "convention", "pass", "recompute", "tiling", "layouts", "columns", "groups", "step",
                "measured"});
  if (f.has("measured")) throw InputError(fmt::format("{}: only in a step sweep, beside a \"step\" object", f.where("measured")));
  if (f.has("kind") && f.string("kind") != "tms") {
    throw InputError(fmt::format("{}: expected \"tms\" or \"balance\"", f.where("kind")));
  }
  SweepSpec spec;
  spec.label = label;
  spec.description = f.string_or("description", "");
  if (f.has("convention")) spec.convention = f.parsed("convention", parse_flop_convention);
  if (f.has("pass")) spec.pass = f.parsed("pass", parse_training_pass);
  spec.recompute = f.boolean_or("recompute", spec.recompute);
  JsonFields::located(f.where("recompute"), [&] { require_backward_for_recompute(spec.pass, spec.recompute); });
  if (f.has("tiling")) spec.tiling = parse_tiling(f.string("tiling"), f.where("tiling"));
  spec.extra_layouts = f.distinct_string_list_or("layouts", {}, layout_identity);
  spec.columns = f.distinct_string_list_or("columns", {});
  spec.columns_named = f.where("columns");
  // No columns is not every column (what leaving the field out keeps): say which.
  if (f.has("columns") && spec.columns.empty()) {
    throw InputError(fmt::format("{}: expected a non-empty array (leave the field out for every column)", f.where("columns")));
  }
  const auto& groups = f.non_empty_array("groups");
  for (size_t i = 0; i < groups.size(); ++i) {
    spec.groups.push_back(group_from_json(groups[i], fmt::format("{} group {}", label, i)));
  }
  return spec;
}

namespace {

// A group's axes, in grid order: hardware, models, meshes, sequence lengths, tiles.
std::array<size_t, 5> axes(const SweepGroup& g) {
  return {g.hardware.size(), g.models.size(), g.meshes.size(), g.seq_lens.size(), g.tiles.size()};
}

}  // namespace

std::vector<SweepPoint> expand(const SweepSpec& spec) {
  std::vector<SweepPoint> points;
  for (size_t g = 0; g < spec.groups.size(); ++g) {
    const SweepGroup& group = spec.groups[g];
    const auto field = [&](const char* name, size_t i) { return fmt::format("groups[{}].{}[{}]", g, name, i); };
    for_each_grid_point(axes(group), [&](auto at) {
      const auto [h, m, mesh, s, t] = at;
      SweepPoint point{group.hardware[h], group.models[m], group.meshes[mesh], group.seq_lens[s], group.tiles[t],
                       InputOrigins(spec.label)};
      point.origins.add(Input::hardware, field("hardware", h));
      point.origins.add(Input::model, field("models", m));
      point.origins.add(Input::model_parallel, field("meshes", mesh) + " (M of MxN)");
      point.origins.add(Input::devices, field("meshes", mesh) + " (N of MxN)");
      point.origins.add(Input::seq_len, field("seq_lens", s));
      if (group.tiles[t]) point.origins.add(Input::tile, field("tiles", t));
      point.origins.add_list(Input::layouts, "layouts", spec.extra_layouts);
      point.group = g;
      points.push_back(std::move(point));
    });
  }
  return points;
}

Count count_points(const SweepSpec& spec) {
  Count points = 0;
  for (const SweepGroup& group : spec.groups) points += static_cast<Count>(grid_points(axes(group)));
  return points;
}

namespace {

// One TMS request per point, every hardware and model name resolved first so a typo fails
// before any work.
std::vector<TmsRequest> resolve_requests(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                                         const ConfigCatalog& catalog) {
  std::map<std::string, HardwareProfile> hardware;
  std::map<std::string, TransformerModel> models;
  // Two names of one profile in a group ("h100" and its alias "h100-sxm", "1b" and the path of
  // its file) would only repeat that profile's rows: refused, naming the second.
  std::map<std::tuple<size_t, Input, std::string>, std::string> given_as;  // (group, input, profile) -> name given
  const auto once = [&](size_t group, Input input, const std::string& profile, const std::string& given) {
    const auto [it, fresh] = given_as.emplace(std::tuple{group, input, profile}, given);
    if (!fresh && it->second != given) {
      throw InputError(input, given, fmt::format("names profile {}, as '{}' does: one profile listed twice", profile, it->second), Shown::quoted);
    }
  };
  // Likewise a tile given as itself and as "default" on a hardware whose default it is.
  std::map<std::tuple<size_t, std::string, Count, Count>, std::optional<TileShape>> tile_given_as;
  const auto tile_name = [](const std::optional<TileShape>& tile) {
    return tile ? fmt::format("{}x{}", tile->query, tile->key) : std::string("default");
  };
  for (const SweepPoint& p : points) {
    p.origins.run([&] {
      if (!hardware.contains(p.hardware)) hardware.emplace(p.hardware, catalog.hardware(p.hardware));
      if (!models.contains(p.model)) models.emplace(p.model, catalog.model(p.model));
      const HardwareProfile& h = hardware.at(p.hardware);
      once(p.group, Input::hardware, h.name, p.hardware);
      once(p.group, Input::model, models.at(p.model).name, p.model);
      const TileShape tile = p.tile.value_or(h.default_tile);
      const auto [it, fresh] = tile_given_as.emplace(std::tuple{p.group, h.name, tile.query, tile.key}, p.tile);
      if (!fresh && it->second.has_value() != p.tile.has_value()) {
        throw InputError(Input::tile, tile_name(p.tile),
                         fmt::format("is {}x{} on hardware {}, as '{}' is: one tile listed twice", tile.query, tile.key, h.name,
                                     tile_name(it->second)),
                         Shown::quoted);
      }
    });
  }
  // Within a group the axes are distinct; across groups the same point would print its row twice.
  std::map<std::tuple<std::string, std::string, Count, Count, Count, Count, Count, Count>, size_t> first_group;
  for (const SweepPoint& p : points) {
    const HardwareProfile& h = hardware.at(p.hardware);
    const TileShape tile = p.tile.value_or(h.default_tile);
    const auto [it, fresh] = first_group.emplace(std::tuple{h.name, models.at(p.model).name, p.mesh.model_parallel, p.mesh.devices,
                                                            p.mesh.data_parallel, p.seq_len, tile.query, tile.key},
                                                 p.group);
    if (!fresh && it->second != p.group) {
      throw InputError(fmt::format("{}: groups[{}] and groups[{}] both hold hardware {}, model {}, mesh {}, n = {}, tile {}x{}: its "
                                   "row would print twice",
                                   spec.label, it->second, p.group, h.name, models.at(p.model).name, p.mesh.to_string(), p.seq_len,
                                   tile.query, tile.key));
    }
  }
  std::vector<TmsRequest> requests;
  requests.reserve(points.size());
  for (const auto& p : points) {
    TmsRequest q;
    q.model = models.at(p.model);
    q.hardware = hardware.at(p.hardware);
    q.devices = p.mesh.devices;
    q.model_parallel = p.mesh.model_parallel;
    q.seq_len = p.seq_len;
    q.tile = p.tile;
    q.tiling = spec.tiling;
    q.convention = spec.convention;
    q.pass = spec.pass;
    q.recompute = spec.recompute;
    q.extra_layouts = spec.extra_layouts;
    requests.push_back(std::move(q));
  }
  return requests;
}

}  // namespace

SweepPlan plan_sweep(const SweepSpec& spec, const ConfigCatalog& catalog) {
  SweepPlan plan{expand(spec), {}, spec.columns};
  // A layout's columns are named after it with every other character than letters and digits
  // made '_': two layouts named alike but for those would write one set of columns, the last's.
  // (Checked as a point's: a file's list is named at its field.)
  const auto columns_apart = [&] {
    for (size_t i = 0; i < spec.extra_layouts.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (column_suffix(spec.extra_layouts[i]) == column_suffix(spec.extra_layouts[j])) {
          throw InputError(Input::layouts, spec.extra_layouts[i],
                           fmt::format("its columns (tms_{}, ...) would be those of '{}': name one file otherwise",
                                       column_suffix(spec.extra_layouts[i]), spec.extra_layouts[j]),
                           Shown::quoted);
        }
      }
    }
  };
  if (plan.points.empty()) {
    columns_apart();
  } else {
    plan.points.front().origins.run(columns_apart);
  }
  const std::vector<TmsRequest> requests = resolve_requests(spec, plan.points, catalog);
  plan.requests.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    plan.requests.push_back(plan.points[i].origins.run([&] { return plan_tms(requests[i]); }));
    if (i == 0 && !spec.columns.empty()) {
      // The columns a row has depend on the layouts only: check them against a row of zeros.
      TmsResult zeros;
      zeros.request = requests[i];
      zeros.tile = plan.requests[i].tile;
      for (const auto& layout : tms_layouts(requests[i])) {
        LayoutTms entry;
        entry.layout = layout;
        zeros.layouts.push_back(std::move(entry));
      }
      nlohmann::ordered_json row = make_row(plan.points[i], zeros);
      for (const std::string& added : spec.added_columns) row[added] = nullptr;
      (void)select_columns(row, spec.columns, spec.columns_named);
    }
  }
  return plan;
}

std::vector<nlohmann::ordered_json> run_sweep(const SweepPlan& plan, const SweepProgress& progress, unsigned threads) {
  WorkMetricsCache cache;
  std::vector<nlohmann::ordered_json> rows(plan.points.size());
  std::atomic<Count> done{0};
  std::mutex progress_mutex;
  parallel_for(plan.points.size(), threads, [&](size_t i) {
    rows[i] = select_columns(make_row(plan.points[i], run_tms(plan.requests[i], &cache)), plan.columns);
    const Count finished = ++done;
    if (progress) {
      const std::lock_guard lock(progress_mutex);
      progress(finished, static_cast<Count>(plan.points.size()));
    }
  });
  return rows;
}

std::vector<nlohmann::ordered_json> run_sweep(const SweepSpec& spec, const ConfigCatalog& catalog,
                                              const SweepProgress& progress, unsigned threads) {
  return run_sweep(plan_sweep(spec, catalog), progress, threads);
}

}  // namespace stripesim::model
