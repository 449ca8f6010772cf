#pragma once
// A grid of TMS points (hardware x model x mesh x sequence length x tile) described by groups
// of Cartesian products, evaluated into one flat row per point.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/flops/flop_model.hpp"
#include "stripesim/model/flops/tms.hpp"
#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_origins.hpp"
#include "stripesim/model/io/schemas.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/workflows/mesh.hpp"

namespace stripesim::model {

struct SweepGroup {
  std::vector<std::string> hardware;
  std::vector<std::string> models;
  std::vector<Mesh> meshes;
  std::vector<Count> seq_lens;
  std::vector<std::optional<TileShape>> tiles{std::nullopt};  // nullopt: the hardware's default
};

struct SweepSpec {
  std::string label;  // the file it was read from, as errors name it; empty: made in code
  std::string description;
  FlopConvention convention = FlopConvention::paper;
  TrainingPass pass = TrainingPass::forward_backward;
  bool recompute = false;
  Tiling tiling = Tiling::fixed;           // every point's (tile_shape.hpp)
  std::vector<std::string> extra_layouts;  // columns beyond contiguous, striped, zigzag
  std::vector<std::string> columns;        // empty: every column
  std::string columns_named = "--columns";  // how errors name that list: the flag, or a file's field
  std::vector<std::string> added_columns;    // columns a caller adds to each row (a step sweep's): known to `columns`
  std::vector<SweepGroup> groups;
};

// An experiment file: {"description", "convention", "pass", "recompute", "tiling", "layouts", "columns",
// "groups": [{"hardware": [...], "models": [...], "meshes": ["2x4", ...], "seq_lens": [...],
// "tiles": [...]}]}.
[[nodiscard]] SweepSpec sweep_spec_from_json(const nlohmann::json& doc, const std::string& label);

// One point of the grid, names as the experiment gives them.
struct SweepPoint {
  std::string hardware;
  std::string model;
  Mesh mesh;
  Count seq_len = 0;
  std::optional<TileShape> tile;
  InputOrigins origins;  // where each came from in the experiment file
  size_t group = 0;      // its index in the spec's groups
};

// The groups' Cartesian products, in grid order (the order of run_sweep's rows).
[[nodiscard]] std::vector<SweepPoint> expand(const SweepSpec& spec);
[[nodiscard]] Count count_points(const SweepSpec& spec);

// Every point resolved (hardware and model names first, so a typo fails before anything else)
// and planned (plan_tms), the columns checked against the first point's row; nothing counted.
// Parse-only mode stops here.
struct SweepPlan {
  std::vector<SweepPoint> points;  // grid order
  std::vector<TmsPlan> requests;   // one per point
  std::vector<std::string> columns;
};
[[nodiscard]] SweepPlan plan_sweep(const SweepSpec& spec, const ConfigCatalog& catalog);

// One row per point, columns in a fixed order (or spec.columns). `progress(done, total)` is
// called after each point. Rows come out in grid order whatever `threads` is.
using SweepProgress = std::function<void(Count done, Count total)>;
[[nodiscard]] std::vector<nlohmann::ordered_json> run_sweep(const SweepPlan& plan, const SweepProgress& progress = {},
                                                           unsigned threads = 0);
// run_sweep(plan_sweep(spec, catalog), progress, threads).
[[nodiscard]] std::vector<nlohmann::ordered_json> run_sweep(const SweepSpec& spec, const ConfigCatalog& catalog,
                                                           const SweepProgress& progress = {}, unsigned threads = 0);

// `row` reduced to `columns` in that order (all of it when empty); an unknown column is an
// InputError naming the list as `named` and listing the known ones.
[[nodiscard]] nlohmann::ordered_json select_columns(const nlohmann::ordered_json& row, const std::vector<std::string>& columns,
                                                    std::string_view named = "--columns");

// Column name suffix for a layout: "block-striped:64" -> "block_striped_64".
[[nodiscard]] std::string column_suffix(const std::string& layout);

}  // namespace stripesim::model
