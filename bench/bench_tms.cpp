// The paper's whole TMS grid (137 points, element and tile-aware TMS), as `stripesim sweep
// --experiment configs/experiments/paper-tms.json` computes it, configs read once.
#include <benchmark/benchmark.h>

#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/work/document_layouts.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/workflows/sweep.hpp"

namespace {

void BM_PaperTmsGrid(benchmark::State& state) {
  const std::string root = STRIPESIM_SOURCE_DIR "/configs";
  const std::string path = root + "/experiments/paper-tms.json";
  const auto spec = stripesim::model::sweep_spec_from_json(stripesim::model::read_json_file(path, path), path);
  const stripesim::model::ConfigCatalog catalog(root);
  for (auto _ : state) {
    auto rows = stripesim::model::run_sweep(spec, catalog, {}, static_cast<unsigned>(state.range(0)));
    benchmark::DoNotOptimize(rows.data());
  }
  state.counters["points"] = static_cast<double>(stripesim::model::count_points(spec));
}

// A grid that makes the work model sweat: 1M tokens on up to 64 devices, FlashAttention tiles.
void BM_LargeTmsGrid(benchmark::State& state) {
  stripesim::model::SweepSpec spec;
  stripesim::model::SweepGroup g;
  g.hardware = {"h100"};
  g.models = {"llama3-8b", "llama3-70b"};
  g.meshes = {{1, 8}, {1, 16}, {1, 32}, {1, 64}};
  g.seq_lens = {1 << 18, 1 << 19, 1 << 20};
  spec.groups.push_back(g);
  const stripesim::model::ConfigCatalog catalog(STRIPESIM_SOURCE_DIR "/configs");
  for (auto _ : state) {
    auto rows = stripesim::model::run_sweep(spec, catalog, {}, static_cast<unsigned>(state.range(0)));
    benchmark::DoNotOptimize(rows.data());
  }
  state.counters["points"] = static_cast<double>(stripesim::model::count_points(spec));
}

}  // namespace

BENCHMARK(BM_PaperTmsGrid)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LargeTmsGrid)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

namespace {

// The balancer alone: 1M tokens of log-normal documents (mean 1024) over 64 devices, 128x128
// tiles, under each tiling (arg 0 fixed, 1 varlen).
void BM_Balance1MTokens64Devices(benchmark::State& state) {
  const stripesim::model::Count n = 1 << 20;
  const auto mask = stripesim::model::parse_mask("documents:lognormal:1024:1.2:seed=17", n);
  const auto tiling = state.range(0) == 0 ? stripesim::model::Tiling::fixed : stripesim::model::Tiling::varlen;
  for (auto _ : state) {
    auto result = stripesim::model::balanced_layout(mask, 64, {128, 128}, 0, tiling);
    benchmark::DoNotOptimize(result.slowest_estimate);
  }
  state.counters["documents"] = static_cast<double>(mask.document_lengths().size());
}

}  // namespace

BENCHMARK(BM_Balance1MTokens64Devices)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
