// The discrete-event engine alone (events per second) on a ring of 1024 devices spread over
// 128 nodes, and the whole simulate workflow (work model + kernel costs + ring).
#include <benchmark/benchmark.h>

#include <string>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/sim/ring_order.hpp"
#include "stripesim/sim/ring_simulator.hpp"
#include "stripesim/sim/simulation.hpp"

namespace {

using namespace stripesim;

void BM_RingEngine_Cluster128x8(benchmark::State& state) {
  const model::Count n = 1024;
  const sim::Topology topology = sim::Topology::cluster(128, 8, 450, 1.0, 50, 1.5);
  sim::RingSetup setup;
  setup.devices = n;
  setup.hops = sim::ring_routes(topology, sim::rank_ring_order(n));
  setup.kv_bytes = 64 << 20;
  // 0: forward, 1: backward, with the per-(round, device) records; 2: forward without them, as
  // simulate runs a ring whose rounds it does not print (above 64 devices without --rounds).
  setup.pass = state.range(0) == 1 ? sim::RingPass::backward : sim::RingPass::forward;
  setup.keep_rounds = state.range(0) != 2;
  // Contiguous-like causal work: device d computes blocks of devices <= d.
  setup.compute_us.resize(static_cast<size_t>(n * n));
  for (model::Count r = 0; r < n; ++r) {
    for (model::Count d = 0; d < n; ++d) setup.compute_us[static_cast<size_t>(r * n + d)] = r <= d ? 1000.0 : 0.0;
  }
  std::uint64_t events = 0;
  for (auto _ : state) {
    std::vector<sim::FifoServer> links(topology.directed_link_count());
    const sim::RingTimeline t = sim::simulate_ring(setup, links);
    events += t.events;
    benchmark::DoNotOptimize(t.end_us);
  }
  state.counters["events"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

// The routes of a ring of 1024 GPUs over 128 nodes (one shortest-path tree per GPU on a graph of
// 2177 vertices), on a topology built afresh each time as simulate builds it: 0 the topology
// alone, 1 with the ring routed.
void BM_RingRoutes_Cluster128x8(benchmark::State& state) {
  const model::Count n = 1024;
  for (auto _ : state) {
    const sim::Topology topology = sim::Topology::cluster(128, 8, 450, 1.0, 50, 1.5);
    if (state.range(0) == 1) {
      const std::vector<sim::Route> hops = sim::ring_routes(topology, sim::rank_ring_order(n));
      benchmark::DoNotOptimize(hops.data());
    }
    benchmark::DoNotOptimize(topology.gpu_count());
  }
}

void BM_Simulate_Cluster128x8(benchmark::State& state) {
  sim::SimulateConfig config;
  config.devices = 1024;
  config.seq_len = 8 << 20;
  config.hardware = "h100";
  config.topology = "cluster:128x8";
  config.layouts = {"zigzag"};
  config.tile = model::TileShape{128, 128};
  config.keep_rounds = false;  // as simulate runs it: no per-(round, device) records above 64 devices
  const model::ConfigCatalog catalog(STRIPESIM_SOURCE_DIR "/configs");
  for (auto _ : state) {
    const sim::Simulation s = sim::run_simulation(config, catalog);
    benchmark::DoNotOptimize(s.results.data());
    state.counters["events"] = static_cast<double>(s.events);
  }
}

// One causal call placed block by block: 1M tokens' query tiles (8192 of 128, the diagonal block
// of a Ulysses call over the whole sequence) on 16 heads, on an H100 kernel profile: the block
// scheduler's model that plan runs for every distinct call of every candidate.
void place_causal_call_1m(benchmark::State& state, const std::string& kernel_name) {
  const model::ConfigCatalog catalog(STRIPESIM_SOURCE_DIR "/configs");
  const model::HardwareProfile h100 = catalog.hardware("h100");
  const sim::KernelTimeModel kernel(sim::load_kernel_profile(kernel_name, catalog, h100), h100.sms, {16, 128, {128, 128}, 1});
  model::QueryTileProfile rows(8192);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = {static_cast<model::Count>(i), 1};
  for (auto _ : state) benchmark::DoNotOptimize(kernel.call_us(rows, sim::KernelPass::forward));
  state.counters["blocks"] = static_cast<double>(rows.size() * 16);
}
// cuDNN's profile (sdpa): fixed slots, one block an SM.
void BM_KernelTime_CausalCall1M(benchmark::State& state) { place_causal_call_1m(state, "sdpa"); }
// FlashAttention-2's (fa2): two blocks an SM sharing its throughput, a lone block at twice the rate.
void BM_KernelTime_CausalCall1M_SharedSms(benchmark::State& state) { place_causal_call_1m(state, "fa2"); }

// A whole training step of a 32-layer model (Llama-3-8B) on a 2 x 64 mesh of H100 nodes: every
// layout, forward and backward, recomputation; the bar is under a second.
void BM_SimulateStep_Llama8B_M2xN64(benchmark::State& state) {
  sim::SimulateConfig config;
  config.model = "llama3-8b";
  config.hardware = "h100";
  config.topology = "cluster:16x8";
  config.model_parallel = 2;
  config.devices = 64;
  config.seq_len = 1 << 20;
  config.scope = sim::Scope::step;
  config.pass = sim::PassSelection::forward_backward;
  config.recompute = true;
  const model::ConfigCatalog catalog(STRIPESIM_SOURCE_DIR "/configs");
  for (auto _ : state) {
    const sim::Simulation s = sim::run_simulation(config, catalog);
    benchmark::DoNotOptimize(s.results.data());
    state.counters["step_ms_zigzag"] = s.results.back().time_us / 1e3;
  }
}

}  // namespace

BENCHMARK(BM_SimulateStep_Llama8B_M2xN64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RingEngine_Cluster128x8)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RingRoutes_Cluster128x8)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Simulate_Cluster128x8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_KernelTime_CausalCall1M)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_KernelTime_CausalCall1M_SharedSms)->Unit(benchmark::kMillisecond)->UseRealTime();
