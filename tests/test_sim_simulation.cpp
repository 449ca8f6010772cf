// The simulate workflow end to end: work model -> kernel costs -> ring on a topology.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/work/document_layouts.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/model/work/parallel_for.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/sim/ring_merge.hpp"
#include "stripesim/sim/simulation.hpp"
#include "stripesim/sim/topology.hpp"
#include "stripesim/output/simulation_printers.hpp"
#include "temp_path.hpp"

namespace stripesim::sim {
namespace {

const model::ConfigCatalog& catalog() {
  static const model::ConfigCatalog shipped(std::string(STRIPESIM_SOURCE_DIR) + "/configs");
  return shipped;
}

// A one-switch node of `gpus` GPUs whose links have the given bandwidth and latency.
std::string switch_topology(Count gpus, double bandwidth, double latency) {
  nlohmann::json doc{{"name", "test-switch"}, {"nodes", nlohmann::json::array()}, {"links", nlohmann::json::array()}};
  for (Count g = 0; g < gpus; ++g) doc["nodes"].push_back({{"id", fmt::format("g{}", g)}, {"kind", "gpu"}});
  doc["nodes"].push_back({{"id", "sw"}, {"kind", "switch"}});
  for (Count g = 0; g < gpus; ++g) {
    doc["links"].push_back({{"a", fmt::format("g{}", g)}, {"b", "sw"}, {"bandwidth_gbps", bandwidth}, {"latency_us", latency}});
  }
  const auto path = temp_path(fmt::format("stripesim_topology_{}_{}.json", gpus, static_cast<long long>(bandwidth * 1000)));
  std::ofstream(path) << doc.dump();
  return path.string();
}

SimulateConfig small_config() {
  SimulateConfig c;
  c.heads = 8;
  c.kv_heads = 8;
  c.head_dim = 64;
  c.seq_len = 64 * 1024;
  c.devices = 8;
  c.hardware = "h100";
  c.tile = model::TileShape{128, 128};
  return c;
}

TEST(Simulation, LockstepWithFreeLinksMatchesTheWorkModel) {
  SimulateConfig c = small_config();
  c.sync = SyncMode::lockstep;
  for (const std::string& topology : {switch_topology(8, 1e12, 0.0), std::string("ideal")}) {
    c.topology = topology;
    const Simulation s = run_simulation(c, catalog());
    const model::HardwareProfile h = catalog().hardware("h100");
    const KernelTimeModel kernel(load_kernel_profile("", catalog(), h), h.sms, {8, 64, {128, 128}, 1});
    for (const LayoutSimulation& r : s.results) {
      const model::Work w = model::count_work(model::parse_layout(r.layout, c.seq_len, 8), model::Mask::causal(c.seq_len),
                                              {128, 128}, 0, model::WorkDetail::query_tiles);
      // Each call at its profile's price (striped's trimmed ones at the forward's trimmed factor).
      const std::vector<Microseconds> calls = kernel.call_times(w, KernelPass::forward);
      // Each call after a device's first is followed by its merge (RingMerge tests price it),
      // except on the ideal topology, which prices the calls alone.
      std::vector<Microseconds> merges(calls.size(), 0.0);
      if (topology != "ideal") {
        merges = merge_times(w, calls, kernel.profile(), KernelPass::forward, {c.seq_len / 8, {8, 64, {128, 128}}, 8}, h.memory_bandwidth);
      }
      Microseconds expected = 0;
      for (Count round = 0; round < 8; ++round) {
        Microseconds slowest = 0;
        for (Count d = 0; d < 8; ++d) {
          const auto i = static_cast<size_t>(round * 8 + d);
          slowest = std::max(slowest, calls[i] + merges[i]);
        }
        expected += slowest;
      }
      EXPECT_NEAR(r.time_us, expected, topology == "ideal" ? 1e-9 * expected : 1e-6 * expected) << r.layout << " " << topology;
    }
  }
}

TEST(Simulation, SlowLinksEraseTheLayoutAdvantage) {
  SimulateConfig c = small_config();
  double previous_striped = 1e9, previous_zigzag = 1e9;
  for (const double bandwidth : {1000.0, 100.0, 10.0, 1.0, 0.1}) {
    c.topology = switch_topology(8, bandwidth, 1.0);
    const Simulation s = run_simulation(c, catalog());
    const double striped = s.results[1].speedup_vs_contiguous;
    const double zigzag = s.results[2].speedup_vs_contiguous;
    EXPECT_LE(striped, previous_striped + 1e-9) << bandwidth;
    EXPECT_LE(zigzag, previous_zigzag + 1e-9) << bandwidth;
    previous_striped = striped;
    previous_zigzag = zigzag;
    if (bandwidth == 1000.0) {
      // Fast links: the compute balance shows (causal, 8 devices: up to ~(2N)/(N+1) = 1.78x,
      // less the launch and scheduling costs a real kernel pays).
      EXPECT_GT(zigzag, 1.5);
      EXPECT_GT(zigzag, striped);
    }
  }
  EXPECT_LT(previous_striped, 1.05);
  EXPECT_LT(previous_zigzag, 1.05);
  EXPECT_GE(previous_zigzag, 0.999);
}

TEST(Simulation, ForwardBackwardIsForwardThenBackward) {
  SimulateConfig c = small_config();
  c.pass = PassSelection::forward_backward;
  const Simulation both = run_simulation(c, catalog());
  for (const auto& r : both.results) {
    ASSERT_EQ(r.passes.size(), 2u);
    EXPECT_EQ(r.passes[0].pass, RingPass::forward);
    EXPECT_DOUBLE_EQ(r.passes[1].start_us, r.passes[0].end_us);
    EXPECT_DOUBLE_EQ(r.time_us, r.passes[1].end_us);
    // Backward tiles cost 2.5x: the backward pass is the longer one.
    EXPECT_GT(r.passes[1].makespan_us(), 2.0 * r.passes[0].makespan_us());
  }
}

TEST(Simulation, DeterministicJsonAndTrace) {
  SimulateConfig c = small_config();
  c.topology = "cluster:2x4";
  c.pass = PassSelection::forward_backward;
  const auto a = output::to_json(run_simulation(c, catalog()), true).dump();
  const auto b = output::to_json(run_simulation(c, catalog()), true).dump();
  EXPECT_EQ(a, b);
  const auto trace = output::chrome_trace(run_simulation(c, catalog()));
  ASSERT_TRUE(trace.contains("traceEvents"));
  size_t compute = 0, transfer = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "compute") ++compute;
    if (e.value("cat", "") == "transfer") ++transfer;
  }
  EXPECT_GT(compute, 0u);
  EXPECT_GT(transfer, 0u);
}

TEST(Simulation, BytesPerHopFollowTheWorkload) {
  SimulateConfig c = small_config();
  c.kv_heads = 2;
  c.batch = 3;
  c.dtype = "fp8";
  const Simulation s = run_simulation(c, catalog());
  EXPECT_EQ(s.kv_bytes, 2 * 8192 * 2 * 64 * 1 * 3);  // K and V, c tokens, 2 heads of 64, 1 byte, 3 sequences
  c.model = "llama3-8b";
  c.model_parallel = 4;
  c.dtype = "";
  const Simulation m = run_simulation(c, catalog());
  EXPECT_EQ(m.heads_per_device, 8);
  EXPECT_EQ(m.kv_heads_per_device, 2);
  EXPECT_EQ(m.dtype, "bf16");
}

TEST(Simulation, RejectsBadConfigurations) {
  SimulateConfig c = small_config();
  c.kv_buffers = 1;
  EXPECT_THROW((void)run_simulation(c, catalog()), model::InputError);
  c = small_config();
  c.topology = "nvswitch:4";
  EXPECT_THROW((void)run_simulation(c, catalog()), model::InputError);  // 4 GPUs < 8 devices
  c = small_config();
  c.dtype = "fp4";
  EXPECT_THROW((void)run_simulation(c, catalog()), model::InputError);
  c = small_config();
  c.heads = 6;
  c.kv_heads = 4;
  EXPECT_THROW((void)run_simulation(c, catalog()), model::InputError);
  c = small_config();
  c.model_parallel = 3;
  EXPECT_THROW((void)run_simulation(c, catalog()), model::InputError);
  EXPECT_THROW((void)plan_simulation(c, catalog()), model::InputError);  // parse-only mode's check
  c = small_config();
  c.topology = "cluster:4294967296x4294967296";  // 2^64 GPUs: the product wrapped to 0 before
  EXPECT_THROW((void)plan_simulation(c, catalog()), model::InputError);
  c = small_config();
  c.layouts.push_back("balanced");
  c.topology = "cluster:2x4";
  EXPECT_NO_THROW((void)plan_simulation(c, catalog()));
  EXPECT_THROW((void)simulate_config_from_json(nlohmann::json::parse(R"({"sync": "sometimes"})"), "e.json"), model::InputError);
  EXPECT_THROW((void)simulate_config_from_json(nlohmann::json::parse(R"({"speed": 1})"), "e.json"), model::InputError);
}

// Four devices on links that take no time, a barrier after every round: the lockstep ring time
// is sum_r max_d of the kernel's calls (the ideal topology prices them alone, with no merge).
SimulateConfig lockstep_on_free_links(std::string hardware, std::string kernel, Count heads, Count seq_len,
                                      std::vector<std::string> layouts) {
  SimulateConfig c;
  c.heads = c.kv_heads = heads;
  c.head_dim = 128;
  c.seq_len = seq_len;
  c.devices = 4;
  c.hardware = std::move(hardware);
  c.kernel = std::move(kernel);
  c.layouts = std::move(layouts);
  c.sync = SyncMode::lockstep;
  c.topology = "ideal";
  return c;
}

// A kernel driven as ring-flash-attention drives it is called on zigzag's halves, tiled from the
// half: a ring whose halves end inside a tile (13.25 tiles at n = 13568 on 4 devices) costs
// between the rings of 13 and 14 tiles a half, not a partial tile a row more (whole blocks cut
// a tile across the half: 2.40 ms against 2.58, above the 2.42 of 14 tiles, forward+backward on
// the H100 sdpa profile).
TEST(KernelTime, ZigzagHalvesEndingInsideATileCostBetweenTheirNeighbours) {
  const auto time_at = [](Count n) {
    SimulateConfig c = lockstep_on_free_links("h100", "sdpa", 16, n, {"zigzag"});
    c.pass = PassSelection::forward_backward;
    c.kernel_profile = load_kernel_profile("sdpa", catalog(), catalog().hardware("h100"));
    EXPECT_TRUE(c.kernel_profile->trims_below_diagonal);
    EXPECT_EQ(call_slicing(*c.kernel_profile), model::CallSlicing::runs);
    return run_simulation(c, catalog()).results.at(0).time_us;
  };
  const double below = time_at(13312), between = time_at(13568), above = time_at(14336);
  EXPECT_LT(below, between);
  EXPECT_LT(between, above);
}

// The kernel profile says how the kernel cuts its tiles, and the ring is priced in those tiles:
// FlashAttention-3 (varlen) on packed documents, with free links and a barrier every round, takes
// sum_r max_d of its calls over the work model's varlen tiles, and less than the fixed tiles would.
TEST(Simulation, PricesTheTilesOfTheKernelsTiling) {
  SimulateConfig c = lockstep_on_free_links("h200", "fa3", 8, 16 * 1024, {"contiguous", "doc-zigzag"});
  c.mask = "documents:lognormal:1024:1.2:seed=17";
  c.pad_documents = true;
  const Simulation s = run_simulation(c, catalog());
  EXPECT_EQ(s.tiling, model::Tiling::varlen);
  const model::Mask mask = model::pad_documents(model::parse_mask(c.mask, c.seq_len), 4).mask;
  ASSERT_EQ(s.config.seq_len, mask.seq_len());
  const KernelTimeModel kernel(s.kernel, s.hardware.sms, s.call_shape);
  auto lockstep_us = [&](const std::string& spec, model::Tiling tiling) {
    const model::Layout layout = model::parse_layout(spec, mask.seq_len(), 4, model::LayoutContext{&mask, s.tile, tiling});
    const model::Work w = model::count_work(layout, mask, s.tile, 1, model::WorkDetail::query_tiles, tiling);
    Microseconds total = 0;
    for (Count round = 0; round < 4; ++round) {
      Microseconds slowest = 0;
      for (Count d = 0; d < 4; ++d) {
        slowest = std::max(slowest, kernel.call_us(w.profiles[static_cast<size_t>(w.query_tile_profile.at(round, d))],
                                                   KernelPass::forward));
      }
      total += slowest;
    }
    return total;
  };
  for (const LayoutSimulation& r : s.results) {
    const Microseconds varlen = lockstep_us(r.layout, model::Tiling::varlen);
    EXPECT_NEAR(r.time_us, varlen, 1e-9 * varlen) << r.layout;
    EXPECT_LT(varlen, lockstep_us(r.layout, model::Tiling::fixed)) << r.layout;
  }
  // Naming the kernel's own tiling changes nothing; naming the other one is refused.
  c.tiling = model::Tiling::varlen;
  EXPECT_EQ(output::to_json(run_simulation(c, catalog()), true), output::to_json(s, true));
  c.tiling = model::Tiling::fixed;
  EXPECT_THROW((void)plan_simulation(c, catalog()), model::InputError);
  c.kernel = "stripesim-flash";  // this project's kernel: fixed tiling
  EXPECT_EQ(plan_simulation(c, catalog()).simulation.tiling, model::Tiling::fixed);
}

TEST(KernelProfile, TilingIsOptionalFixedByDefaultAndCheckedByName) {
  // FlashAttention as ring-flash-attention calls it on packed documents goes through its varlen
  // entry point; every other shipped kernel tiles straight across the block.
  int profiles = 0;
  for (const auto& folder : std::filesystem::directory_iterator(std::filesystem::path(catalog().root()) / "kernels")) {
    const model::HardwareProfile h = catalog().hardware(folder.path().filename().string());
    for (const auto& entry : std::filesystem::directory_iterator(folder.path())) {
      const std::string name = entry.path().stem().string();
      const bool flash_attention = name == "fa2" || name == "fa3";
      EXPECT_EQ(load_kernel_profile(name, catalog(), h).tiling,
                flash_attention ? model::Tiling::varlen : model::Tiling::fixed)
          << entry.path();
      ++profiles;
    }
  }
  // Every shipped preset ships at least its default kernel (and a folder of them is named by the
  // preset's stem or alias, so the loop above saw each one).
  const auto presets = catalog().shipped_hardware();
  ASSERT_GE(presets.size(), 9u);
  EXPECT_GE(profiles, static_cast<int>(presets.size()));
  for (const auto& preset : presets) {
    const model::HardwareProfile h = catalog().hardware(preset.stem);
    EXPECT_EQ(load_kernel_profile(h.default_kernel, catalog(), h).name, h.default_kernel) << preset.stem;
  }
  nlohmann::json doc = nlohmann::json::parse(R"({"name": "k", "hardware": "h100", "tile": "64x128",
      "forward": {"full_tile_us": 1, "partial_tile_us": 2}, "backward": {"full_tile_us": 3, "partial_tile_us": 4}})");
  EXPECT_EQ(kernel_profile_from_json(doc, "k.json").tiling, model::Tiling::fixed);
  EXPECT_EQ(to_json(kernel_profile_from_json(doc, "k.json")).at("tiling"), "fixed");
  doc["tiling"] = "varlen";
  const KernelProfile varlen = kernel_profile_from_json(doc, "k.json");
  EXPECT_EQ(varlen.tiling, model::Tiling::varlen);
  EXPECT_EQ(kernel_profile_from_json(nlohmann::json::parse(to_json(varlen).dump()), "again").tiling, model::Tiling::varlen);
  doc["tiling"] = "diagonal";
  try {
    (void)kernel_profile_from_json(doc, "k.json");
    ADD_FAILURE() << "an unknown tiling was accepted";
  } catch (const model::InputError& e) {
    EXPECT_STREQ(e.what(), "k.json field \"tiling\" 'diagonal': unknown tiling, expected fixed or varlen");
  }
  doc["tiling"] = 1;
  EXPECT_THROW((void)kernel_profile_from_json(doc, "k.json"), model::InputError);
  // A trimmed factor belongs to a kernel that trims; it is written only for one.
  doc["tiling"] = "fixed";
  doc["backward"]["trimmed_factor"] = 1.1;
  try {
    (void)kernel_profile_from_json(doc, "k.json");
    ADD_FAILURE() << "a trimmed factor on a kernel that does not trim was accepted";
  } catch (const model::InputError& e) {
    EXPECT_STREQ(e.what(), "k.json field \"backward\": trimmed_factor applies only to a kernel with \"trims_below_diagonal\": true");
  }
  doc["trims_below_diagonal"] = true;
  const KernelProfile trims = kernel_profile_from_json(doc, "k.json");
  EXPECT_DOUBLE_EQ(trims.backward.trimmed_factor, 1.1);
  EXPECT_DOUBLE_EQ(trims.forward.trimmed_factor, 1.0);
  EXPECT_EQ(kernel_profile_from_json(nlohmann::json::parse(to_json(trims).dump()), "again").backward, trims.backward);
  EXPECT_FALSE(to_json(varlen).at("forward").contains("trimmed_factor"));
  doc["backward"]["trimmed_factor"] = 0;
  EXPECT_THROW((void)kernel_profile_from_json(doc, "k.json"), model::InputError);
  doc["backward"]["trimmed_factor"] = 1.1;
  // Keys per backward block: absent (a block per key tile) is not written; a count round-trips.
  EXPECT_FALSE(to_json(varlen).contains("backward_block_keys"));
  doc["backward_block_keys"] = 32;
  const KernelProfile split = kernel_profile_from_json(doc, "k.json");
  EXPECT_EQ(split.backward_block_keys, 32);
  EXPECT_EQ(kernel_profile_from_json(nlohmann::json::parse(to_json(split).dump()), "again").backward_block_keys, 32);
  doc["backward_block_keys"] = 0;
  EXPECT_THROW((void)kernel_profile_from_json(doc, "k.json"), model::InputError);
  doc.erase("backward_block_keys");
  // Which blocks the backward runs: the default (query tiles) is not written; the others
  // round-trip, the dQ share only with the grid that has dQ blocks, strictly between 0 and 1.
  EXPECT_FALSE(to_json(varlen).contains("backward_blocks"));
  EXPECT_FALSE(to_json(varlen).contains("backward_dq_share"));
  doc["backward_blocks"] = "key_tiles_then_query_tiles";
  doc["backward_dq_share"] = 0.25;
  const KernelProfile two_sets = kernel_profile_from_json(doc, "k.json");
  EXPECT_EQ(two_sets.backward_blocks, BackwardBlocks::key_tiles_then_query_tiles);
  const KernelProfile read_back = kernel_profile_from_json(nlohmann::json::parse(to_json(two_sets).dump()), "again");
  EXPECT_EQ(read_back.backward_blocks, BackwardBlocks::key_tiles_then_query_tiles);
  EXPECT_DOUBLE_EQ(read_back.backward_dq_share, 0.25);
  const auto refused = [&](const char* what) {
    try {
      (void)kernel_profile_from_json(doc, "k.json");
      ADD_FAILURE() << what << " was accepted";
      return std::string{};
    } catch (const model::InputError& e) {
      return std::string(e.what());
    }
  };
  doc["backward_dq_share"] = 1;
  EXPECT_EQ(refused("a dQ share of 1"), "k.json field \"backward_dq_share\": must be between 0 and 1 (the dQ blocks' share of a tile), got 1");
  doc["backward_dq_share"] = 0;
  EXPECT_THROW((void)kernel_profile_from_json(doc, "k.json"), model::InputError);
  doc["backward_blocks"] = "key_tiles";
  doc["backward_dq_share"] = 0.5;
  EXPECT_EQ(refused("a dQ share without dQ blocks"),
            "k.json field \"backward_dq_share\": applies only with \"backward_blocks\": \"key_tiles_then_query_tiles\"");
  doc.erase("backward_dq_share");
  EXPECT_EQ(kernel_profile_from_json(doc, "k.json").backward_blocks, BackwardBlocks::key_tiles);
  doc["backward_blocks"] = "rows";
  EXPECT_EQ(refused("an unknown backward grid"),
            "k.json field \"backward_blocks\": expected \"query_tiles\", \"key_tiles\" or \"key_tiles_then_query_tiles\", got \"rows\"");
  doc.erase("backward_blocks");
  // A profile names the device it was timed on: an empty name was accepted, and its note read
  // "measured on  (its field "hardware")".
  nlohmann::json nameless = doc;
  nameless["hardware"] = "";
  try {
    (void)kernel_profile_from_json(nameless, "k.json");
    ADD_FAILURE() << "an empty hardware name was accepted";
  } catch (const model::InputError& e) {
    EXPECT_STREQ(e.what(), "k.json field \"hardware\": must not be empty");
  }
  // Fixed slots stand for every SM's blocks: a count of blocks an SM beside them, which nothing
  // read, is refused (the main placement's or the backward's).
  nlohmann::json slotted = doc;
  slotted["slots"] = 4;
  slotted["blocks_per_sm"] = 1;
  EXPECT_EQ(kernel_profile_from_json(slotted, "k.json").slots, 4);
  slotted["backward_placement"] = {{"blocks_per_sm", 2}};
  try {
    (void)kernel_profile_from_json(slotted, "k.json");
    ADD_FAILURE() << "blocks an SM beside slots were accepted";
  } catch (const model::InputError& e) {
    EXPECT_STREQ(e.what(), "k.json field \"backward_placement\" field \"blocks_per_sm\": a profile with \"slots\" runs 4 fixed "
                           "slots, not blocks on SMs: must be 1 or left out, got 2");
  }
  // Block slots are SMs x blocks per SM: each bounded, so their product is a sane count (2^62
  // blocks per SM used to overflow it into an internal error).
  for (const auto& [field, value, message] :
       {std::tuple{"blocks_per_sm", Count{1} << 62, "k.json field \"blocks_per_sm\": must be between 1 and 1024, got 4611686018427387904"},
        std::tuple{"slots", Count{1} << 40, "k.json field \"slots\": must be between 1 and 67108864, got 1099511627776"},
        // Bounded as --head-dim is (1e15 was accepted and priced every tile at 0.00 us).
        std::tuple{"head_dim", Count{2048}, "k.json field \"head_dim\": must be between 1 and 1024, got 2048"},
        std::tuple{"max_head_dim", Count{1} << 40, "k.json field \"max_head_dim\": must be between 1 and 1024, got 1099511627776"}}) {
    nlohmann::json big = doc;
    big[field] = value;
    try {
      (void)kernel_profile_from_json(big, "k.json");
      ADD_FAILURE() << field;
    } catch (const model::InputError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
  // SM sharing and the backward's own placement: absent (fixed slots, one placement) is not
  // written; given, they round-trip; out of range, or sharing with fixed `slots`, is refused.
  EXPECT_FALSE(to_json(varlen).contains("lone_block_speedup"));
  EXPECT_FALSE(to_json(varlen).contains("backward_placement"));
  nlohmann::json shared = doc;
  shared["blocks_per_sm"] = 2;
  shared["lone_block_speedup"] = 1.5;
  shared["backward_placement"] = {{"blocks_per_sm", 4}, {"block_order", "longest_first"}, {"lone_block_speedup", 2}};
  const KernelProfile placed = kernel_profile_from_json(shared, "k.json");
  EXPECT_DOUBLE_EQ(placed.placement.lone_block_speedup, 1.5);
  EXPECT_EQ(backward_placement(placed), (BlockPlacement{4, BlockOrder::longest_first, 2}));
  const KernelProfile again = kernel_profile_from_json(nlohmann::json::parse(to_json(placed).dump()), "again");
  EXPECT_EQ(again.placement, placed.placement);
  EXPECT_EQ(again.backward_placement, placed.backward_placement);
  for (const auto& [field, value, message] :
       {std::tuple{"lone_block_speedup", 3.0, "k.json field \"lone_block_speedup\": must be between 1 and blocks_per_sm (2), got 3"},
        std::tuple{"lone_block_speedup", 0.5, "k.json field \"lone_block_speedup\": must be between 1 and blocks_per_sm (2), got 0.5"},
        std::tuple{"slots", 8.0, "k.json field \"lone_block_speedup\": a profile with \"slots\" runs fixed slots, not SMs that share their throughput"}}) {
    nlohmann::json bad = shared;
    if (std::string(field) == "slots") {
      bad[field] = static_cast<Count>(value);
    } else {
      bad[field] = value;
    }
    try {
      (void)kernel_profile_from_json(bad, "k.json");
      ADD_FAILURE() << field << " " << value;
    } catch (const model::InputError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
  // How the SM speeds up as it empties: "throughput" (the default, not written) or "lone_block",
  // on the main placement, a variant's or the backward's; said of fixed slots, or unknown, refused.
  EXPECT_FALSE(to_json(placed).contains("sm_sharing"));
  shared["sm_sharing"] = "lone_block";
  shared["backward_placement"]["sm_sharing"] = "throughput";
  const KernelProfile lone_only = kernel_profile_from_json(shared, "k.json");
  EXPECT_EQ(lone_only.placement.sharing, SmSharing::lone_block);
  EXPECT_EQ(backward_placement(lone_only).sharing, SmSharing::throughput);
  const nlohmann::ordered_json written = to_json(lone_only);
  EXPECT_EQ(written.at("sm_sharing"), "lone_block");
  EXPECT_FALSE(written.at("backward_placement").contains("sm_sharing"));
  EXPECT_EQ(kernel_profile_from_json(nlohmann::json::parse(written.dump()), "again").placement, lone_only.placement);
  for (const auto& [value, speedup, message] :
       {std::tuple{"lone_block", 1.0, "k.json field \"sm_sharing\": needs lone_block_speedup above 1 (without it every block runs as a fixed slot)"},
        std::tuple{"evenly", 1.5, "k.json field \"sm_sharing\": expected \"throughput\" or \"lone_block\", got \"evenly\""}}) {
    nlohmann::json bad = shared;
    bad["sm_sharing"] = value;
    bad["lone_block_speedup"] = speedup;
    try {
      (void)kernel_profile_from_json(bad, "k.json");
      ADD_FAILURE() << value;
    } catch (const model::InputError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
  shared.erase("sm_sharing");
  shared["backward_placement"].erase("sm_sharing");
  shared["backward_placement"]["lone_block_speedup"] = 5;
  EXPECT_THROW((void)kernel_profile_from_json(shared, "k.json"), model::InputError) << "above the backward's own 4 blocks";
  shared["backward_placement"] = {{"blocks_per_sm", 2}, {"sms", 3}};
  EXPECT_THROW((void)kernel_profile_from_json(shared, "k.json"), model::InputError) << "an unknown field";
  nlohmann::json many_sms = nlohmann::json::parse(to_json(catalog().hardware("h100")).dump());
  many_sms["sms"] = Count{1} << 40;
  EXPECT_THROW((void)model::hardware_profile_from_json(many_sms, "h.json"), model::InputError);
  // A hardware profile's sources are records, but an object of them, and the one read (the
  // element-wise cost's, for simulate's note) a string: not an internal error at the step.
  const auto refusal = [](const nlohmann::json& sources) {
    nlohmann::json doc = nlohmann::json::parse(to_json(catalog().hardware("h100")).dump());
    doc["sources"] = sources;
    try {
      (void)model::hardware_profile_from_json(doc, "h.json");
    } catch (const model::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal("some string"), "h.json field \"sources\": expected an object, got \"some string\"");
  EXPECT_EQ(refusal({{"elementwise_bytes_per_dmodel", 50}}),
            "h.json field \"sources\" field \"elementwise_bytes_per_dmodel\": expected a string, got 50");
  EXPECT_EQ(refusal({{"peak_tflops", "a datasheet"}}), "accepted");
  // A layer's matmul rate without its element-wise cost would price that work as nothing.
  nlohmann::json no_elementwise = nlohmann::json::parse(to_json(catalog().hardware("h100")).dump());
  no_elementwise.erase("elementwise_bytes_per_dmodel");
  try {
    (void)model::hardware_profile_from_json(no_elementwise, "h.json");
    ADD_FAILURE() << "a profile with matmul_efficiency and no element-wise cost was accepted";
  } catch (const model::InputError& e) {
    EXPECT_EQ(std::string(e.what()), "h.json field \"elementwise_bytes_per_dmodel\": a profile with matmul_efficiency prices a "
                                      "layer's element-wise work too; give elementwise_bytes_per_dmodel (0 when it is to cost nothing)");
  }
  no_elementwise["elementwise_bytes_per_dmodel"] = 0;
  EXPECT_EQ(model::hardware_profile_from_json(no_elementwise, "h.json").elementwise_bytes_per_dmodel, 0);
  // Written back with it, so a profile that costs it nothing reads back.
  EXPECT_TRUE(to_json(model::hardware_profile_from_json(no_elementwise, "h.json")).contains("elementwise_bytes_per_dmodel"));
}

// Kernel and topology names are found case aside, as models and hardware are, and a near miss is
// offered the name it misses.
TEST(Simulation, KernelAndTopologyNamesAreFoundCaseAside) {
  const model::HardwareProfile h100 = catalog().hardware("h100");
  EXPECT_EQ(to_json(load_kernel_profile("FA2", catalog(), h100)), to_json(load_kernel_profile("fa2", catalog(), h100)));
  try {
    (void)load_kernel_profile("flexx", catalog(), h100);
    ADD_FAILURE() << "flexx was accepted";
  } catch (const model::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(did you mean 'flex'?)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(load_topology("DGX-H100", catalog().root(), 450).gpu_count(), load_topology("dgx-h100", catalog().root(), 450).gpu_count());
  EXPECT_EQ(load_topology("NVSwitch:4", catalog().root(), 450).gpu_count(), 4);
  EXPECT_TRUE(load_topology("Ideal", catalog().root(), 450, std::nullopt, 4).is_ideal());
  try {
    (void)load_topology("dgx-h10", catalog().root(), 450);
    ADD_FAILURE() << "dgx-h10 was accepted";
  } catch (const model::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(did you mean 'dgx-h100'?)"), std::string::npos) << e.what();
  }
}

// A call in another precision runs at the hardware's peak for it over the kernel profile's own:
// an H100's bf16 profile runs fp32 (67 TFLOP/s against 989.4) 14.8x slower and fp8 twice as fast.
// A dtype the hardware lists no rate for is refused by kind (so that a file's field can be named
// instead of --dtype), and a kernel profile whose own dtype has none names the kernel.
TEST(Simulation, PrecisionSlowdownIsTheRatioOfPeakRates) {
  const model::HardwareProfile h100 = catalog().hardware("h100");
  const KernelProfile fa2 = load_kernel_profile("fa2", catalog(), h100);
  ASSERT_EQ(fa2.dtype, "bf16");
  EXPECT_DOUBLE_EQ(precision_slowdown(h100, fa2, "bf16"), 1.0);
  EXPECT_DOUBLE_EQ(precision_slowdown(h100, fa2, "fp32"), 989.4 / 67);
  EXPECT_DOUBLE_EQ(precision_slowdown(h100, fa2, "fp8"), 989.4 / 1978.9);
  const model::HardwareProfile tpu = catalog().hardware("tpu-v4");
  try {
    (void)precision_slowdown(tpu, fa2, "fp32");
    ADD_FAILURE() << "fp32 on tpu-v4 was accepted";
  } catch (const model::InputError& e) {
    EXPECT_EQ(e.input(), model::Input::dtype);
    EXPECT_STREQ(e.what(), "--dtype fp32: hardware tpu-v4 lists no peak rate for it");
  }
  KernelProfile fp32_kernel = fa2;
  fp32_kernel.dtype = "fp32";
  try {
    (void)precision_slowdown(tpu, fp32_kernel, "bf16");
    ADD_FAILURE() << "a kernel profile in fp32 was accepted on tpu-v4";
  } catch (const model::InputError& e) {
    EXPECT_EQ(e.input(), model::Input::kernel);
    EXPECT_STREQ(e.what(), "--kernel 'fa2': timed in fp32, for which hardware tpu-v4 lists no peak rate to convert its times by");
  }
}

// The slowest K/V hop of a zigzag ring of 8 devices at 64k tokens on the hardware's NVLink.
Microseconds slowest_ring_hop_us(const char* hardware) {
  SimulateConfig c;
  c.hardware = hardware;
  c.seq_len = 65536;
  c.devices = 8;
  c.layouts = {"zigzag"};
  const Simulation s = run_simulation(c, catalog());
  Microseconds slowest = 0;
  for (const auto& hop : s.hops) slowest = std::max(slowest, hop.transfer_us(s.kv_bytes));
  return slowest;
}

// An H800 is an H100 with slower NVLink: its profile names the H100's kernel folder
// (kernels_from) and gets every H100 kernel profile as it is; the field round-trips, and naming
// itself (or nothing) is refused. On the same ring the H800's hops take 450 / 200 the time.
// A profile without a default kernel (optional) is written without one and reads back: an empty
// default_kernel, which the reader refuses, was written for it (a saved validate run could not be
// read again).
TEST(Simulation, AHardwareProfileWithoutADefaultKernelRoundTrips) {
  nlohmann::json doc = model::read_json_file(std::string(STRIPESIM_SOURCE_DIR) + "/configs/hardware/cpu.json", "cpu.json");
  doc.erase("default_kernel");
  const model::HardwareProfile h = model::hardware_profile_from_json(doc, "cpu.json");
  EXPECT_TRUE(h.default_kernel.empty());
  const nlohmann::ordered_json written = model::to_json(h);
  EXPECT_FALSE(written.contains("default_kernel")) << written.dump();
  EXPECT_EQ(model::to_json(model::hardware_profile_from_json(nlohmann::json::parse(written.dump()), "again")), written);
  EXPECT_EQ(model::to_json(catalog().hardware("h100")).at("default_kernel"), "sdpa");
}

TEST(Simulation, AnH800RunsTheH100sKernelsOverSlowerLinks) {
  const model::HardwareProfile h800 = catalog().hardware("h800");
  const model::HardwareProfile h100 = catalog().hardware("h100");
  EXPECT_EQ(h800.kernels_from, "h100");
  EXPECT_DOUBLE_EQ(h800.link_bandwidth, 200);
  EXPECT_EQ(h800.sms, h100.sms);
  EXPECT_EQ(h800.peak_tflops.at("bf16"), h100.peak_tflops.at("bf16"));
  for (const char* kernel : {"sdpa", "flex", "fa2", "stripesim-flash"}) {
    EXPECT_EQ(to_json(load_kernel_profile(kernel, catalog(), h800)), to_json(load_kernel_profile(kernel, catalog(), h100)))
        << kernel;
  }
  const nlohmann::ordered_json written = model::to_json(h800);
  EXPECT_EQ(written.at("kernels_from"), "h100");
  EXPECT_EQ(model::hardware_profile_from_json(nlohmann::json::parse(written.dump()), "again").kernels_from, "h100");
  EXPECT_FALSE(model::to_json(h100).contains("kernels_from"));
  for (const char* bad : {"h800-sxm", ""}) {
    nlohmann::json doc = nlohmann::json::parse(written.dump());
    doc["kernels_from"] = bad;
    try {
      (void)model::hardware_profile_from_json(doc, "h.json");
      ADD_FAILURE() << bad;
    } catch (const model::InputError& e) {
      EXPECT_EQ(std::string(e.what()), fmt::format("h.json field \"kernels_from\": must name another hardware profile, got \"{}\"", bad));
    }
  }
  // A misspelt name finds no kernels, and the refusal says why (it blamed the default kernel alone).
  nlohmann::json misspelt = nlohmann::json::parse(written.dump());
  misspelt["kernels_from"] = "h10O";
  try {
    (void)load_kernel_profile("", catalog(), model::hardware_profile_from_json(misspelt, "h.json"));
    ADD_FAILURE() << "kernels_from h10O found a kernel";
  } catch (const model::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "hardware h800-sxm field \"default_kernel\" = 'sdpa': no such kernel for hardware h800-sxm (it has no kernel "
              "profiles; give a JSON file), and its \"kernels_from\" = 'h10O' leads to no folder of kernels; give --kernel NAME or "
              "mend the profile");
  }
  // Named by the profile's full name, the H100's kernels are found through its alias's folder: a
  // kernel missing there says nothing of kernels_from.
  misspelt["kernels_from"] = "h100-sxm";
  try {
    (void)load_kernel_profile("sdpx", catalog(), model::hardware_profile_from_json(misspelt, "h.json"));
    ADD_FAILURE() << "sdpx was found";
  } catch (const model::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected one of"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("kernels_from"), std::string::npos) << e.what();
  }
  // The hops of the same ring: K/V at 200 GB/s against 450.
  EXPECT_NEAR(slowest_ring_hop_us("h800") / slowest_ring_hop_us("h100"), 450.0 / 200.0, 0.02);
}

// An A800 is an A100 with slower NVLink, as an H800 is an H100: the A100's kernel profiles as they
// are, the A100's die and memory, NVLink at 200 GB/s; it describes a PyTorch stack where the a100
// preset keeps the Striped Attention paper's JAX one (bf16 attention, 128x128 tiles, 50 element-wise
// bytes per token per d_model against 4016).
TEST(Simulation, AnA800RunsTheA100sKernelsOverSlowerLinks) {
  const model::HardwareProfile a800 = catalog().hardware("a800");
  const model::HardwareProfile a100 = catalog().hardware("a100");
  EXPECT_EQ(a800.name, "a800-sxm");
  EXPECT_EQ(a800.kernels_from, "a100");
  EXPECT_DOUBLE_EQ(a800.link_bandwidth, 200);
  EXPECT_EQ(a800.sms, a100.sms);
  EXPECT_DOUBLE_EQ(a800.memory_bandwidth, a100.memory_bandwidth);
  EXPECT_EQ(a800.peak_tflops, a100.peak_tflops);
  EXPECT_DOUBLE_EQ(a800.elementwise_bytes_per_dmodel, catalog().hardware("h800").elementwise_bytes_per_dmodel);
  EXPECT_DOUBLE_EQ(a800.elementwise_bytes_per_dmodel, 50);
  EXPECT_DOUBLE_EQ(a100.elementwise_bytes_per_dmodel, 4016);
  for (const char* kernel : {"fa2", "blockwise"}) {
    EXPECT_EQ(to_json(load_kernel_profile(kernel, catalog(), a800)), to_json(load_kernel_profile(kernel, catalog(), a100)))
        << kernel;
  }
  EXPECT_NEAR(slowest_ring_hop_us("a800") / slowest_ring_hop_us("a100"), 300.0 / 200.0, 0.02);
}

// A kernel profile carries the device it was measured on: priced on another device (an H100's
// cuDNN on a TPU) the result says so, once, naming both; on its own hardware, an alias of it, or
// hardware that takes its kernels from the profile's (an H800 on the H100's), it says nothing.
TEST(Simulation, AKernelMeasuredOnAnotherDeviceIsNoted) {
  const auto notes_of = [](const char* hardware, const std::string& kernel) {
    SimulateConfig c;
    c.hardware = hardware;
    c.kernel = kernel;
    c.seq_len = 32768;
    c.devices = 4;
    c.layouts = {"striped"};
    return simulation_notes(run_simulation(c, catalog()));
  };
  const std::string h100_sdpa = (std::filesystem::path(catalog().root()) / "kernels" / "h100" / "sdpa.json").string();
  const std::vector<std::string> on_tpu = notes_of("tpu-v4", h100_sdpa);
  ASSERT_EQ(on_tpu.size(), 1u);
  EXPECT_EQ(on_tpu.front(),
            "kernel sdpa: measured on h100-sxm (its field \"hardware\"), priced here on tpu-v4: every call costs what it cost "
            "on h100-sxm, whatever this device's rates; give a kernel profile of tpu-v4 or fit one (README, \"Kernels, and how "
            "accurate is it\")");
  EXPECT_TRUE(notes_of("h100", h100_sdpa).empty());
  EXPECT_TRUE(notes_of("h100-sxm", "sdpa").empty());
  EXPECT_TRUE(notes_of("h800", h100_sdpa).empty()) << "the H800 runs the H100's kernels (kernels_from)";
  EXPECT_TRUE(notes_of("h800", "flex").empty());
  // A profile that names the hardware by an alias, in another case, is the same device's.
  nlohmann::json doc = to_json(load_kernel_profile("sdpa", catalog(), catalog().hardware("h100")));
  doc["hardware"] = "H100";
  const KernelProfile aliased = kernel_profile_from_json(doc, "k.json");
  EXPECT_FALSE(kernel_hardware_note(aliased, catalog().hardware("h100-sxm"), catalog()).has_value());
  EXPECT_FALSE(kernel_hardware_note(aliased, catalog().hardware("h800"), catalog()).has_value());
  EXPECT_TRUE(kernel_hardware_note(aliased, catalog().hardware("h200"), catalog()).has_value());
  // kernels_from is followed as far as it leads: an H800 calibrated by validate runs the H800's
  // kernels, which are the H100's; a chain that loops ends where it meets a name again.
  model::HardwareProfile calibrated = catalog().hardware("h800");
  calibrated.kernels_from = calibrated.name;
  calibrated.name = "h800-sxm-calibrated";
  calibrated.aliases.clear();
  const std::vector<std::string> homes = kernel_homes(calibrated, catalog());
  EXPECT_EQ(homes.front(), "h800-sxm-calibrated");
  EXPECT_NE(std::ranges::find(homes, "h100"), homes.end());
  EXPECT_FALSE(kernel_hardware_note(aliased, calibrated, catalog()).has_value());
  EXPECT_EQ(load_kernel_profile("sdpa", catalog(), calibrated).hardware, "h100-sxm");
  model::HardwareProfile loop = catalog().hardware("h800");
  loop.kernels_from = "H800";  // itself, by an alias: the chain ends at once
  EXPECT_EQ(kernel_homes(loop, catalog()), (std::vector<std::string>{"h800-sxm", "h800"}));
}

// A device that computes the whole pass (free links, no mask) is idle for 0, not for the last
// bit of rounding between its calls' summed durations and the pass's span (-2.3e-13 us was
// printed as "-0.000 ms"), and its busy time never passes the time.
TEST(Simulation, IdleIsNeverNegativeWhereDevicesComputeThroughout) {
  for (const auto& [hardware, devices, seq_len] : {std::tuple{"h100", Count{4}, Count{8192}}, std::tuple{"b200", Count{6}, Count{12288}}}) {
    SimulateConfig c;
    c.hardware = hardware;
    c.devices = devices;
    c.seq_len = seq_len;
    c.mask = "bidirectional";
    c.pass = PassSelection::forward_backward;
    c.topology = "ideal";
    const Simulation sim = run_simulation(c, catalog());
    for (const LayoutSimulation& layout : sim.results) {
      const RingTotals totals = ring_totals(layout);
      EXPECT_GE(totals.max_idle_us, 0.0) << hardware << " " << layout.layout;
      EXPECT_LE(totals.mean_busy_us, layout.time_us) << hardware << " " << layout.layout;
      for (const RingTimeline& pass : layout.passes) {
        for (const DeviceSummary& d : pass.device_summary) {
          EXPECT_GE(d.idle_us, 0.0) << hardware << " " << layout.layout;
          EXPECT_LE(d.busy_us, pass.makespan_us()) << hardware << " " << layout.layout;
        }
      }
    }
  }
}

// A ring of one device makes one call and sends nothing: --merges, --skip-unread-hops and --sync
// lockstep change nothing there, and are said to, not ignored.
TEST(Simulation, RingSettingsOnOneDeviceAreNotedAsChangingNothing) {
  SimulateConfig c;
  c.seq_len = 32768;
  c.devices = 1;
  c.layouts = {"contiguous"};
  const Simulation plain = run_simulation(c, catalog());
  EXPECT_TRUE(simulation_notes(plain).empty());
  c.merges = "eager";
  c.skip_unread_hops = true;
  const Simulation given = run_simulation(c, catalog());
  EXPECT_DOUBLE_EQ(given.results.front().time_us, plain.results.front().time_us);
  const std::vector<std::string> notes = simulation_notes(given);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes.front(), "--merges eager and --skip-unread-hops: a ring of one device makes one call and sends nothing, so they "
                           "change nothing here");
  // Nor does waiting in lockstep: one device has no rounds to wait for.
  SimulateConfig lockstep = c;
  lockstep.merges.clear();
  lockstep.skip_unread_hops = false;
  lockstep.sync = SyncMode::lockstep;
  const Simulation waiting = run_simulation(lockstep, catalog());
  EXPECT_DOUBLE_EQ(waiting.results.front().time_us, plain.results.front().time_us);
  EXPECT_EQ(simulation_notes(waiting),
            std::vector<std::string>{"--sync lockstep: a ring of one device makes one call and sends nothing, so it changes nothing here"});
}

// One contiguous call pair of FlashAttention-2 on an H100: what the notes below are about.
SimulateConfig fa2_on_h100() {
  SimulateConfig c;
  c.hardware = "h100";
  c.kernel = "fa2";
  c.seq_len = 16384;
  c.devices = 2;
  c.layouts = {"contiguous"};
  return c;
}

// A precision the kernel was not timed in is priced at the peaks' ratio, and said so.
TEST(Simulation, APrecisionTheKernelWasNotTimedInIsNoted) {
  SimulateConfig c = fa2_on_h100();
  EXPECT_TRUE(simulation_notes(run_simulation(c, catalog())).empty());
  c.dtype = "bf16";
  EXPECT_TRUE(simulation_notes(run_simulation(c, catalog())).empty()) << "the profile's own precision";
  c.dtype = "fp8";
  const std::vector<std::string> notes = simulation_notes(run_simulation(c, catalog()));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes.front(), "kernel fa2 was timed in bf16: in fp8 its tiles and blocks cost 0.5x, the ratio of h100-sxm's peaks (bf16 "
                           "against fp8), as if the kernel had a path in fp8 running at that rate; give a profile timed in fp8 "
                           "where it has one");
}

// An all-gather backward in head groups sends every device's K/V share to the others and its
// dK/dV share back: 2 (N - 1) blocks over each device's one NIC, whatever the groups (the next
// group's gather and this one's reduce-scatter share the link; side by side at full speed each,
// 8 groups had come out at 88.7 ms, below this bound).
TEST(Simulation, AnAllGatherBackwardSendsItsGatherAndReduceScatterOverOneLink) {
  SimulateConfig c;
  c.model = "llama3-8b";  // 8 K/V heads of 128: a block of 8k tokens is 33.5 MB in bf16
  c.hardware = "h100";
  c.topology = "cluster:8x1:nic=25gbps";
  c.devices = 8;
  c.seq_len = 64 * 1024;
  c.pass = PassSelection::backward;
  c.layouts = {"zigzag"};
  const double block = 2.0 * 8192 * 8 * 128 * 2;
  const double bound_us = 2 * 7 * block / 3.125e9 * 1e6;  // 150.3 ms
  for (const char* cp : {"allgather", "allgather:2", "allgather:4", "allgather:8"}) {
    c.cp = cp;
    const double time_us = run_simulation(c, catalog()).results.front().time_us;
    EXPECT_GE(time_us, bound_us) << cp;
    EXPECT_LE(time_us, bound_us * 1.15) << cp << ": the links are the bottleneck, compute hides under them";
  }
}

// A head size the kernel is not built for (FlashAttention-2 and -3 stop at 256) is priced all the
// same, and said to be no call that runs; at or below the bound, nothing to say.
TEST(Simulation, AHeadSizeAboveTheKernelsBoundIsNoted) {
  SimulateConfig c = fa2_on_h100();
  c.heads = 8;
  c.kv_heads = 8;
  c.head_dim = 256;
  EXPECT_TRUE(simulation_notes(run_simulation(c, catalog())).empty()) << "256 is the bound itself";
  c.head_dim = 512;
  const Simulation wide = run_simulation(c, catalog());
  const std::vector<std::string> notes = simulation_notes(wide);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes.front(), "kernel fa2 is built for head sizes up to 256 (its field \"max_head_dim\"): no call of it runs at head "
                           "size 512, its tiles are priced by extrapolating from the head size 128 it was timed at, as if one ran; "
                           "give a kernel built for it");
  c.kernel = "flex";  // no bound known: flex_attention compiles a kernel for the head size it is given
  EXPECT_TRUE(simulation_notes(run_simulation(c, catalog())).empty());
  EXPECT_FALSE(wide.kernel.max_head_dim == std::nullopt);
  KernelProfile k = wide.kernel;
  nlohmann::json doc = nlohmann::json::parse(to_json(k).dump());
  EXPECT_EQ(doc.at("max_head_dim"), 256) << "written back, so a refit keeps it";
  EXPECT_EQ(kernel_profile_from_json(doc, "again").max_head_dim, k.max_head_dim);
  doc["max_head_dim"] = 64;
  try {
    (void)kernel_profile_from_json(doc, "k.json");
    ADD_FAILURE() << "a bound below the head size the costs were timed at was accepted";
  } catch (const model::InputError& e) {
    EXPECT_STREQ(e.what(), "k.json field \"max_head_dim\": 64 is below the profile's head_dim 128, the size its costs were timed at");
  }
}

// "Every call costs what it cost there" includes its waves: the blocks go on the SMs of the device
// the profile was measured on (132 on the H100), not the pricing device's (304 on an MI300X,
// where 2048 blocks took 7 waves instead of 16 and the call ran above the MI300X's peak).
TEST(Simulation, AKernelOfAnotherDeviceRunsOnThatDevicesSms) {
  const auto time_on = [](const char* hardware, const std::string& kernel, const std::string& dtype = "") {
    SimulateConfig c;
    c.hardware = hardware;
    c.kernel = kernel;
    c.dtype = dtype;
    c.seq_len = 16384;
    c.devices = 1;
    c.heads = 16;
    c.mask = "bidirectional";
    c.topology = "ideal";
    c.layouts = {"contiguous"};
    const Simulation s = run_simulation(c, catalog());
    EXPECT_EQ(s.kernel_sms, 132) << hardware;
    return s.results.front().time_us;
  };
  const std::string h100_sdpa = (std::filesystem::path(catalog().root()) / "kernels" / "h100" / "sdpa.json").string();
  const double on_h100 = time_on("h100", h100_sdpa);
  for (const char* other : {"mi300x", "a100", "b200", "tpu-v4"}) EXPECT_DOUBLE_EQ(time_on(other, h100_sdpa), on_h100) << other;
  // In another precision too, converted by the peaks of the device it was measured on (before
  // 2026-12-04 by the pricing device's: the same H100 call in fp32 cost 41.5 ms on an MI300X and
  // 82.9 on an A100 where the H100 takes 76.5). CPUs list no bf16 rate: none is needed unconverted.
  const double fp32_on_h100 = time_on("h100", h100_sdpa, "fp32");
  EXPECT_GT(fp32_on_h100, 2 * on_h100) << "fp32 runs at a fraction of bf16's peak";
  for (const char* other : {"mi300x", "a100"}) EXPECT_DOUBLE_EQ(time_on(other, h100_sdpa, "fp32"), fp32_on_h100) << other;
  EXPECT_DOUBLE_EQ(time_on("cpu", h100_sdpa), on_h100);
  // A device stripesim has no profile of: its SMs are unknown, so the pricing device's are used, and said.
  nlohmann::json doc = to_json(load_kernel_profile("sdpa", catalog(), catalog().hardware("h100")));
  doc["hardware"] = "my-gpu";
  SimulateConfig c;
  c.hardware = "mi300x";
  c.kernel_profile = kernel_profile_from_json(doc, "k.json");
  c.seq_len = 16384;
  c.devices = 1;
  c.layouts = {"contiguous"};
  const Simulation unknown = run_simulation(c, catalog());
  EXPECT_EQ(unknown.kernel_sms, 304);
  ASSERT_TRUE(unknown.kernel_note.has_value());
  EXPECT_NE(unknown.kernel_note->find("no hardware profile my-gpu is known to give its SMs: its blocks are placed on this "
                                      "device's 304"),
            std::string::npos)
      << *unknown.kernel_note;
}

// sdpa as ring-flash-attention drives it: striped's blocks from a later device run trimmed, so
// every round after the first holds a trimmed call at its pass's factor beside one that is not.
TEST(Simulation, StripedRoundsAfterTheFirstHoldTrimmedCalls) {
  SimulateConfig c = lockstep_on_free_links("h100", "sdpa", 16, 32 * 1024, {"striped"});
  c.pass = PassSelection::forward_backward;
  const Simulation s = run_simulation(c, catalog());
  ASSERT_TRUE(s.kernel.trims_below_diagonal);
  ASSERT_GT(s.kernel.backward.trimmed_factor, 1.0);
  const KernelTimeModel kernel(s.kernel, s.hardware.sms, s.call_shape);
  const model::Layout layout = model::Layout::striped(c.seq_len, 4);
  const model::Work w = model::count_work(layout, model::Mask::causal(c.seq_len), s.tile, 1, model::WorkDetail::query_tiles);
  // Every block of striped has the same tiles: one causal query tile profile (and its mirror
  // image from the keys' side).
  ASSERT_EQ(w.profiles.size(), 2u);
  for (Count r = 0; r < 4; ++r) {
    for (Count d = 0; d < 4; ++d) ASSERT_EQ(w.query_tile_profile.at(r, d), w.query_tile_profile.at(0, 0));
  }
  const auto& rows = w.profiles.at(static_cast<size_t>(w.query_tile_profile.at(0, 0)));
  // Rounds 1-3 hold both a trimmed call (devices before the source) and one that is not.
  double expected = 0;
  for (const KernelPass pass : {KernelPass::forward, KernelPass::backward}) {
    const double call = kernel.call_us(rows, pass);
    expected += call + 3 * std::max(call, kernel.costs(pass).trimmed_factor * call);
  }
  ASSERT_EQ(s.results.size(), 1u);
  EXPECT_NEAR(s.results[0].time_us, expected, 1e-9 * expected);
}

// A ring implementation folds every call's result into the device's running one: a device's first
// call of a pass only starts it, each later one costs bytes per element over the memory bandwidth,
// on the rows the call wrote (a zigzag call on the late half of the queries writes half of them).
TEST(RingMerge, EveryCallAfterTheFirstAtTheMemoryBandwidth) {
  const Count n = 32 * 1024, devices = 4, rows = n / devices;
  KernelProfile k = load_kernel_profile("sdpa", catalog(), catalog().hardware("h100"));
  k.merge = {38, 10, 8};
  const GigabytesPerSecond bandwidth = 3350;
  // 16 query heads, 4 K/V heads, head size 128.
  const MergeShape shape{rows, {16, 128, {128, 128}}, 4};
  const double full_forward = 38.0 * rows * 16 * 128 / (bandwidth * 1e3);
  const double slice_forward = (38.0 + 8) * rows * 16 * 128 / (bandwidth * 1e3);  // merged on a slice, copied back
  const double full_backward = 10.0 * rows * (16 + 2 * 4) * 128 / (bandwidth * 1e3);
  EXPECT_NEAR(full_forward, 190.30, 0.01);  // 318.8 MB at 3.35 TB/s
  for (const char* name : {"contiguous", "zigzag", "striped"}) {
    const model::Layout layout = model::parse_layout(name, n, devices);
    const model::Work w = model::count_work(layout, model::Mask::causal(n), {128, 128}, 1, model::WorkDetail::query_tiles);
    const KernelTimeModel kernel(k, 132, {16, 128, {128, 128}, 1});
    for (const KernelPass pass : {KernelPass::forward, KernelPass::backward}) {
      const std::vector<Microseconds> calls = kernel.call_times(w, pass);
      const std::vector<Microseconds> merges = merge_times(w, calls, k, pass, shape, bandwidth);
      const double full = pass == KernelPass::forward ? full_forward : full_backward;
      // A slice (the late half) pays the copy back in the forward only.
      const double slice = pass == KernelPass::forward ? slice_forward : full_backward;
      for (Count r = 0; r < devices; ++r) {
        for (Count d = 0; d < devices; ++d) {
          const Microseconds got = merges[static_cast<size_t>(r * devices + d)];
          if (r == 0) {
            EXPECT_EQ(got, 0) << name << ": the first call starts the running result";
          } else if (std::string(name) == "contiguous") {
            // Blocks from later devices are skipped; every earlier one is a full block.
            EXPECT_NEAR(got, r <= d ? full : 0.0, 1e-9) << name << " r" << r << " d" << d;
          } else if (std::string(name) == "zigzag" && pass == KernelPass::forward) {
            // K/V from an earlier device reaches every query, from a later one the late half.
            EXPECT_NEAR(got, r <= d ? full : slice / 2, 1e-9) << name << " r" << r << " d" << d;
          } else if (std::string(name) == "zigzag") {
            // Backward, dQ on the query rows and dK, dV on the key rows: every query against the
            // early half of an earlier device's keys, the late half of the queries against every
            // key of a later device's.
            const double early_keys = 10.0 * (rows * 16 + rows / 2 * 2 * 4) * 128 / (bandwidth * 1e3);
            const double late_queries = 10.0 * (rows / 2 * 16 + rows * 2 * 4) * 128 / (bandwidth * 1e3);
            EXPECT_NEAR(got, r <= d ? early_keys : late_queries, 1e-9) << name << " r" << r << " d" << d;
          } else {
            // striped: every query; the blocks of a later device run trimmed, q[1:] x k[:-1], and
            // write the rows of that call alone: the output (dQ) of all queries but the first, the
            // dK, dV of all keys but the last.
            const double trimmed = pass == KernelPass::forward ? (38.0 + 8) * (rows - 1) * 16 * 128 / (bandwidth * 1e3)
                                                               : 10.0 * (rows - 1) * (16 + 2 * 4) * 128 / (bandwidth * 1e3);
            EXPECT_NEAR(got, r <= d ? full : trimmed, 1e-9) << name << " r" << r << " d" << d;
          }
        }
      }
    }
  }
  const model::Work w = model::count_work(model::Layout::striped(n, devices), model::Mask::causal(n), {128, 128}, 1,
                                          model::WorkDetail::query_tiles);
  // A kernel that runs every block whole under its mask (flex, trims_below_diagonal false)
  // writes every row of a striped block from a later device: no slice to copy back.
  KernelProfile whole = k;
  whole.trims_below_diagonal = false;
  const KernelTimeModel whole_kernel(whole, 132, {16, 128, {128, 128}, 1});
  const std::vector<Microseconds> whole_merges =
      merge_times(w, whole_kernel.call_times(w, KernelPass::forward), whole, KernelPass::forward, shape, bandwidth);
  for (Count r = 1; r < devices; ++r) {
    for (Count d = 0; d < devices; ++d) EXPECT_NEAR(whole_merges[static_cast<size_t>(r * devices + d)], full_forward, 1e-9);
  }
  // No bytes: nothing to merge (the kernel accumulates in place).
  k.merge = {};
  for (const Microseconds us : merge_times(w, std::vector<Microseconds>(16, 1.0), k, KernelPass::forward, shape, bandwidth)) {
    EXPECT_EQ(us, 0);
  }
}

// A sliced call (CallSlicing::runs, as ring-flash-attention calls zigzag's late half: q[c/2:] x k)
// writes its own queries: where c/2 = 1696 ends inside a 128-query tile, the merge covers 1696
// rows, not the 14 tiles' 1792 (nor, counted whole, the 15 tiles with work from the block's
// start). Calls on all the queries (q x k[:c/2], the first) and aligned halves are as before.
TEST(RingMerge, ASlicedHalfMergesTheRowsItHolds) {
  const Count devices = 4, rows = 3392, n = devices * rows;  // c / 2 = 1696 = 13 x 128 + 32
  KernelProfile k = load_kernel_profile("sdpa", catalog(), catalog().hardware("h100"));
  k.merge = {38, 10, 8};
  const GigabytesPerSecond bandwidth = 3350;
  const MergeShape shape{rows, {16, 128, {128, 128}}, 4};
  const auto forward_us = [&](Count merged_rows) { return (38.0 + 8) * merged_rows * 16 * 128 / (bandwidth * 1e3); };
  const model::Layout layout = model::Layout::zigzag(n, devices);
  const model::Work w = model::count_work(layout, model::Mask::causal(n), {128, 128}, 1, model::WorkDetail::query_tiles,
                                          model::Tiling::fixed, model::CallSlicing::runs);
  const KernelTimeModel kernel(k, 132, {16, 128, {128, 128}, 1});
  const std::vector<Microseconds> merges = merge_times(w, kernel.call_times(w, KernelPass::forward), k, KernelPass::forward, shape, bandwidth);
  int late_halves = 0;
  for (Count r = 1; r < devices; ++r) {
    for (Count d = 0; d < devices; ++d) {
      const Microseconds got = merges[static_cast<size_t>(r * devices + d)];
      if (r > d) {  // K/V from a later device: the late half of the queries, 1696 of them
        ASSERT_EQ(w.call_queries.at(r, d), rows / 2) << "r" << r << " d" << d;
        EXPECT_NEAR(got, forward_us(rows / 2), 1e-9) << "r" << r << " d" << d;
        ++late_halves;
      } else {  // every query against the early half of the keys: the whole block, no slice
        EXPECT_EQ(w.call_queries.at(r, d), 0) << "r" << r << " d" << d;
        EXPECT_NEAR(got, 38.0 * rows * 16 * 128 / (bandwidth * 1e3), 1e-9) << "r" << r << " d" << d;
      }
    }
  }
  EXPECT_EQ(late_halves, 6);
}

// The simulated ring pays the merges on its compute stream; the validator, which predicts calls
// timed one by one, does not (validate's simulate_config clears them).
TEST(RingMerge, TheRingPaysThemOnItsComputeStream) {
  SimulateConfig c = lockstep_on_free_links("h100", "sdpa", 16, 32 * 1024, {"contiguous"});
  // The ideal topology prices the calls alone (what one GPU timing each call measures); links
  // that take no time keep the merges.
  const Simulation ideal = run_simulation(c, catalog());
  c.topology = switch_topology(4, 1e12, 0.0);
  const Simulation with = run_simulation(c, catalog());
  c.kernel_profile = load_kernel_profile(c.kernel, catalog(), catalog().hardware(c.hardware));
  c.kernel_profile->merge = {};
  const Simulation without = run_simulation(c, catalog());
  // Contiguous in lockstep: the last device makes every round's slowest call and merges three.
  const double merge = 38.0 * 8192 * 16 * 128 / (catalog().hardware("h100").memory_bandwidth * 1e3);
  EXPECT_NEAR(with.results[0].time_us - without.results[0].time_us, 3 * merge, 1e-6);
  EXPECT_NEAR(ideal.results[0].time_us, without.results[0].time_us, 1e-6);
  nlohmann::json doc = to_json(with.kernel);
  EXPECT_EQ(doc.at("merge").at("forward_bytes_per_element"), 38);
  EXPECT_EQ(doc.at("merge").at("forward_slice_bytes_per_element"), 8);
  EXPECT_EQ(kernel_profile_from_json(doc, "again").merge, with.kernel.merge);
  EXPECT_FALSE(to_json(without.kernel).contains("merge"));
  doc["merge"]["forward_bytes_per_element"] = -1;
  EXPECT_THROW((void)kernel_profile_from_json(doc, "k.json"), model::InputError);
  doc["merge"] = {{"forward_bytes", 38}};
  EXPECT_THROW((void)kernel_profile_from_json(doc, "k.json"), model::InputError);
}

// --merges: the styles are the counted bytes, the shipped measured kernels merge as eager PyTorch
// does, and a style replaces the profile's merge: contiguous in lockstep on free links, whose last
// device merges three full blocks, moves by three merges' worth of the style's bytes.
TEST(RingMerge, StylesReplaceTheProfilesMerge) {
  EXPECT_EQ(merge_style("eager", "--merges"), (OutputMerge{38, 10, 8}));
  EXPECT_EQ(merge_style("fused", "--merges"), (OutputMerge{10, 6, 0}));
  EXPECT_EQ(merge_style("none", "--merges"), OutputMerge{});
  EXPECT_THROW((void)merge_style("fast", "--merges"), model::InputError);
  for (const auto& [hardware, kernel] : {std::pair{"h100", "sdpa"}, {"h100", "fa2"}, {"h100", "fa3"}, {"h100", "flex"},
                                         {"h200", "sdpa"}, {"a100", "fa2"}, {"b200", "sdpa"}}) {
    EXPECT_EQ(load_kernel_profile(kernel, catalog(), catalog().hardware(hardware)).merge,
              merge_style("eager", "--merges"))
        << hardware << " " << kernel;
  }
  SimulateConfig c = lockstep_on_free_links("h100", "sdpa", 16, 32 * 1024, {"contiguous"});
  c.topology = switch_topology(4, 1e12, 0.0);
  std::map<std::string, double> time_us;
  for (const char* style : {"eager", "fused", "none"}) {
    c.merges = style;
    const Simulation s = run_simulation(c, catalog());
    EXPECT_EQ(s.merges, style);
    EXPECT_EQ(s.kernel.merge, merge_style(style, "--merges"));
    time_us[style] = s.results[0].time_us;
  }
  const double per_byte = 8192.0 * 16 * 128 / (catalog().hardware("h100").memory_bandwidth * 1e3);
  EXPECT_NEAR(time_us["eager"] - time_us["none"], 3 * 38 * per_byte, 1e-6);
  EXPECT_NEAR(time_us["fused"] - time_us["none"], 3 * 10 * per_byte, 1e-6);
  c.merges.clear();
  EXPECT_NEAR(run_simulation(c, catalog()).results[0].time_us, time_us["eager"], 1e-9);
  // From an experiment file too, refused there naming the field.
  EXPECT_EQ(simulate_config_from_json(nlohmann::json{{"merges", "fused"}}, "e.json").merges, "fused");
  try {
    (void)simulate_config_from_json(nlohmann::json{{"merges", "fast"}}, "e.json");
    FAIL();
  } catch (const model::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"merges\" 'fast': expected eager, fused or none"), std::string::npos) << e.what();
  }
}

TEST(Simulation, ShippedTopologiesLoad) {
  for (const char* name : {"dgx-a100", "dgx-h100", "dgx-h100-x2", "dgx-h100-x4", "pcie-8gpu"}) {
    const Topology t = load_topology(name, catalog().root(), 300);
    EXPECT_GE(t.gpu_count(), 8) << name;
  }
  EXPECT_EQ(load_topology("dgx-h100-x4", catalog().root(), 300).gpu_count(), 32);
  // Crossing nodes goes through the NICs and the InfiniBand switch at 50 GB/s.
  const Topology x2 = load_topology("dgx-h100-x2", catalog().root(), 300);
  EXPECT_DOUBLE_EQ(x2.route(7, 8).bandwidth, 50);
  EXPECT_DOUBLE_EQ(x2.route(0, 7).bandwidth, 450);
}

// Plans sharing a cache share each layout alike: meshes differing in -M (and -D) alone hold one
// layout object, built once, equal to the layout built on its own; another -N, or the same spec
// padded for other devices, is another layout.
TEST(Simulation, PlansWithOneCacheShareTheirLayouts) {
  LayoutCache cache;
  SimulateConfig c = small_config();
  c.mask = "documents:lognormal:2048:1.2:seed=3";
  c.pad_documents = true;
  c.layouts = {"balanced", "zigzag"};
  c.topology = "cluster:2x8";
  const SimulationPlan one = plan_simulation(c, catalog(), &cache);
  c.model_parallel = 2;
  const SimulationPlan two = plan_simulation(c, catalog(), &cache);
  c.model_parallel = 1;
  c.devices = 4;
  const SimulationPlan four = plan_simulation(c, catalog(), &cache);
  ASSERT_EQ(one.layouts.size(), 2u);
  EXPECT_EQ(one.layouts[0], two.layouts[0]);
  EXPECT_EQ(one.layouts[1], two.layouts[1]);
  EXPECT_NE(one.layouts[0], four.layouts[0]);
  EXPECT_EQ(four.layouts[0]->get().devices(), 4);
  // Built once, whichever threads ask: every caller gets the one object.
  std::vector<const model::Layout*> got(8);
  model::parallel_for(got.size(), 4, [&](size_t i) { got[i] = &two.layouts[0]->get(); });
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [&](const model::Layout* l) { return l == got.front(); }));
  // What was shared is what a plan of its own builds.
  c.devices = 8;
  const SimulationPlan alone = plan_simulation(c, catalog());
  const model::Layout& shared = one.layouts[0]->get();
  const model::Layout& own = alone.layouts[0]->get();
  EXPECT_EQ(shared.name(), own.name());
  for (Count d = 0; d < 8; ++d) {
    for (Count l = 0; l < shared.seq_len() / 8; ++l) ASSERT_EQ(shared.position(d, l), own.position(d, l)) << d << " " << l;
  }
  // Planning checks every spec before anything is built.
  c.layouts = {"doc-zigzag"};
  c.pad_documents = false;
  EXPECT_THROW((void)plan_simulation(c, catalog(), &cache), model::InputError);
}

}  // namespace
}  // namespace stripesim::sim
