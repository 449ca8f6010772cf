#include <gtest/gtest.h>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/workflows/grid.hpp"
#include "stripesim/model/workflows/sweep.hpp"

namespace stripesim::model {
namespace {

const ConfigCatalog& catalog() {
  static const ConfigCatalog shipped(std::string(STRIPESIM_SOURCE_DIR) + "/configs");
  return shipped;
}

SweepSpec paper_grid() {
  const std::string path = std::string(STRIPESIM_SOURCE_DIR) + "/configs/experiments/paper-tms.json";
  return sweep_spec_from_json(read_json_file(path, path), path);
}

TEST(Sweep, PaperGridHasEveryPoint) {
  const SweepSpec spec = paper_grid();
  // A100: 3 models x (7 + 7 + 7) + 1B at 7 + 6 + 4; TPU v3: 2 x (4 + 4); TPU v4: 2 x 7 + 6 + 3 x 7.
  EXPECT_EQ(count_points(spec), 63 + 17 + 16 + 41);
  const auto rows = run_sweep(spec, catalog(), {}, 2);
  ASSERT_EQ(rows.size(), 137u);
  std::vector<std::string> columns;
  for (const auto& [key, value] : rows.front().items()) columns.push_back(key);
  EXPECT_EQ(columns, (std::vector<std::string>{"hardware", "model", "mesh", "n_seq", "c", "tms", "tms_tiles", "tms_zigzag"}));
  EXPECT_EQ(rows.front().at("hardware"), "a100-80gb");
  EXPECT_EQ(rows.front().at("mesh"), "2x2");
  EXPECT_EQ(rows.back().at("hardware"), "tpu-v4");
  EXPECT_EQ(rows.back().at("n_seq"), 384 * 1024);
}

TEST(Sweep, RowsDoNotDependOnThreadsAndProgressCountsEveryPoint) {
  const SweepSpec spec = paper_grid();
  Count last = 0, calls = 0;
  const auto one = run_sweep(spec, catalog(), [&](Count done, Count total) {
    EXPECT_EQ(total, 137);
    last = done;
    ++calls;
  }, 1);
  EXPECT_EQ(last, 137);
  EXPECT_EQ(calls, 137);
  EXPECT_EQ(one, run_sweep(spec, catalog(), {}, 2));
}

TEST(Sweep, AllColumnsByDefaultIncludingExtraLayouts) {
  SweepSpec spec;
  spec.extra_layouts = {"block-striped:16"};
  SweepGroup g;
  g.hardware = {"h100"};
  g.models = {"llama3-8b"};
  g.meshes = {{1, 8}};
  g.seq_lens = {65536};
  spec.groups.push_back(g);
  const auto rows = run_sweep(spec, catalog());
  ASSERT_EQ(rows.size(), 1u);
  for (const char* column : {"tms", "tms_tiles", "tms_zigzag", "tms_tiles_zigzag", "tms_block_striped_16",
                             "imbalance_contiguous", "tiles_imbalance_striped", "lockstep_speedup_zigzag",
                             "tiles_lockstep_speedup_block_striped_16"}) {
    EXPECT_TRUE(rows[0].contains(column)) << column;
  }
  EXPECT_EQ(rows[0].at("tile"), "128x128");
  EXPECT_NEAR(rows[0].at("imbalance_contiguous").get<double>(), 1.87, 0.01);
}

TEST(Sweep, MeshesAndBadSpecs) {
  EXPECT_EQ(parse_mesh("2x4", "m").model_parallel, 2);
  EXPECT_EQ(parse_mesh("2x4", "m").devices, 4);
  for (const char* bad : {"", "2", "x4", "2x", "0x4", "2x0", "axb"}) EXPECT_THROW((void)parse_mesh(bad, "m"), InputError) << bad;
  const auto spec = [](const char* text) { return sweep_spec_from_json(nlohmann::json::parse(text), "test.json"); };
  EXPECT_THROW(spec(R"({"groups": []})"), InputError);
  EXPECT_THROW(spec(R"({"grups": []})"), InputError);
  EXPECT_THROW(spec(R"({"convention": "rough", "groups": [{"hardware": ["a100"], "models": ["1b"], "meshes": ["1x2"], "seq_lens": [8192]}]})"), InputError);
  EXPECT_THROW(spec(R"({"groups": [{"hardware": ["a100"], "models": ["1b"], "meshes": ["1x2"]}]})"), InputError);
  EXPECT_THROW(spec(R"({"groups": [{"hardware": "a100", "models": ["1b"], "meshes": ["1x2"], "seq_lens": [8192]}]})"), InputError);
  // No columns is refused, not taken for every column (what leaving the field out keeps).
  try {
    (void)spec(R"({"columns": [], "groups": [{"hardware": ["a100"], "models": ["1b"], "meshes": ["1x2"], "seq_lens": [8192]}]})");
    ADD_FAILURE() << "an empty columns list was taken";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "test.json field \"columns\": expected a non-empty array (leave the field out for every column)");
  }
  SweepSpec unknown_column = spec(R"({"columns": ["tms", "speed"], "groups": [{"hardware": ["a100"], "models": ["1b"], "meshes": ["1x2"], "seq_lens": [8192]}]})");
  EXPECT_THROW((void)run_sweep(unknown_column, catalog()), InputError);
  SweepSpec unknown_model = spec(R"({"groups": [{"hardware": ["a100"], "models": ["13b"], "meshes": ["1x2"], "seq_lens": [8192]}]})");
  EXPECT_THROW((void)run_sweep(unknown_model, catalog()), InputError);
  // The checks alone (parse-only mode) reject the same specs, the columns included.
  EXPECT_THROW((void)plan_sweep(unknown_column, catalog()), InputError);
  EXPECT_THROW((void)plan_sweep(unknown_model, catalog()), InputError);
  SweepSpec indivisible = spec(R"({"groups": [{"hardware": ["a100"], "models": ["1b"], "meshes": ["1x8"], "seq_lens": [8192, 1000]}]})");
  EXPECT_THROW((void)plan_sweep(indivisible, catalog()), InputError);
  EXPECT_NO_THROW((void)plan_sweep(spec(R"({"columns": ["model", "tms_zigzag"], "groups": [{"hardware": ["a100"], "models": ["1b"], "meshes": ["1x2"], "seq_lens": [8192]}]})"), catalog()));
  EXPECT_NO_THROW((void)plan_sweep(paper_grid(), catalog()));
}

TEST(Grid, EveryPointOnceLastAxisFastest) {
  std::vector<std::array<size_t, 3>> seen;
  for_each_grid_point(std::array<size_t, 3>{2, 1, 3}, [&](auto at) { seen.push_back(at); });
  const std::vector<std::array<size_t, 3>> expected{{0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {1, 0, 0}, {1, 0, 1}, {1, 0, 2}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(grid_points(std::array<size_t, 3>{2, 1, 3}), 6u);
  // An empty axis has no point; no axis, the one empty tuple.
  int visits = 0;
  for_each_grid_point(std::array<size_t, 2>{4, 0}, [&](auto) { ++visits; });
  EXPECT_EQ(visits, 0);
  EXPECT_EQ(grid_points(std::array<size_t, 2>{4, 0}), 0u);
  for_each_grid_point(std::array<size_t, 0>{}, [&](auto) { ++visits; });
  EXPECT_EQ(visits, 1);
}

TEST(Sweep, ColumnSuffix) {
  EXPECT_EQ(column_suffix("zigzag"), "zigzag");
  EXPECT_EQ(column_suffix("block-striped:64"), "block_striped_64");
}

}  // namespace
}  // namespace stripesim::model
