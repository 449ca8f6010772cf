// Benchmarks of the whole analysis (every layout, every round and device, elements and tiles),
// exactly what `stripesim analyze` computes before printing.
#include <benchmark/benchmark.h>

#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/model/workflows/analysis.hpp"

namespace {

using stripesim::model::AnalyzeConfig;
using stripesim::model::Count;

void run(benchmark::State& state, AnalyzeConfig config) {
  const auto threads = static_cast<unsigned>(state.range(0));
  for (auto _ : state) {
    auto analysis = stripesim::model::run_analysis(config, threads);
    benchmark::DoNotOptimize(analysis.results.data());
  }
  state.counters["rounds_x_devices"] = static_cast<double>(config.devices * config.devices);
}

AnalyzeConfig config(Count seq_len, Count devices, stripesim::model::TileShape tile, std::string mask = "causal") {
  AnalyzeConfig c;
  c.seq_len = seq_len;
  c.devices = devices;
  c.tile = tile;
  c.mask = std::move(mask);
  return c;
}

void BM_Paper_256k_N8_2048x4096(benchmark::State& s) { run(s, config(262144, 8, {2048, 4096})); }
void BM_Causal_1M_N64_128x128(benchmark::State& s) { run(s, config(1 << 20, 64, {128, 128})); }
void BM_Causal_8M_N8_128x128(benchmark::State& s) { run(s, config(8 << 20, 8, {128, 128})); }
void BM_Causal_1M_N1024_128x128(benchmark::State& s) { run(s, config(1 << 20, 1024, {128, 128})); }
void BM_Window4k_1M_N8_128x128(benchmark::State& s) { run(s, config(1 << 20, 8, {128, 128}, "window:4096")); }
void BM_Documents_1M_N32_128x128(benchmark::State& s) {
  // 256 documents of 4k tokens packed into 1M.
  std::string lengths = "documents:4096";
  for (int i = 1; i < 256; ++i) lengths += ",4096";
  run(s, config(1 << 20, 32, {128, 128}, lengths));
}

// What `simulate` counts for a ring: every (round, device)'s per-query-tile profile, here for the
// README's 1024-GPU ring (n = 8M, 8192 tokens a device), one layout per argument.
void BM_QueryTileWork_8M_N1024(benchmark::State& state) {
  const std::string spec = state.range(0) == 0 ? "striped" : state.range(0) == 1 ? "zigzag" : "contiguous";
  const Count n = 8 << 20;
  const auto layout = stripesim::model::parse_layout(spec, n, 1024);
  const auto mask = stripesim::model::parse_mask(state.range(1) == 0 ? "causal" : "window:65536", n);
  for (auto _ : state) {
    auto work = stripesim::model::count_work(layout, mask, {128, 128}, 2, stripesim::model::WorkDetail::query_tiles);
    benchmark::DoNotOptimize(work.profiles.data());
  }
  state.SetLabel(spec + (state.range(1) == 0 ? " causal" : " window:64k"));
}

}  // namespace

// Arg = worker threads (1, and 2 = this CI machine's cores).
BENCHMARK(BM_Paper_256k_N8_2048x4096)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Causal_1M_N64_128x128)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Causal_8M_N8_128x128)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Causal_1M_N1024_128x128)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Window4k_1M_N8_128x128)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Documents_1M_N32_128x128)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Args = layout (0 striped, 1 zigzag, 2 contiguous), mask (0 causal, 1 window of 64k); 2 threads.
BENCHMARK(BM_QueryTileWork_8M_N1024)->Args({0, 0})->Args({1, 0})->Args({2, 0})->Args({0, 1})->Args({1, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
