#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "bad_input_table.hpp"
#include "csv_cells.hpp"
#include "temp_path.hpp"

namespace stripesim::testing {
namespace {

TEST(CliSimulate, TableByDefault) {
  const CliResult r = run_cli("simulate");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("N = 8 devices on nvswitch:8"), std::string::npos) << r.out;
  for (const char* layout : {"contiguous", "striped", "zigzag"}) EXPECT_NE(r.out.find(layout), std::string::npos);
}

// Forward and backward: the table's busy, idle and exposed columns are each device's totals over
// both passes (so idle = time - busy holds per device), the worst device's for idle and exposed.
// What runs once a step (the gradients' all-reduce, ZeRO's gathers) is in a step's time, not a
// layer's: the layer's header says so instead of "the rest is grad comm", which it never added.
TEST(CliSimulate, ALayersHeaderSaysTheStepsCollectivesAreNotInItsTime) {
  const std::string args = "simulate --model 1b --hardware h100 --topology cluster:2x8:nic=10gbps -N 8 -D 2 -n 32k --pass fwdbwd --layouts zigzag";
  const CliResult layer = run_cli(args + " --scope layer");
  ASSERT_EQ(layer.exit_code, 0) << layer.err;
  EXPECT_NE(layer.out.find("per step (not in a layer's time: --scope step prices it)"), std::string::npos) << layer.out;
  EXPECT_EQ(layer.out.find("the rest is grad comm"), std::string::npos) << layer.out;
  const auto layer_json = nlohmann::json::parse(run_cli(args + " --scope layer --format json").out);
  EXPECT_EQ(layer_json.at("results")[0].at("step").at("breakdown_us").at("gradient_comm"), 0.0);
  const CliResult step = run_cli(args + " --scope step");
  ASSERT_EQ(step.exit_code, 0) << step.err;
  EXPECT_NE(step.out.find("per step (under the backward where it fits; the rest is grad comm)"), std::string::npos) << step.out;
  const auto step_json = nlohmann::json::parse(run_cli(args + " --scope step --format json").out);
  EXPECT_GT(step_json.at("results")[0].at("step").at("breakdown_us").at("gradient_comm").get<double>(), 0.0);
}

// A topology file given by its path is named with it: an edited copy of a shipped topology that
// kept its name printed as the shipped one, whatever its links.
TEST(CliSimulate, ATopologyFileIsNamedWithItsPath) {
  auto doc = nlohmann::json::parse(slurp(std::string(STRIPESIM_SOURCE_DIR) + "/configs/topologies/dgx-h100.json"));
  for (auto& link : doc.at("links")) link["bandwidth_gbps"] = 1;
  const auto copy = temp_path("stripesim_slow_dgx_h100.json");
  std::ofstream(copy) << doc.dump();
  const std::string args = " -N 4 -n 16k --layouts zigzag --format json";
  const auto preset = nlohmann::json::parse(run_cli("simulate --topology dgx-h100" + args).out);
  const auto edited = nlohmann::json::parse(run_cli("simulate --topology '" + copy.string() + "'" + args).out);
  EXPECT_EQ(preset.at("config").at("topology"), "dgx-h100");
  EXPECT_EQ(edited.at("config").at("topology"), "dgx-h100 (" + copy.string() + ")");
  EXPECT_GT(edited.at("results")[0].at("time_us").get<double>(), preset.at("results")[0].at("time_us").get<double>());
  std::filesystem::remove(copy);
}

TEST(CliSimulate, FwdbwdTableSumsIdleAndExposedTimeOverThePasses) {
  const std::string flags = "simulate --hardware h100 -N 4 -n 64k --pass fwdbwd --layouts contiguous,zigzag";
  const CliResult json = run_cli(flags + " --format json");
  const CliResult table = run_cli(flags);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  for (const nlohmann::json& result : doc.at("results")) {
    const auto layout = result.at("layout").get<std::string>();
    const double time = result.at("time_us").get<double>();
    ASSERT_EQ(result.at("passes").size(), 2u);
    double max_idle = 0, max_exposed = 0;
    for (size_t d = 0; d < 4; ++d) {
      double busy = 0, idle = 0, exposed = 0;
      for (const nlohmann::json& pass : result.at("passes")) {
        const nlohmann::json& device = pass.at("devices").at(d);
        busy += device.at("busy_us").get<double>();
        idle += device.at("idle_us").get<double>();
        exposed += device.at("exposed_comm_us").get<double>();
      }
      EXPECT_NEAR(busy + idle, time, 1e-6 * time) << layout << " device " << d;
      max_idle = std::max(max_idle, idle);
      max_exposed = std::max(max_exposed, exposed);
    }
    const size_t row = table.out.find("\n" + layout + " ");
    ASSERT_NE(row, std::string::npos) << table.out;
    const std::string line = table.out.substr(row + 1, table.out.find('\n', row + 1) - row - 1);
    EXPECT_NE(line.find(fmt::format("{:.3f} ms", max_idle / 1e3)), std::string::npos) << line;
    EXPECT_NE(line.find(fmt::format("{:.3f} ms", max_exposed / 1e3)), std::string::npos) << line;
  }
}

// A hostfile of two 4-slot hosts places GPUs as cluster:2x4 does: the same ring, the same time.
// A 5 + 3 split moves GPU 4 onto the first host: hop 3 -> 4 stays on NVLink, 4 -> 5 crosses.
TEST(CliSimulate, HostfileTopologyPlacesGpusAsMpirunPlacesRanks) {
  const auto dir = temp_dir();
  const std::string even = (dir / "stripesim-cli-hosts-even").string();
  const std::string uneven = (dir / "stripesim-cli-hosts-uneven").string();
  std::ofstream(even) << "gpu-a slots=4\ngpu-b slots=4\n";
  std::ofstream(uneven) << "gpu-a slots=5\ngpu-b slots=3\n";
  const std::string args = "simulate -N 8 -n 256k --hardware h100 --format json --topology ";
  const CliResult cluster = run_cli(args + "cluster:2x4");
  const CliResult hosts = run_cli(args + "hostfile:" + even);
  const CliResult split = run_cli(args + "hostfile:" + uneven);
  ASSERT_EQ(cluster.exit_code, 0) << cluster.err;
  ASSERT_EQ(hosts.exit_code, 0) << hosts.err;
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const auto a = nlohmann::json::parse(cluster.out);
  const auto b = nlohmann::json::parse(hosts.out);
  const auto c = nlohmann::json::parse(split.out);
  EXPECT_EQ(b.at("config").at("topology"), "hostfile:" + even);
  ASSERT_EQ(a.at("results").size(), b.at("results").size());
  for (size_t i = 0; i < a.at("results").size(); ++i) {
    EXPECT_EQ(a.at("results")[i].at("time_us"), b.at("results")[i].at("time_us")) << i;
  }
  const auto crosses = [](const nlohmann::json& doc, size_t hop) { return doc.at("hops")[hop].at("links").size() == 4; };
  for (size_t hop = 0; hop < 8; ++hop) {
    EXPECT_EQ(crosses(b, hop), hop == 3 || hop == 7) << hop;
    EXPECT_EQ(crosses(c, hop), hop == 4 || hop == 7) << hop;
  }
  EXPECT_EQ(c.at("hops")[3].at("links")[1], "gpu-a.nvswitch->gpu-a.gpu4");
}

// Per-document layouts need every document cut into 2N equal chunks: simulate pads them as
// analyze does (1001 -> 1004 and 2999 -> 3000 at N = 2: 4 tokens), and the output says so.
TEST(CliSimulate, PadDocumentsLetsPerDocumentLayoutsRun) {
  const std::string args = "simulate --layouts contiguous,doc-zigzag,doc-striped --mask documents:1001,2999 -n 4000 -N 2 --tile 64x64";
  const CliResult refused = run_cli(args);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--pad-documents"), std::string::npos) << refused.err;
  const CliResult r = run_cli(args + " --pad-documents --format json --summary-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("config").at("seq_len"), 4004);
  EXPECT_EQ(doc.at("config").at("padding_tokens"), 4);
  EXPECT_EQ(doc.at("results").size(), 3u);
  const CliResult table = run_cli(args + " --pad-documents");
  EXPECT_NE(table.out.find("4 padding tokens included in n"), std::string::npos) << table.out;
}

// One document of the whole sequence with a window is the window mask: its calls are one
// sequence's, and striped's blocks whose diagonal is masked are trimmed as window:W's are (they
// were not, and striped ran 11 % faster spelt as a document). Forward and backward, every layout.
TEST(CliSimulate, OneDocumentWithAWindowIsPricedAsTheWindow) {
  const auto times = [](const std::string& mask) {
    const CliResult r = run_cli("simulate --hardware h100 -n 64k -N 8 --pass fwdbwd --layouts contiguous,striped,zigzag --mask " + mask +
                                " --format json --summary-only");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    std::vector<double> out;
    for (const auto& result : doc.at("results")) out.push_back(result.at("time_us").get<double>());
    return out;
  };
  const std::vector<double> window = times("window:2k");
  ASSERT_EQ(window.size(), 3u);
  EXPECT_EQ(times("documents:64k:window=2k"), window);
}

// A length that 2N does not divide: --pad-seq pads the sequence at its end (1000 -> 1002 at N = 3),
// computes the padding under the mask extended over it, and counts only the 1000 tokens as work.
// Its step takes what the unpadded 1002 takes, and its throughput is 1000 / 1002 of that one's.
TEST(CliSimulate, PadSeqPadsTheSequenceToAMultipleOf2N) {
  const std::string shape = "simulate --scope step --model 1b --hardware h100 -N 3 --layouts contiguous,striped,zigzag --format csv";
  const CliResult refused = run_cli(shape + " -n 1000");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("needs it divisible by N = 3"), std::string::npos) << refused.err;
  const CliResult padded = run_cli(shape + " -n 1000 --pad-seq");
  const CliResult longer = run_cli(shape + " -n 1002");
  ASSERT_EQ(padded.exit_code, 0) << padded.err;
  ASSERT_EQ(longer.exit_code, 0) << longer.err;
  const auto p = csv_rows(padded.out);
  const auto l = csv_rows(longer.out);
  ASSERT_EQ(p.size(), 3u);
  ASSERT_EQ(l.size(), 3u);
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].at("seq_len"), "1002");
    EXPECT_EQ(p[i].at("time_us"), l[i].at("time_us")) << p[i].at("layout");
    EXPECT_NEAR(std::stod(p[i].at("tokens_per_second")), std::stod(l[i].at("tokens_per_second")) * 1000.0 / 1002.0,
                1e-9 * std::stod(l[i].at("tokens_per_second")));
  }
  const CliResult table = run_cli("simulate -n 1000 -N 3 --heads 4 --pad-seq");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("sequence padded to a multiple of 2N: 2 padding tokens included in n"), std::string::npos) << table.out;
  // A length 2N divides is not padded; a window extends over the padding as causal does.
  EXPECT_EQ(run_cli(shape + " -n 1002 --pad-seq").out, longer.out);
  EXPECT_EQ(run_cli("simulate -n 1000 -N 3 --heads 4 --pad-seq --mask window:256").exit_code, 0);
}

// The kernel profile sets the tiling: FlashAttention-3 on an H200 (as ring-flash-attention calls it
// on packed documents, through flash_attn_varlen_func) counts every document's tiles on its own;
// naming that tiling changes nothing, and this project's kernel on the same GPU tiles fixed.
TEST(CliSimulate, TheKernelProfileSetsTheTiling) {
  const std::string args = "simulate -n 16k -N 4 --mask documents:lognormal:1024:1.2:seed=17 --layouts contiguous,doc-zigzag "
                           "--pad-documents --hardware h200 --format json --summary-only";
  const CliResult fa3 = run_cli(args + " --kernel fa3");
  ASSERT_EQ(fa3.exit_code, 0) << fa3.err;
  const auto doc = nlohmann::json::parse(fa3.out);
  EXPECT_EQ(doc.at("config").at("tiling"), "varlen");
  EXPECT_EQ(doc.at("kernel").at("name"), "fa3");
  EXPECT_EQ(doc.at("kernel").at("tiling"), "varlen");
  EXPECT_EQ(run_cli(args + " --kernel fa3 --tiling varlen").out, fa3.out);
  EXPECT_EQ(run_cli(args).out, fa3.out) << "fa3 is the h200's default kernel";
  const auto flash = nlohmann::json::parse(run_cli(args + " --kernel stripesim-flash").out);
  EXPECT_EQ(flash.at("config").at("tiling"), "fixed");
  // The same profile told to tile fixed prices more tiles: the field, not the name, decides.
  auto profile = nlohmann::json::parse(slurp(std::string(STRIPESIM_SOURCE_DIR) + "/configs/kernels/h200/fa3.json"));
  profile["tiling"] = "fixed";
  const auto path = temp_path("stripesim_fa3_fixed.json");
  std::ofstream(path) << profile.dump();
  const auto fixed = nlohmann::json::parse(run_cli(args + " --kernel '" + path.string() + "'").out);
  std::filesystem::remove(path);
  EXPECT_EQ(fixed.at("config").at("tiling"), "fixed");
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GT(fixed.at("results")[i].at("time_us").get<double>(), doc.at("results")[i].at("time_us").get<double>())
        << doc.at("results")[i].at("layout");
  }
  // The table says varlen where it changes the counts.
  const CliResult table = run_cli(args.substr(0, args.find(" --format")) + " --kernel fa3");
  EXPECT_NE(table.out.find("tiles 128x128 (varlen), bf16"), std::string::npos) << table.out;
}

TEST(CliSimulate, JsonHasRoundsDevicesAndHops) {
  const CliResult r = run_cli("simulate --seq-len 64k --devices 4 --hardware h100 --topology dgx-h100 --pass fwdbwd "
                              "--format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("schema"), "stripesim.simulate/1");
  EXPECT_EQ(doc.at("config").at("topology"), "dgx-h100");
  EXPECT_EQ(doc.at("hops").size(), 4u);
  EXPECT_EQ(doc.at("hops")[0].at("links")[0], "gpu0->nvswitch");
  for (const auto& result : doc.at("results")) {
    ASSERT_EQ(result.at("passes").size(), 2u);
    const auto& backward = result.at("passes")[1];
    EXPECT_EQ(backward.at("pass"), "backward");
    EXPECT_EQ(backward.at("devices").size(), 4u);
    ASSERT_EQ(backward.at("rounds").size(), 4u);
    const auto& cell = backward.at("rounds")[1][2];
    for (const char* key : {"arrival_us", "compute_start_us", "compute_end_us", "send_start_us", "send_end_us",
                            "grad_send_start_us", "grad_send_end_us"}) {
      EXPECT_TRUE(cell.contains(key)) << key;
    }
    EXPECT_TRUE(backward.at("rounds")[3][0].at("send_start_us").is_null()) << "no K/V send in the last round";
  }
  EXPECT_DOUBLE_EQ(doc.at("results")[0].at("speedup_vs_contiguous").get<double>(), 1.0);
}

// Hops are listed where a ring moves K/V, of the bytes it moves: a hybrid's ring of R devices
// carries the U blocks of its all-to-all group; hybrid:Nx1 is Ulysses and sends no hop.
TEST(CliSimulate, JsonListsTheHopsOnlyOfARingThatRuns) {
  const std::string args = "simulate --hardware h100 --model llama3-8b -n 64k -N 8 --layouts zigzag --format json --cp ";
  const auto doc_of = [&](const std::string& cp) {
    const CliResult r = run_cli(args + cp);
    EXPECT_EQ(r.exit_code, 0) << cp << ": " << r.err;
    return nlohmann::json::parse(r.out);
  };
  // llama3-8b: 8 K/V heads of 128, bf16; 8k tokens a device.
  const std::int64_t block = 2LL * 8192 * 8 * 128 * 2;
  const auto ring = doc_of("ring");
  EXPECT_EQ(ring.at("kv_bytes_per_hop").get<std::int64_t>(), block);
  EXPECT_EQ(ring.at("hops").size(), 8u);
  const auto hybrid = doc_of("hybrid:2x4");  // 4 K/V heads after the all-to-all, over 2 blocks
  EXPECT_EQ(hybrid.at("kv_bytes_per_hop").get<std::int64_t>(), block);
  EXPECT_EQ(hybrid.at("hops").size(), 4u);
  for (const std::string cp : {"ulysses", "hybrid:8x1"}) {
    const auto doc = doc_of(cp);
    EXPECT_EQ(doc.at("kv_bytes_per_hop").get<std::int64_t>(), 0) << cp;
    EXPECT_TRUE(doc.at("hops").empty()) << cp;
  }
  EXPECT_DOUBLE_EQ(doc_of("hybrid:8x1").at("results")[0].at("time_us").get<double>(),
                   doc_of("ulysses").at("results")[0].at("time_us").get<double>());
}

TEST(CliSimulate, TraceOpensAsChromeTraceAndOutputIsDeterministic) {
  const auto trace = temp_path("stripesim_cli_trace.json");
  std::filesystem::remove(trace);
  const std::string args = "simulate --seq-len 32k --devices 8 --topology pcie-8gpu --ring-order auto --sync lockstep "
                           "--format json --trace '" + trace.string() + "'";
  const CliResult a = run_cli(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto doc = nlohmann::json::parse(slurp(trace));
  ASSERT_TRUE(doc.at("traceEvents").is_array());
  bool named_link = false;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("args").at("name").get<std::string>().starts_with("link ")) named_link = true;
  }
  EXPECT_TRUE(named_link);
  const CliResult b = run_cli(args);
  EXPECT_EQ(a.out, b.out);
  std::filesystem::remove(trace);
}

// Complete events on one track must nest (the trace format; Perfetto drops those that overlap).
// A link's events last its serialisation (the latency is flight, while the link already sends the
// next message), and every device's collectives have a track of their own: a backward on shared
// links, two rings of three buffers across nodes, and a hybrid's all-to-alls overlap nothing.
TEST(CliSimulate, NoTwoEventsOfATraceTrackOverlap) {
  const auto trace = temp_path("stripesim_cli_trace_tracks.json");
  for (const std::string args : {"-n 32k -N 4 --pass fwdbwd",
                                 "--topology dgx-h100-x2 -N 16 -n 64k --hardware h100 --pass fwdbwd --kv-buffers 3",
                                 "--cp hybrid:2x4 --model llama3-8b --hardware h100 -n 64k -N 8 --pass fwdbwd"}) {
    std::filesystem::remove(trace);
    const CliResult r = run_cli("simulate " + args + " --trace '" + trace.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(slurp(trace));
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::pair<double, double>>> tracks;
    for (const auto& e : doc.at("traceEvents")) {
      if (e.at("ph") != "X") continue;
      const double ts = e.at("ts").get<double>();
      tracks[{e.at("pid").get<std::int64_t>(), e.at("tid").get<std::int64_t>()}].emplace_back(ts, ts + e.at("dur").get<double>());
    }
    ASSERT_FALSE(tracks.empty()) << args;
    for (auto& [track, spans] : tracks) {
      std::ranges::sort(spans);
      for (size_t i = 1; i < spans.size(); ++i) {
        EXPECT_GE(spans[i].first, spans[i - 1].second - 1e-9) << args << ": track " << track.first << "/" << track.second;
      }
    }
  }
  std::filesystem::remove(trace);
}

// The trace is written before the output, so both paths are checked first: a bad --output
// leaves no trace behind.
TEST(CliSimulate, ABadOutputLeavesNoTraceBehind) {
  const auto trace = temp_path("stripesim_cli_orphan_trace.json");
  std::filesystem::remove(trace);
  const CliResult r = run_cli("simulate --seq-len 32k --devices 4 --trace '" + trace.string() + "' --output /nonexistent/out.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "stripesim: error: --output '/nonexistent/out.txt': directory '/nonexistent' does not exist\n");
  EXPECT_FALSE(std::filesystem::exists(trace));
}

// A kernel fitted on causal calls only (h100 sdpa) never had a partial tile priced apart from its
// block: a window (two partial tiles a query tile) or fixed-tiled documents get a note, in the
// table and in JSON; a causal mask, or a kernel timed under windows (flex), do not.
TEST(CliSimulate, NotesWhenCallsHoldMorePartialTilesThanTheFitTimed) {
  const std::string base = "simulate --hardware h100 -n 64k -N 8";
  const std::string note = "note: kernel sdpa: its fit timed no query tile with more than one partial tile (fit.partial_tiles), "
                           "and calls here hold up to 2 in one;";
  const CliResult window = run_cli(base + " --mask window:4096");
  ASSERT_EQ(window.exit_code, 0) << window.err;
  EXPECT_NE(window.out.find(note), std::string::npos) << window.out;
  const CliResult json = run_cli(base + " --mask window:4096 --format json --summary-only");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto notes = nlohmann::json::parse(json.out).at("notes");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ("note: " + notes[0].get<std::string>().substr(0, note.size() - 6), note);
  // Fixed 128-token tiles over packed documents hold many partial tiles in a row.
  const CliResult documents = run_cli(base + " --mask documents:lognormal:4096:1.0:seed=1");
  ASSERT_EQ(documents.exit_code, 0) << documents.err;
  EXPECT_NE(documents.out.find("note: kernel sdpa:"), std::string::npos);
  for (const std::string& quiet : {base, base + " --kernel flex --mask window:4096"}) {
    const CliResult r = run_cli(quiet + " --format json --summary-only");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(nlohmann::json::parse(r.out).contains("notes")) << quiet;
    EXPECT_EQ(run_cli(quiet).out.find("note:"), std::string::npos) << quiet;
  }
}

// --pad-documents' padding is computed (the time prices it) but is no useful work: a step's
// throughput counts the tokens given and its model FLOPs the documents' own pairs, the same as
// the unpadded sequence's (1001 + 15383 tokens, padded to multiples of 2N = 8: 8 more).
TEST(CliSimulate, PaddingIsNotCountedAsUsefulWork) {
  const std::string base = "simulate --model 1b --scope step -n 16k -N 4 --mask documents:1001,15383 --format json --summary-only";
  const CliResult padded = run_cli(base + " --layouts doc-zigzag --pad-documents");
  const CliResult plain = run_cli(base + " --layouts contiguous");
  ASSERT_EQ(padded.exit_code, 0) << padded.err;
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto p = nlohmann::json::parse(padded.out), u = nlohmann::json::parse(plain.out);
  ASSERT_EQ(p["config"].at("seq_len"), 16392);
  ASSERT_EQ(p["config"].at("padding_tokens"), 8);
  const auto& step = p["results"][0].at("step");
  EXPECT_DOUBLE_EQ(step.at("model_flops").get<double>(), u["results"][0]["step"].at("model_flops").get<double>());
  EXPECT_NEAR(step.at("tokens_per_second").get<double>() * step.at("time_us").get<double>() * 1e-6, 16384.0, 1e-6);
}

// Ulysses' rows agree to the byte whatever the layout (each device attends the whole sequence on
// its heads): the table says why rather than leave them, or one layout's row, to read as a finding
// about the layouts.
TEST(CliSimulate, UlyssesSaysItsLayoutsAreOneComputation) {
  const std::string base = "simulate -n 32k -N 4 --cp ulysses --format json --summary-only";
  const CliResult several = run_cli(base + " --layouts contiguous,zigzag");
  ASSERT_EQ(several.exit_code, 0) << several.err;
  const auto doc = nlohmann::json::parse(several.out);
  ASSERT_EQ(doc.at("results").size(), 2u);
  EXPECT_EQ(doc["results"][0].at("time_us"), doc["results"][1].at("time_us"));
  ASSERT_EQ(doc.at("notes").size(), 1u);
  EXPECT_TRUE(doc["notes"][0].get<std::string>().starts_with("--cp ulysses: every device attends the whole sequence")) << doc["notes"];
  // One layout alone but contiguous reads as a choice of layout too: it says so as well.
  const CliResult alone = run_cli(base + " --layouts zigzag");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(nlohmann::json::parse(alone.out).at("notes"), doc.at("notes"));
  EXPECT_EQ(nlohmann::json::parse(alone.out)["results"][0].at("time_us"), doc["results"][0].at("time_us"));
  for (const std::string& quiet : {base + " --layouts contiguous", std::string("simulate -n 32k -N 4 --format json --summary-only")}) {
    const CliResult r = run_cli(quiet);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(nlohmann::json::parse(r.out).contains("notes")) << quiet;
  }
}

// A topology larger than the mesh leaves GPUs idle: said, since dgx-h100-x2 beside the default
// -N 8 prices a ring on one node; a mesh that fills it says nothing.
TEST(CliSimulate, NotesGpusTheMeshLeavesIdle) {
  const std::string base = "simulate --hardware h100 -n 32k --topology dgx-h100-x2 --format json --summary-only";
  const CliResult part = run_cli(base);
  ASSERT_EQ(part.exit_code, 0) << part.err;
  const auto doc = nlohmann::json::parse(part.out);
  ASSERT_EQ(doc.at("notes").size(), 1u) << doc["notes"];
  EXPECT_EQ(doc["notes"][0].get<std::string>().substr(0, 78),
            "topology dgx-h100-x2: the mesh (-M 1 x -N 8 x -D 1) uses 8 of its 16 GPUs, the");
  // The GPUs it names are the ones the devices run on.
  for (const auto& device : doc["results"][0]["passes"][0]["devices"]) EXPECT_LT(device.at("gpu").get<int>(), 16);
  for (const std::string& full : {base + " -N 16", base + " -N 8 -D 2", base + " -M 2 -N 8"}) {
    const CliResult r = run_cli(full);
    ASSERT_EQ(r.exit_code, 0) << full << r.err;
    EXPECT_FALSE(nlohmann::json::parse(r.out).contains("notes")) << full;
  }
  EXPECT_NE(run_cli("simulate --hardware h100 -n 32k --topology cluster:2x8 -N 4").out.find(
                "note: topology cluster:2x8: the mesh (-M 1 x -N 4 x -D 1) uses 4 of its 16 GPUs"),
            std::string::npos);
}

// The table's header gives the heads a device attends once Ulysses has re-sharded them: H/U, and
// the K/V heads divided as far as they go (8 K/V heads over U = 8: one each; 16 over 4: four).
TEST(CliSimulate, HeaderGivesTheHeadsAttendedAfterTheAllToAll) {
  const CliResult hybrid = run_cli("simulate --model llama3-8b --hardware h100 -N 16 -n 64k --cp hybrid:8x2");
  ASSERT_EQ(hybrid.exit_code, 0) << hybrid.err;
  EXPECT_NE(hybrid.out.find("32 heads x 128 (K/V heads 8) per device (4 heads, K/V heads 1, after the all-to-all), batch 1"),
            std::string::npos)
      << hybrid.out;
  const CliResult ulysses = run_cli("simulate -N 4 -n 64k --cp ulysses --batch 2");
  EXPECT_NE(ulysses.out.find("(K/V heads 16) per device (4 heads, K/V heads 4, after the all-to-all), batch 2"), std::string::npos)
      << ulysses.out;
  // One head is one head, held or attended.
  const CliResult one = run_cli("simulate -N 8 -n 8k --cp ulysses --heads 8 --kv-heads 2");
  EXPECT_NE(one.out.find("8 heads x 128 (K/V heads 2) per device (1 head, K/V heads 1, after the all-to-all)"), std::string::npos)
      << one.out;
  EXPECT_NE(run_cli("simulate -N 2 -n 8k --heads 1").out.find(" 1 head x 128 (K/V heads 1) per device, batch 1"), std::string::npos);
  // A ring re-shards nothing.
  EXPECT_NE(run_cli("simulate -N 4 -n 64k").out.find("16 heads x 128 (K/V heads 16) per device, batch 1"), std::string::npos);
}

// The header says what each context parallelism sends, in bytes counted here from the shapes:
// 64k tokens on 16 devices (c = 4096), 32 heads over 8 K/V heads of 128 in bf16 (256 bytes a
// head's row). Ulysses has no ring and names no hop.
TEST(CliSimulate, HeaderGivesWhatEachAlgorithmSends) {
  const std::string base = "simulate --hardware h100 --heads 32 --kv-heads 8 -n 64k -N 16 --topology cluster:2x8 --cp ";
  const std::int64_t c = 65536 / 16, row = 128 * 2;
  const auto mb = [](std::int64_t bytes) { return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6); };
  const auto header = [&](const std::string& cp) {
    const CliResult r = run_cli(base + cp);
    EXPECT_EQ(r.exit_code, 0) << cp << r.err;
    return r.out.substr(0, r.out.find("scope:"));
  };
  // The ring: each hop a device's K and V (8 K/V heads).
  EXPECT_NE(header("ring").find("K/V per hop " + mb(2 * c * 8 * row) + ", slowest hop "), std::string::npos);
  // Ulysses over 16: 2 query heads a device, the 8 K/V heads replicated to one each.
  const std::string ulysses = header("ulysses");
  EXPECT_NE(ulysses.find("all-to-all " + mb(c * (2 + 2 * 1) * row) + " of Q, K, V and " + mb(c * 2 * row) + " of output"), std::string::npos)
      << ulysses;
  EXPECT_EQ(ulysses.find("hop"), std::string::npos) << ulysses;
  const std::string alltoall_only = header("hybrid:16x1");  // a ring of one: no hop either
  EXPECT_NE(alltoall_only.find(ulysses.substr(ulysses.find("all-to-all"))), std::string::npos) << alltoall_only;
  EXPECT_EQ(alltoall_only.find("hop"), std::string::npos) << alltoall_only;
  // Hybrid 8 x 2: 4 heads and one K/V head a device; the ring carries its group's 8 blocks.
  const std::string hybrid = header("hybrid:8x2");
  EXPECT_NE(hybrid.find("K/V per ring hop " + mb(2 * 8 * c * 1 * row) + ", slowest hop "), std::string::npos) << hybrid;
  EXPECT_NE(hybrid.find("all-to-all " + mb(c * (4 + 2 * 1) * row) + " of Q, K, V and " + mb(c * 4 * row) + " of output"), std::string::npos)
      << hybrid;
  // The all-gather in 4 head groups: each step a device's K and V of 2 K/V heads.
  EXPECT_NE(header("allgather:4").find("all-gather " + mb(2 * c * 2 * row) + " of K/V from each device per head group (4 groups)"),
            std::string::npos);
  // One device sends nothing, whatever the algorithm (Ulysses said "to each other device").
  for (const std::string cp : {"ring", "ulysses", "allgather"}) {
    const CliResult one = run_cli("simulate --hardware h100 -n 64k -N 1 --cp " + cp);
    EXPECT_EQ(one.exit_code, 0) << cp << one.err;
    EXPECT_NE(one.out.find("per slot; one device: nothing sent\n"), std::string::npos) << one.out;
  }
  // The JSON carries the same bytes (collective_bytes), and nothing of the kind for a ring.
  const auto collective = [&](const std::string& cp) {
    const CliResult r = run_cli(base + cp + " --format json");
    EXPECT_EQ(r.exit_code, 0) << cp << r.err;
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    return doc.contains("collective_bytes") ? doc.at("collective_bytes") : nlohmann::json();
  };
  EXPECT_TRUE(collective("ring").is_null());
  EXPECT_TRUE(collective("hybrid:1x16").is_null());  // a ring alone
  EXPECT_EQ(collective("ulysses"), (nlohmann::json{{"alltoall_group", 16},
                                                   {"alltoall_qkv_bytes_per_pair", c * (2 + 2 * 1) * row},
                                                   {"alltoall_output_bytes_per_pair", c * 2 * row}}));
  EXPECT_EQ(collective("hybrid:8x2"), (nlohmann::json{{"alltoall_group", 8},
                                                      {"alltoall_qkv_bytes_per_pair", c * (4 + 2 * 1) * row},
                                                      {"alltoall_output_bytes_per_pair", c * 4 * row}}));
  EXPECT_EQ(collective("allgather:4"), (nlohmann::json{{"allgather_bytes_per_device", 2 * c * 2 * row}, {"head_groups", 4}}));
}

TEST(CliSimulate, ExperimentFileAndFlagsOverrideIt) {
  const CliResult r = run_cli(std::string("simulate --experiment '") + STRIPESIM_SOURCE_DIR +
                              "/configs/experiments/simulate-dgx-h100-x2.json' --devices 8 --format json --summary-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("config").at("devices"), 8);
  EXPECT_EQ(doc.at("config").at("topology"), "dgx-h100-x2");
  EXPECT_FALSE(doc.at("results")[0].at("passes")[0].contains("rounds"));
}

// K/V heads default to the heads, from a file as from the flags: "heads": 32 alone is multi-head
// attention (it was 32 heads over the default 16 K/V heads, a GQA nobody asked for); a file's
// own "kv_heads" stands when --heads is given beside it.
TEST(CliSimulate, AFilesHeadsAloneMeanAsManyKvHeads) {
  const auto heads_of = [](const std::string& flags) {
    const CliResult r = run_cli("simulate " + flags + " --format json --summary-only");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto config = nlohmann::json::parse(r.out).at("config");
    return std::pair{config.at("heads_per_device").get<int>(), config.at("kv_heads_per_device").get<int>()};
  };
  EXPECT_EQ(heads_of("--experiment " + data("simulate_heads_only.json")), std::pair(32, 32));
  EXPECT_EQ(heads_of("--heads 32 -n 32k"), std::pair(32, 32));
  EXPECT_EQ(heads_of("--experiment " + data("simulate_kv_heads_only.json") + " --heads 32"), std::pair(32, 8));
  EXPECT_EQ(heads_of("--experiment " + data("simulate_heads_only.json") + " --kv-heads 4"), std::pair(32, 4));
}

// --scope beside a file's "pass" keeps the file's pass (it took the scope's default, a forward).
TEST(CliSimulate, AFilesPassStandsBesideScope) {
  const CliResult r = run_cli("simulate --experiment " + data("simulate_forward_pass.json") + " --scope attention --format json --summary-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("config").at("pass"), "fwd");
}

class CliSimulateBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliSimulateBadInput, OneLineExitTwoNoOutput) {
  const auto output = temp_path(std::string("stripesim_sim_bad_") + GetParam().name);
  std::filesystem::remove(output);
  const CliResult r = run_cli(GetParam().args + " --output '" + output.string() + "' --trace '" + output.string() + ".trace'");
  expect_rejected(r, GetParam());
  EXPECT_FALSE(std::filesystem::exists(output));
  EXPECT_FALSE(std::filesystem::exists(output.string() + ".trace"));
}

INSTANTIATE_TEST_SUITE_P(
    Table, CliSimulateBadInput,
    ::testing::Values(
        BadInput{"one_buffer", "simulate --kv-buffers 1", "--kv-buffers 1: must be at least 2"},
        // A flag does not silently drop what the file gives: --model beside its heads, --scope beside its pass.
        BadInput{"model_beside_files_heads", "simulate --experiment " + data("simulate_heads_only.json") + " --model 1b",
                 "simulate_heads_only.json field \"heads\" sets them too; give one or the other"},
        BadInput{"scope_beside_files_pass", "simulate --experiment " + data("simulate_forward_pass.json") + " --scope step",
                 "simulate_forward_pass.json field \"pass\" = fwd: a training step (--scope step) runs forward and backward"},
        // What the file gives is named at its field; what a flag overrides, by the flag.
        BadInput{"experiment_misspelt_layout", "simulate --experiment " + data("simulate_misspelt_layout.json"),
                 "simulate_misspelt_layout.json field \"layouts[1]\" = 'zigzg': unknown layout (did you mean 'zigzag'?)"},
        BadInput{"experiment_layout_overridden", "simulate --experiment " + data("simulate_misspelt_layout.json") +
                                                     " --layouts striped -n 1001",
                 "--seq-len 1001: layout striped needs it divisible by N = 4"},
        // Every input a file gives is named at its field, the ring's and the cluster's too.
        BadInput{"experiment_cp", "simulate --experiment " + data("simulate_cp_not_the_group.json"),
                 "simulate_cp_not_the_group.json field \"cp\" = 'hybrid:3x4': U x R = 12 must equal the 8 devices of the context-parallel group (-N)"},
        BadInput{"experiment_sync", "simulate --experiment " + data("simulate_lockstep_without_ring.json"),
                 "simulate_lockstep_without_ring.json field \"sync\" = lockstep: sets how a ring's rounds wait; --cp ulysses has no ring"},
        BadInput{"experiment_topology", "simulate --experiment " + data("simulate_topology_too_small.json"),
                 "simulate_topology_too_small.json field \"topology\" = cluster:2x2: has 4 GPUs, fewer than the ring's N = 8"},
        BadInput{"experiment_cp_overridden", "simulate --experiment " + data("simulate_cp_not_the_group.json") + " --cp hybrid:5x2",
                 "--cp 'hybrid:5x2': U x R = 10 must equal the 8 devices of the context-parallel group (-N)"},
        BadInput{"unknown_cp", "simulate --cp rings", "--cp 'rings': expected ring, allgather[:G], ulysses or hybrid:UxR"},
        BadInput{"hybrid_not_the_group", "simulate --cp hybrid:3x3", "--cp 'hybrid:3x3': U x R = 9 must equal the 8 devices"},
        // 4 x (2^62 + 2) wraps to 8 in 64 bits: it ran as hybrid:4x2.
        BadInput{"hybrid_product_overflows", "simulate --cp hybrid:4x4611686018427387906",
                 "--cp 'hybrid:4x4611686018427387906': U x R = 4 x 4611686018427387906 must equal the 8 devices"},
        BadInput{"hybrid_length_not_divided", "simulate -n 1044 --heads 16 --cp hybrid:4x2 --layouts contiguous",
                 "--seq-len 1044: layout contiguous needs it divisible by N = 8; the nearest such lengths are 1040 and 1048"},
        BadInput{"ulysses_heads_do_not_divide", "simulate --cp ulysses --heads 12",
                 "--cp ulysses: the all-to-all over 8 devices needs the 12 heads of a device divisible by 8"},
        BadInput{"ulysses_one_head", "simulate --cp ulysses --heads 1 -N 2",
                 "--cp ulysses: the all-to-all over 2 devices needs the 1 head of a device divisible by 2"},
        BadInput{"serial_step", "simulate --model 1b --hardware h100 --scope step -N 8 -n 64k --sync serial",
                 "--sync serial: one processor running every device in turn (the CPU validator) prices attention only; "
                 "--scope step needs --sync async or lockstep"},
        BadInput{"ring_setting_without_a_ring", "simulate --cp allgather --sync lockstep",
                 "--sync lockstep: sets how a ring's rounds wait; --cp allgather has no ring"},
        BadInput{"unknown_topology", "simulate --topology torus", "--topology 'torus': unknown"},
        BadInput{"too_few_gpus", "simulate --topology nvswitch:4 --devices 8", "has 4 GPUs, fewer than the ring's N = 8"},
        BadInput{"too_few_gpus_in_a_file", "simulate --topology " + data("topology_named_like_a_shipped_one.json") + " --devices 2",
                 "topology_named_like_a_shipped_one.json: has 1 GPUs, fewer than the ring's N = 2"},
        BadInput{"bad_cluster", "simulate --topology cluster:2", "--topology 'cluster:2': expected cluster:NxG"},
        // Found by fuzz/fuzz_cli.cpp: 2^32 x 2^32 wrapped to 0 GPUs and passed the check.
        BadInput{"cluster_product_overflows", "simulate --topology cluster:4294967296x4294967296",
                 "--topology 'cluster:4294967296x4294967296': needs at least one node of one GPU and at most 65536 GPUs"},
        BadInput{"bad_sync", "simulate --sync sometimes", "--sync 'sometimes': expected async, lockstep or serial"},
        BadInput{"bad_pass", "simulate --pass sideways", "--pass 'sideways': expected fwd, bwd or fwdbwd"},
        BadInput{"bad_dtype", "simulate --dtype fp4", "--dtype 'fp4': expected fp64, fp32, tf32, bf16, fp16, fp8 or int8"},
        BadInput{"dtype_without_peak", "simulate --hardware tpu-v4 --dtype fp32", "--dtype fp32: hardware tpu-v4 lists no peak rate"},
        BadInput{"bad_ring_order", "simulate --ring-order best", "--ring-order 'best': expected rank or auto"},
        BadInput{"zero_heads", "simulate --heads 0", "--heads 0: must be at least 1"},
        BadInput{"experiment_kv_buffers_without_a_ring", "simulate --experiment " + data("simulate_ulysses_kv_buffers.json"),
                 "simulate_ulysses_kv_buffers.json field \"kv_buffers\" = 3: a ring's K/V buffers; --cp ulysses has no ring"},
        BadInput{"kernel_file_unknown_dtype", "simulate --hardware h100 --kernel " + data("kernel_unknown_dtype.json"),
                 "kernel_unknown_dtype.json field \"dtype\" = 'fp4': expected fp64, fp32, tf32, bf16, fp16, fp8 or int8"},
        BadInput{"merges_on_ideal_links", "simulate --topology ideal --merges eager",
                 "--merges eager: prices the merges between a ring's calls; --topology ideal prices the calls alone"},
        BadInput{"heads_kv_mismatch", "simulate --heads 6 --kv-heads 4", "--kv-heads 4: must divide the 6 heads"},
        BadInput{"kv_bytes_beyond_64_bits",
                 "simulate -n 2G -N 2 --heads 1024 --kv-heads 1024 --head-dim 1024 --batch 1024 --dtype fp32 --topology ideal",
                 "the sequence's K/V would be 1.84e+19 bytes, beyond the 2^53 (9 PB) stripesim counts exactly"},
        BadInput{"model_parallel_heads", "simulate --model-parallel 3", "--model-parallel 3: must divide the 16 heads"},
        // --model sets the attention shape: a flag or field that would change it is refused, not ignored.
        BadInput{"model_and_heads", "simulate --model llama3-8b --heads 64",
                 "--heads: --model llama3-8b sets the heads and head size; give one or the other"},
        BadInput{"model_and_head_dim", "simulate --model 1b --head-dim 64", "--head-dim: --model 1b sets the heads"},
        BadInput{"experiment_model_and_heads",
                 std::string("simulate --experiment '") + STRIPESIM_SOURCE_DIR + "/tests/data/model_and_heads_experiment.json'",
                 "field \"heads\": \"model\" sets the heads and head size"},
        // The model the flag contradicts came from the file: the file's field is named, not a --model never given.
        BadInput{"experiment_model_and_heads_flag",
                 std::string("simulate --experiment '") + STRIPESIM_SOURCE_DIR + "/configs/experiments/simulate-dgx-h100-x2.json' -n 64k --heads 32",
                 "--heads: --experiment " STRIPESIM_SOURCE_DIR "/configs/experiments/simulate-dgx-h100-x2.json field \"model\" = llama3-8b sets "
                 "the heads and head size"},
        BadInput{"model_parallel_exceeds_heads", "simulate --model llama3-8b -M 64",
                 "--model-parallel 64: must divide the 32 heads"},
        BadInput{"pad_without_documents", "simulate --pad-documents", "--pad-documents: needs a documents mask"},
        BadInput{"pad_seq_documents", "simulate -n 1000 -N 3 --mask documents:400,600 --pad-seq",
                 "--pad-seq: pads one sequence at its end; a documents mask is padded document by document (--pad-documents)"},
        BadInput{"pad_seq_and_pad_documents", "simulate -n 1000 -N 2 --mask documents:400,600 --pad-seq --pad-documents",
                 "--pad-seq: pads the whole sequence, --pad-documents each document; give one or the other"},
        BadInput{"experiment_pad_seq_documents",
                 std::string("simulate --experiment '") + STRIPESIM_SOURCE_DIR + "/tests/data/pad_seq_documents_experiment.json'",
                 "pad_seq_documents_experiment.json field \"pad_seq\": pads one sequence at its end"},
        // A model file named by an experiment is that file's field's fault, not a --model never given.
        BadInput{"experiment_model_file_missing", "simulate --experiment " + data("simulate_missing_model_file.json"),
                 "simulate_missing_model_file.json field \"model\" = " STRIPESIM_SOURCE_DIR "/tests/data/no_such_model.json: file '"
                 STRIPESIM_SOURCE_DIR "/tests/data/no_such_model.json' does not exist"},
        BadInput{"pad_seq_beyond_2g", "simulate -n 2147483647 -N 3 --pad-seq --topology ideal",
                 "--pad-seq: the padded sequence of 2147483652 tokens exceeds 2^31"},
        BadInput{"topology_file_missing", "simulate --topology /nonexistent/t.json", "does not exist"},
        BadInput{"bad_topology_file", std::string("simulate --topology '") + STRIPESIM_SOURCE_DIR + "/tests/data/disconnected_topology.json'",
                 "GPU 1 (g1) is not connected to GPU 0"},
        BadInput{"dangling_topology_node", std::string("simulate --topology '") + STRIPESIM_SOURCE_DIR + "/tests/data/dangling_switch_topology.json'",
                 "node \"s2\" (switch) is joined to no GPU, so no route crosses it"},
        BadInput{"too_many_devices", "simulate --devices 5000 --seq-len 5000", "--devices 5000: must be between 1 and 4096"},
        // Scopes beyond the ring: what they need, and the mesh on the topology.
        BadInput{"bad_scope", "simulate --scope wide", "--scope 'wide': expected attention, layer or step"},
        BadInput{"scope_without_model", "simulate --scope step", "--scope step: needs --model"},
        BadInput{"step_forward_only", "simulate --model 1b --scope step --pass fwd",
                 "--pass fwd: a training step (--scope step) runs forward and backward"},
        BadInput{"recompute_attention", "simulate --recompute", "--recompute: recomputation is part of a layer or a step"},
        BadInput{"recompute_forward_layer", "simulate --model 1b --scope layer --recompute",
                 "--recompute: the backward recomputes the forward; needs --pass fwdbwd, not fwd"},
        BadInput{"zero_attention", "simulate --zero 1", "--zero 1: shards the training state of a layer or a step"},
        BadInput{"zero_forward_layer", "simulate --model 1b --scope layer --zero 3",
                 "--zero 3: shards what training keeps (optimizer states, gradients, weights); needs --pass fwdbwd, not fwd"},
        BadInput{"zero_stage_unknown", "simulate --model 1b --scope step --zero 4",
                 "--zero '4': expected 0 (nothing sharded), 1 (optimizer states), 2 (and gradients) or 3 (and weights)"},
        BadInput{"no_matmul_efficiency", "simulate --model 1b --scope layer --hardware cpu",
                 "--hardware cpu: has no matmul_efficiency to price a layer's or a step's matmuls with"},
        BadInput{"mesh_exceeds_topology", "simulate -M 2 --topology nvswitch:8",
                 "--topology nvswitch:8: has 8 GPUs, fewer than the mesh's M x N x D = 2 x 8 x 1 = 16"},
        BadInput{"zero_data_parallel", "simulate -D 0", "--data-parallel 0: must be at least 1"},
        BadInput{"mesh_overflows", "simulate -D 4611686018427387904", "-M 1 x -N 8 x -D 4611686018427387904: the mesh may hold at most 32768 GPUs"},
        BadInput{"auto_ring_on_a_mesh", "simulate -M 2 --ring-order auto", "--ring-order auto: orders the GPUs of a single ring"},
        BadInput{"rounds_and_summary", "simulate --format json --rounds --summary-only",
                 "--rounds, --summary-only: one includes the per-(round, device) records, the other leaves them out"},
        BadInput{"summary_only_table", "simulate --summary-only", "--summary-only: only with --format json"},
        BadInput{"unknown_tiling", "simulate --tiling diagonal", "--tiling 'diagonal': unknown tiling, expected fixed or varlen"},
        // The tiling is the kernel's: FlashAttention-3 tiles every document on its own.
        BadInput{"tiling_not_the_kernels", "simulate --hardware h200 --kernel fa3 --tiling fixed",
                 "--tiling fixed: kernel fa3 (h200) uses varlen tiling; give --tiling varlen or a kernel with fixed tiling"},
        BadInput{"tiling_not_the_default_kernels", "simulate --hardware h100 --tiling varlen",
                 "--tiling varlen: kernel sdpa (h100-sxm) uses fixed tiling"},
        // A call of 2^31 queries over 1024 heads is 17G thread blocks: refused before they are placed.
        BadInput{"blocks_per_call", "simulate -n 2G -N 1 --heads 1024 --layouts contiguous",
                 "-n 2147483648 over 1 block of 2147483648 queries, 1024 streams (heads x batch) a call in 128x128 tiles: one forward "
                 "call launches 17179869184 thread blocks, more than the 134217728 the kernel time model places"},
        // The backward of stripesim-flash splits each 2048-key tile into blocks of its own: 2^33 of
        // them here, where the forward's 2^27 would pass.
        BadInput{"backward_blocks_per_call",
                 "simulate --hardware h100 --kernel stripesim-flash -N 1 -n 256k --tile 2048x2048 --heads 1024 --batch 1024 "
                 "--layouts contiguous --pass bwd",
                 "one backward call launches 8589934592 thread blocks, more than the 134217728"},
        // Buffers beyond the ring's blocks hold nothing: counted as memory they once wrapped 64 bits.
        BadInput{"more_buffers_than_blocks", "simulate --kv-buffers 9", "--kv-buffers 9: must be at most 8: a ring of 8 devices has that many K/V blocks"},
        BadInput{"more_buffers_than_one_device", "simulate -N 1 --kv-buffers 3 -n 32k",
                 "--kv-buffers 3: must be at most 2 (the default): a ring of 1 device holds its own K/V block only"},
        BadInput{"buffers_wrapping_64_bits", "simulate --kv-buffers 9223372036854775807", "--kv-buffers 9223372036854775807: must be at most 8"},
        BadInput{"more_buffers_than_hybrid_blocks", "simulate --cp hybrid:2x4 --kv-buffers 5",
                 "--kv-buffers 5: must be at most 4: a ring of 4 devices has that many K/V blocks"},
        BadInput{"serial_hybrid", "simulate --cp hybrid:4x2 --sync serial",
                 "--sync serial: one processor running every device in turn (the CPU validator) runs no --cp hybrid:4x2; give ring, "
                 "allgather or ulysses, or --sync async or lockstep"},
        // A hybrid of no ring is offered only what it takes (lockstep is refused there).
        BadInput{"hybrid_without_ring_serial", "simulate -N 4 -n 16k --cp hybrid:4x1 --sync serial",
                 "runs no --cp hybrid:4x1; give ring, allgather or ulysses, or --sync async (lockstep paces a ring, which it has not)"},
        BadInput{"auto_ring_order_ideal", "simulate --topology ideal --ring-order auto",
                 "--ring-order auto: orders the ring's GPUs by their links; --topology ideal has none to order by"},
        BadInput{"auto_ring_order_one_device", "simulate -N 1 --ring-order auto",
                 "--ring-order auto: orders the ring's GPUs by their links; a ring of one device sends nothing"},
        // Values from an experiment file are named at their fields, files a spec names included.
        BadInput{"experiment_missing_hostfile", "simulate --experiment " + data("simulate_missing_hostfile.json"),
                 "simulate_missing_hostfile.json field \"topology\" = hostfile:" STRIPESIM_SOURCE_DIR "/tests/data/no-such-hostfile: file '"
                 STRIPESIM_SOURCE_DIR "/tests/data/no-such-hostfile' does not exist"},
        BadInput{"experiment_tiling_not_the_kernels", "simulate --experiment " + data("simulate_tiling_not_the_kernels.json"),
                 "simulate_tiling_not_the_kernels.json field \"tiling\" = fixed: kernel fa2 (a100-80gb) uses varlen tiling"},
        BadInput{"experiment_ring_order_without_a_ring", "simulate --experiment " + data("simulate_ulysses_ring_order.json"),
                 "simulate_ulysses_ring_order.json field \"ring_order\" = auto: orders the GPUs of a plain ring, not --cp ulysses"},
        // A profile given as a file is named with the file (what a user mends), not by its "name" alone.
        BadInput{"unknown_default_kernel", "simulate --hardware " + data("hardware_unknown_default_kernel.json"),
                 "hardware h100-no-default-kernel (" STRIPESIM_SOURCE_DIR "/tests/data/hardware_unknown_default_kernel.json) field \"default_kernel\" = 'nosuch': no such kernel for hardware h100-no-default-kernel, expected one of fa2"},
        BadInput{"empty_default_kernel", "simulate --hardware " + data("hardware_empty_default_kernel.json"),
                 "--hardware " STRIPESIM_SOURCE_DIR "/tests/data/hardware_empty_default_kernel.json field \"default_kernel\": must not be "
                 "empty"}),
    bad_input_name);

class CliPlanBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliPlanBadInput, OneLineExitTwoNoOutput) {
  const auto output = temp_path(std::string("stripesim_plan_bad_") + GetParam().name + ".csv");
  std::filesystem::remove(output);
  const CliResult r = run_cli(GetParam().args + " --format csv --output '" + output.string() + "'");
  expect_rejected(r, GetParam());
  EXPECT_FALSE(std::filesystem::exists(output));
}

INSTANTIATE_TEST_SUITE_P(
    Table, CliPlanBadInput,
    ::testing::Values(
        BadInput{"plan_without_a_model", "plan --gpus 8", "--model is required"},
        BadInput{"plan_no_gpus", "plan --model 1b --gpus 0", "--gpus 0: must be between 1 and 32768"},
        // Nothing to search is the request's error, not a plan where nothing fits.
        BadInput{"plan_hybrid_on_one_gpu", "plan --model 1b --gpus 1 --algorithms hybrid",
                 "--algorithms hybrid: no mesh of 1 GPU runs it (allgather and ulysses need a context-parallel degree of 2 or more, "
                 "hybrid:UxR one of U x R with U and R of 2 or more); give more --gpus or add ring"},
        BadInput{"plan_collectives_on_one_gpu", "plan --model 1b --gpus 1 --algorithms ulysses,allgather",
                 "--algorithms ulysses,allgather: no mesh of 1 GPU runs any of them"},
        // Named by the plan's own flag, not the -M x -N x -D of the meshes it would try.
        BadInput{"plan_more_gpus_than_the_topology", "plan --model 1b --topology cluster:2x4 --gpus 16",
                 "--topology cluster:2x4: has 8 GPUs, fewer than --gpus 16"},
        BadInput{"plan_topology_beyond_a_plan", "plan --model 1b --topology cluster:8192x8",
                 "--topology cluster:8192x8: has 65536 GPUs, more than a plan searches (32768); give --gpus"},
        BadInput{"plan_unknown_algorithm", "plan --model 1b --algorithms ring,rings",
                 "--algorithms 'rings': expected ring, allgather, ulysses or hybrid"},
        BadInput{"plan_negative_memory", "plan --model 1b --memory-gib -1", "--memory-gib -1: must be positive"},
        BadInput{"plan_memory_beyond_physical", "plan --model 1b --memory-gib 1e308", "--memory-gib: 1e+308 is outside [1e-09, 1e+12]"},
        BadInput{"plan_zero_stage_unknown", "plan --model 1b --zero two",
                 "--zero 'two': expected 0 (nothing sharded), 1 (optimizer states), 2 (and gradients) or 3 (and weights)"},
        // What no mesh can run is the request's error, not an empty plan.
        BadInput{"plan_misspelt_layout", "plan --model 1b -n 64k --layouts zigzg", "--layouts 'zigzg': unknown layout"},
        // A permutation file holds one number of devices: searched at that degree, which the GPUs must divide.
        BadInput{"plan_permutation_degree_not_dividing", "plan --model 1b -n 4 --gpus 6 --layouts permutation:" + data("perm_4.json"),
                 "perm_4.json: holds 4 device blocks: no context-parallel degree of 6 GPUs cuts the sequence into 4 (it must divide "
                 "the GPUs)"},
        BadInput{"plan_permutation_one_device", "plan --model 1b -n 4 --gpus 8 --layouts permutation:" + data("perm_one_device.json"),
                 "perm_one_device.json: holds 1 device block: a plan lays a sequence out over a context-parallel degree of 2 or more"},
        BadInput{"plan_permutation_other_length", "plan --model 1b -n 64k --gpus 8 --layouts permutation:" + data("perm_4.json"),
                 "the layout covers 4 tokens but the sequence has 65536"},
        BadInput{"plan_unknown_mask", "plan --model 1b -n 64k --mask diagonal", "--mask 'diagonal': unknown mask"},
        BadInput{"plan_pad_without_documents", "plan --model 1b -n 64k --pad-documents", "--pad-documents: needs a documents mask"},
        BadInput{"plan_pad_seq_documents", "plan --model 1b -n 64k --pad-seq --mask documents:lognormal:4096:1.2:seed=1",
                 "--pad-seq: pads one sequence at its end; a documents mask is padded document by document (--pad-documents)"},
        BadInput{"plan_unknown_kernel", "plan --model 1b -n 64k --kernel fa9", "--kernel 'fa9': no such kernel for hardware h100-sxm"},
        // plan has no --devices or --heads: the remedy names none of simulate's flags.
        BadInput{"plan_blocks_per_call", "plan --model llama3-405b -n 2G --gpus 8 --algorithms ring --layouts zigzag",
                 "more than the 134217728 the kernel time model places; spread the sequence over more devices, or use fewer "
                 "heads or a smaller batch"}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return info.param.name; });

// Where nothing fits, the CSV still has its columns (the header of a plan that ranks choices).
// A search of one algorithm says so in its reasons, not that the others did not fit.
TEST(CliPlan, OneAlgorithmSearchedIsSaidSo) {
  const CliResult r = run_cli("plan --model 1b --gpus 8 -n 64k --algorithms ring --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the only algorithm searched (--algorithms)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("the only algorithm with a choice"), std::string::npos) << r.out;
}

// A plan given a topology and no --gpus searches every GPU of it (a user naming cluster:2x2 means
// its four GPUs); --gpus asks for part of it; without a topology the default is 8 on nvswitch:8.
TEST(CliPlan, GpusDefaultToEveryGpuOfTheTopology) {
  const auto plan_gpus = [](const std::string& args) {
    const CliResult r = run_cli("plan --model 1b -n 64k --format json " + args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    if (r.exit_code != 0) return std::int64_t{0};
    const auto doc = nlohmann::json::parse(r.out);
    // Every ranked mesh spreads over exactly the GPUs the request names.
    for (const auto& choice : doc.at("ranked")) {
      EXPECT_EQ(choice.at("model_parallel").get<std::int64_t>() * choice.at("context_parallel").get<std::int64_t>() *
                    choice.at("data_parallel").get<std::int64_t>(),
                doc.at("request").at("gpus").get<std::int64_t>())
          << args;
    }
    EXPECT_FALSE(doc.at("ranked").empty()) << args;
    return doc.at("request").at("gpus").get<std::int64_t>();
  };
  EXPECT_EQ(plan_gpus("--topology cluster:2x2"), 4);
  EXPECT_EQ(plan_gpus("--topology cluster:2x2 --gpus 2"), 2);
  EXPECT_EQ(plan_gpus(""), 8);
  EXPECT_EQ(plan_gpus("--topology ideal"), 8);
  const CliResult table = run_cli("plan --model 1b -n 64k --topology cluster:2x2");
  EXPECT_NE(table.out.find("on 4 GPUs (cluster:2x2)"), std::string::npos) << table.out;
}

TEST(CliPlan, CsvOfAPlanWhereNothingFitsIsItsHeader) {
  const CliResult none = run_cli("plan --model 1b --gpus 8 -n 64k --memory-gib 0.001 --format csv");
  const CliResult some = run_cli("plan --model 1b --gpus 8 -n 64k --format csv");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  ASSERT_EQ(some.exit_code, 0) << some.err;
  ASSERT_NE(some.out.find('\n'), std::string::npos);
  EXPECT_EQ(none.out, some.out.substr(0, some.out.find('\n') + 1));
  EXPECT_TRUE(none.out.starts_with("rank,tokens_per_second,")) << none.out;
}

// Refusals are listed by reason, the most choices first, each reason once whatever its numbers:
// 72 GPUs (an NVL72 rack) for 64 heads and a power-of-two length refuse M = 3, 6, 9, ... as one
// reason and every ring of 3, 9, ... devices as another. With nothing left that fits, the remedies
// name a length more degrees divide.
TEST(CliPlan, RefusalsComeByReasonMostChoicesFirst) {
  const CliResult r = run_cli("plan --model llama3-70b --hardware b200 --topology nvswitch:72 -n 1M");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t listed = r.out.find("refused, by reason (choices, then the first of each kind):\n");
  ASSERT_NE(listed, std::string::npos) << r.out;
  std::istringstream lines(r.out.substr(listed));
  std::string line;
  std::getline(lines, line);
  std::vector<std::pair<std::int64_t, std::string>> kinds;
  while (std::getline(lines, line) && !line.empty()) {
    std::istringstream fields(line);
    std::int64_t choices = 0;
    fields >> choices;
    std::string example;
    std::getline(fields >> std::ws, example);
    // The table adds the flag that mends a kind (JSON: its mended_by).
    if (example.ends_with(" with --pad-seq)")) example.resize(example.rfind(" ("));
    kinds.emplace_back(choices, example);
  }
  ASSERT_GE(kinds.size(), 2u) << r.out;
  std::int64_t refused = 0;
  for (size_t i = 0; i < kinds.size(); ++i) {
    refused += kinds[i].first;
    if (i > 0) {
      EXPECT_GE(kinds[i - 1].first, kinds[i].first) << r.out;
    }
  }
  EXPECT_EQ(std::ranges::count_if(kinds, [](const auto& k) { return k.second.starts_with("--model-parallel"); }), 1) << r.out;
  EXPECT_EQ(std::ranges::count_if(kinds, [](const auto& k) { return k.second.starts_with("--seq-len"); }), 1) << r.out;
  // The counts add up to the refused choices the header gives.
  EXPECT_NE(r.out.find(fmt::format("choices: {} refused by the simulation", refused)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--pad-seq, a --seq-len that more context-parallel degrees divide, or fewer --gpus"), std::string::npos) << r.out;
  // Under a documents mask the remedy is --pad-documents: --pad-seq refuses that mask.
  const CliResult docs = run_cli("plan --model llama3-8b --mask documents:lognormal:8192:1.0:seed=1 -n 64k --gpus 12 --memory-gib 1");
  ASSERT_EQ(docs.exit_code, 0) << docs.err;
  EXPECT_NE(docs.out.find("--pad-documents, a --seq-len that more"), std::string::npos) << docs.out;
  EXPECT_EQ(docs.out.find("--pad-seq"), std::string::npos) << docs.out;
  // Padding is named only where it lets a refused choice run: 2N padding gives block-striped:4096
  // no multiple of S x N (12288 at N = 3), while zigzag runs with it. JSON says which refusals it mends.
  const std::string twelve = "plan --model llama3-8b -n 64k --gpus 12 --memory-gib 1 --layouts ";
  const CliResult blocks = run_cli(twelve + "block-striped:4096");
  ASSERT_EQ(blocks.exit_code, 0) << blocks.err;
  EXPECT_NE(blocks.out.find("needs it divisible by s*N = 12288"), std::string::npos) << blocks.out;
  EXPECT_NE(blocks.out.find("a shorter sequence, a --seq-len that more"), std::string::npos) << blocks.out;
  EXPECT_EQ(blocks.out.find("--pad-seq"), std::string::npos) << blocks.out;
  const CliResult zigzag = run_cli(twelve + "zigzag");
  EXPECT_NE(zigzag.out.find("a shorter sequence, --pad-seq, a --seq-len that more"), std::string::npos) << zigzag.out;
  for (const auto& [out, mended] : {std::pair{run_cli(twelve + "block-striped:4096 --format json").out, false},
                                    std::pair{run_cli(twelve + "zigzag --format json").out, true}}) {
    std::int64_t length_kinds = 0;
    const auto doc = nlohmann::json::parse(out);
    for (const auto& kind : doc.at("refusals")) {
      if (!kind.at("example").get<std::string>().starts_with("--seq-len")) {
        EXPECT_FALSE(kind.contains("mended_by")) << kind;
        continue;
      }
      ++length_kinds;
      EXPECT_EQ(kind.contains("mended_by"), mended) << kind;
      if (mended) {
        EXPECT_EQ(kind.at("mended_by"), "--pad-seq") << kind;
      }
    }
    EXPECT_EQ(length_kinds, 2) << out;  // the ring's 2N and the hybrid's N
  }
  const auto doc = nlohmann::json::parse(run_cli("plan --model llama3-70b --hardware b200 --topology nvswitch:72 -n 1M --format json").out);
  ASSERT_EQ(doc.at("refusals").size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    EXPECT_EQ(doc.at("refusals")[i].at("choices").get<std::int64_t>(), kinds[i].first);
    EXPECT_EQ(doc.at("refusals")[i].at("example").get<std::string>(), kinds[i].second);
    EXPECT_EQ(doc.at("refusal_examples")[i].get<std::string>(), kinds[i].second);
  }
  // A length every degree divides refuses no ring for its length.
  const CliResult divisible = run_cli("plan --model llama3-70b --hardware b200 --topology nvswitch:72 -n 1179648");
  ASSERT_EQ(divisible.exit_code, 0) << divisible.err;
  EXPECT_EQ(divisible.out.find("  --seq-len"), std::string::npos) << divisible.out;
}

// A permutation file holds one number of devices: plan searches it wherever the layout cuts the
// sequence into that many blocks (a ring or all-gather of N = 4, a hybrid of R = 4) and nowhere
// else. Exported from zigzag, every one of its choices is zigzag's to the last digit.
TEST(CliPlan, SearchesAPermutationFileAtTheDegreeItHolds) {
  const auto file = temp_path("stripesim_plan_zigzag4.json");
  ASSERT_EQ(run_cli("layout --layout zigzag -n 64k -N 4 -o '" + file.string() + "'").exit_code, 0);
  const CliResult r = run_cli("plan --model llama3-8b --gpus 16 -n 64k --memory-gib 400 --top 1000 --format json --layouts zigzag,permutation:" +
                              file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const std::string permutation = "permutation:" + file.string();
  // By mesh and algorithm: the step, and the blocks the layout cuts the sequence into (R of hybrid:UxR, else N).
  std::map<std::string, std::pair<double, std::int64_t>> zigzag, from_file;
  for (const auto& c : doc.at("ranked")) {
    const std::string cp = c.at("cp").get<std::string>();
    const std::int64_t n = c.at("context_parallel").get<std::int64_t>();
    const std::int64_t blocks = cp.starts_with("hybrid:") ? std::stoll(cp.substr(cp.find('x') + 1)) : n;
    const std::string key = fmt::format("{}x{}x{} {}", c.at("model_parallel").get<std::int64_t>(), n,
                                        c.at("data_parallel").get<std::int64_t>(), cp);
    if (c.at("layout") == "zigzag") zigzag[key] = {c.at("step_us").get<double>(), blocks};
    if (c.at("layout") == permutation) from_file[key] = {c.at("step_us").get<double>(), blocks};
  }
  ASSERT_FALSE(from_file.empty()) << r.out;
  for (const auto& [key, step] : from_file) {
    EXPECT_EQ(step.second, 4) << key;
    ASSERT_TRUE(zigzag.contains(key)) << key;
    EXPECT_EQ(step.first, zigzag.at(key).first) << key;
  }
  // Every mesh whose layout cuts 4 blocks has it beside zigzag, and no other.
  for (const auto& [key, step] : zigzag) EXPECT_EQ(from_file.contains(key), step.second == 4) << key;
  EXPECT_TRUE(from_file.contains("1x8x2 hybrid:2x4")) << r.out;
  EXPECT_TRUE(from_file.contains("1x4x4 ring")) << r.out;
  std::filesystem::remove(file);
}

// --pad-seq plans the degrees a length does not divide: on 72 GPUs 1M tokens are padded, mesh by
// mesh, to the next multiple of 2N (N = 3, 6, 9, ...), no mesh is refused for its length, and a
// choice is what `simulate --pad-seq` says of it.
TEST(CliPlan, PadSeqPlansTheDegreesTheLengthDoesNotDivide) {
  const std::string args = "plan --model llama3-70b --hardware b200 --topology nvswitch:72 -n 1M --recompute --zero 1";
  const CliResult r = run_cli(args + " --pad-seq --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  // The request says what was asked: the padding (its lengths are the rows'), the kernel as given.
  EXPECT_TRUE(doc.at("request").at("pad_seq").get<bool>());
  EXPECT_FALSE(doc.at("request").at("pad_documents").get<bool>());
  EXPECT_EQ(doc.at("request").at("seq_len").get<std::int64_t>(), std::int64_t{1} << 20);
  EXPECT_EQ(doc.at("request").at("kernel").get<std::string>(), "");
  EXPECT_EQ(doc.at("request").at("merges").get<std::string>(), "profile");
  for (const auto& kind : doc.at("refusals")) {
    EXPECT_FALSE(kind.at("example").get<std::string>().starts_with("--seq-len")) << kind;
  }
  ASSERT_FALSE(doc.at("ranked").empty());
  bool odd_degree = false;
  for (const auto& choice : doc.at("ranked")) {
    const std::int64_t n = choice.at("seq_len").get<std::int64_t>();
    const std::int64_t twice = 2 * choice.at("context_parallel").get<std::int64_t>();
    EXPECT_EQ(n % twice, 0) << choice;
    EXPECT_GE(n, std::int64_t{1} << 20);
    EXPECT_LT(n, (std::int64_t{1} << 20) + twice) << choice;
    odd_degree = odd_degree || choice.at("context_parallel").get<std::int64_t>() % 3 == 0;
  }
  EXPECT_TRUE(odd_degree) << "a degree of 3, 6 or 9 among the choices: 72 = 8 x 9";
  const auto& top = doc.at("ranked")[0];
  const CliResult one = run_cli(fmt::format(
      "simulate --scope step --model llama3-70b --hardware b200 --topology nvswitch:72 -n 1M --recompute --zero 1 --pad-seq "
      "-M {} -N {} -D {} --cp {} --layouts {} --format json --summary-only",
      top.at("model_parallel").get<std::int64_t>(), top.at("context_parallel").get<std::int64_t>(),
      top.at("data_parallel").get<std::int64_t>(), top.at("cp").get<std::string>(), top.at("layout").get<std::string>()));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto sim = nlohmann::json::parse(one.out);
  EXPECT_EQ(sim.at("config").at("seq_len"), top.at("seq_len"));
  EXPECT_EQ(sim.at("results")[0].at("step").at("tokens_per_second").get<double>(), top.at("tokens_per_second").get<double>());
  // Without it those meshes are refused for their length, and the remedies name it.
  const CliResult unpadded = run_cli(args);
  EXPECT_NE(unpadded.out.find("  --seq-len 1048576: layout"), std::string::npos) << unpadded.out;
}

// With --top 1 the search stopped once the winner was simulated, and its "why" compared it with
// whatever else had been simulated by then: a Ulysses winner sold as 23 % ahead of a ring, where
// the best choice of another algorithm (a hybrid, bounded out) trails it by 6.7 %. The others'
// best is now simulated for every algorithm among the top, so the reason is the exhaustive
// search's, whatever --top; and the rows simulated beyond the top carry no rank.
TEST(CliPlan, TheReasonIsAgainstTheTrueBestOfAnotherAlgorithmWhateverTop) {
  const std::string args = "plan --model 3b --topology cluster:8x8 -n 512k --mask window:4k --recompute --format json";
  const CliResult all = run_cli(args + " --top 1000");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const auto every = nlohmann::json::parse(all.out).at("ranked");
  for (const int top : {1, 2, 3}) {
    const CliResult r = run_cli(args + " --top " + std::to_string(top));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto ranked = nlohmann::json::parse(r.out).at("ranked");
    ASSERT_GT(ranked.size(), static_cast<size_t>(top));
    for (size_t i = 0; i < ranked.size(); ++i) {
      if (i < static_cast<size_t>(top)) {
        EXPECT_EQ(ranked[i].at("rank").get<int>(), static_cast<int>(i) + 1);
        EXPECT_EQ(ranked[i].at("reason"), every[i].at("reason")) << "top " << top << ", rank " << i + 1;
      } else {
        EXPECT_TRUE(ranked[i].at("rank").is_null()) << ranked[i];
      }
    }
  }
  EXPECT_NE(every[0].at("reason").get<std::string>().find("beats hybrid:4x2 contiguous on 1x8x8 by 1.6%"), std::string::npos)
      << every[0];
}

// On 25 Gbit/s links the gradient all-reduce sets the step of every 1 x 8 x 1 mesh, whatever its
// attention: Ulysses and the hybrids take the same time. A tie is said as one, not as each
// beating the other by 0.0%.
TEST(CliPlan, ChoicesOfTheSameThroughputTie) {
  const CliResult r = run_cli("plan --model llama3-8b --topology cluster:8x1:nic=25gbps -n 64k --zero 1 --top 3 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto ranked = nlohmann::json::parse(r.out).at("ranked");
  ASSERT_GE(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].at("tokens_per_second"), ranked[1].at("tokens_per_second"));
  EXPECT_NE(ranked[0].at("cp"), ranked[1].at("cp"));
  for (size_t i = 0; i < 2; ++i) {
    const std::string reason = ranked[i].at("reason");
    EXPECT_TRUE(reason.starts_with("ties with ")) << reason;
    EXPECT_EQ(reason.find("beats"), std::string::npos) << reason;
  }
}

// An odd (prime) length: zigzag divides it on no mesh and contiguous and striped only on one
// device, so without --pad-seq only the meshes of one device run, and the refusals name the flag
// that mends the rest; where every layout refuses it on every mesh (zigzag alone) the request is
// refused with the remedy named. With --pad-seq each mesh pads to its own 2N, as simulate
// --pad-seq does (the check of the layouts' names on one device pads too).
TEST(CliPlan, PadSeqPlansAnOddLength) {
  const std::string args = "plan --model llama3-8b --gpus 8 -n 131071 --recompute --zero 1 --top 3";
  const CliResult unpadded = run_cli(args);
  ASSERT_EQ(unpadded.exit_code, 0) << unpadded.err;
  EXPECT_NE(unpadded.out.find("needs it divisible by N = 2; the nearest lengths every listed layout takes are 131068 and 131072 "
                              "(pad 1 token to reach 131072) (these run with --pad-seq)"),
            std::string::npos)
      << unpadded.out;
  const auto unpadded_json = nlohmann::json::parse(run_cli(args + " --format json").out);
  for (const auto& choice : unpadded_json.at("ranked")) EXPECT_EQ(choice.at("context_parallel"), 1) << choice;
  // So under a documents mask (zigzag refused the whole plan there), and with --pad-seq a layout
  // padding to 2N does not mend (block-striped:4 wants 4N) leaves the others to run.
  const CliResult documents = run_cli(args + " --mask documents:fixed:4096");
  EXPECT_EQ(documents.exit_code, 0) << documents.err;
  const CliResult blocks = run_cli("plan --model llama3-8b --gpus 8 -n 131070 --recompute --zero 1 --top 3 --pad-seq "
                                   "--layouts contiguous,block-striped:4");
  EXPECT_EQ(blocks.exit_code, 0) << blocks.err;
  // A kind of refusal spans meshes of several degrees; the padding that mends some is said of those.
  const CliResult some = run_cli("plan --model llama3-8b --gpus 8 -n 1000 --top 1 --layouts contiguous,block-striped:3 --algorithms ring");
  ASSERT_EQ(some.exit_code, 0) << some.err;
  EXPECT_NE(some.out.find("layout block-striped:3 needs it divisible by s*N = 6; the nearest such lengths are 996 and 1002 (pad 2 "
                          "tokens to reach 1002) (1 of these runs with --pad-seq)"),
            std::string::npos)
      << some.out;
  const auto some_json = nlohmann::json::parse(
      run_cli("plan --model llama3-8b --gpus 8 -n 1000 --top 1 --layouts contiguous,block-striped:3 --algorithms ring --format json").out);
  for (const auto& kind : some_json.at("refusals")) {
    if (kind.at("example").get<std::string>().find("block-striped:3") == std::string::npos) continue;
    EXPECT_EQ(kind.at("choices"), 6) << kind;
    EXPECT_EQ(kind.at("mended_choices"), 1) << kind;
  }
  // A mesh where every layout refuses the length, padding mending some: counted as those it mends
  // (on 6 GPUs, N = 3 pads contiguous to 1002, not block-striped:3 to a multiple of 9).
  const auto six = nlohmann::json::parse(
      run_cli("plan --model llama3-8b --gpus 6 -n 1000 --top 1 --layouts contiguous,block-striped:3 --algorithms ring --format json").out);
  const auto& first_kind = six.at("refusals").at(0);
  EXPECT_NE(first_kind.at("example").get<std::string>().find("layout contiguous needs it divisible by N = 3"), std::string::npos) << first_kind;
  EXPECT_EQ(first_kind.at("choices"), 6) << first_kind;
  EXPECT_EQ(first_kind.at("mended_choices"), 4) << first_kind;
  const CliResult zigzag = run_cli(args + " --layouts zigzag");
  EXPECT_EQ(zigzag.exit_code, 2);
  EXPECT_NE(zigzag.err.find("--seq-len 131071: layout zigzag needs it divisible by 2N = 2"), std::string::npos) << zigzag.err;
  EXPECT_NE(zigzag.err.find("or give --pad-seq"), std::string::npos) << zigzag.err;
  const CliResult padded = run_cli(args + " --pad-seq --format json");
  ASSERT_EQ(padded.exit_code, 0) << padded.err;
  const auto ranked = nlohmann::json::parse(padded.out).at("ranked");
  ASSERT_FALSE(ranked.empty());
  for (const auto& choice : ranked) {
    const std::int64_t n = choice.at("seq_len").get<std::int64_t>();
    EXPECT_EQ(n % (2 * choice.at("context_parallel").get<std::int64_t>()), 0) << choice;
    EXPECT_GT(n, 131071);
  }
  // A length S x N must divide is no padding's to mend: refused without the hint.
  const CliResult striped = run_cli("plan --model llama3-8b -n 64k --layouts block-striped:3000 --recompute");
  EXPECT_EQ(striped.exit_code, 2);
  EXPECT_NE(striped.err.find("needs it divisible by s*N = 3000"), std::string::npos) << striped.err;
  EXPECT_EQ(striped.err.find("--pad-seq"), std::string::npos) << striped.err;
}

// --merges prices a ring's merges; the all-gather and Ulysses choices ran without it (simulate
// refuses it beside them), and a note names their ranks. The memory limit is shown as given.
TEST(CliPlan, MergesAreSaidToSkipTheCollectivesAndTheLimitIsShownAsGiven) {
  const CliResult r = run_cli("plan --model 1b --hardware h100 --gpus 8 -n 64k --merges fused --memory-gib 55.5 --top 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("over 55.5 GiB of memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" of 55.5 GiB"), std::string::npos) << r.out;
  const bool collective_shown = r.out.find(" allgather ") != std::string::npos || r.out.find(" ulysses ") != std::string::npos;
  ASSERT_TRUE(collective_shown) << r.out;
  EXPECT_NE(r.out.find("note: --merges fused prices a ring's merges: the choice"), std::string::npos) << r.out;
}

TEST(CliPlan, RanksChoicesAndCsvIsDeterministic) {
  const std::string args = "plan --model 1b --hardware h100 --gpus 8 -n 64k --top 3";
  const CliResult table = run_cli(args);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("rank     tokens/s"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("   1 "), std::string::npos);
  EXPECT_NE(table.out.find(" beats "), std::string::npos) << table.out;
  const CliResult a = run_cli(args + " --format csv");
  const CliResult b = run_cli(args + " --format csv");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out.substr(0, a.out.find('\n')),
            "rank,tokens_per_second,step_us,model_parallel,context_parallel,data_parallel,cp,layout,seq_len,mfu,memory_bytes,"
            "matmul_us,elementwise_us,attention_compute_us,attention_comm_us,attention_idle_us,model_parallel_comm_us,gradient_comm_us,bound_us,reason");
}

TEST(CliSimulate, StepTableSaysWhatTheTimeCoversAndCsvIsDeterministic) {
  const CliResult table = run_cli("simulate --model 1b --scope step -N 4 -n 64k");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("scope: a training step of 1b (22 layers), fwdbwd"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("MFU"), std::string::npos);
  // Mixed-precision Adam's 16 bytes a parameter (ZeRO, Rajbhandari et al. 2020: 2 of weights, 2 of
  // gradients, 12 of optimizer state), and what each stage shards of them.
  EXPECT_NE(table.out.find("(16 B per parameter), activations"), std::string::npos) << table.out;
  for (const auto& [stage, share] : {std::pair{"1", "a 1/4 share of the 12 B of Adam state"},
                                     std::pair{"2", "a 1/4 share of the 14 B of gradients and Adam state"},
                                     std::pair{"3", "a 1/4 share of all 16, plus two units of weights gathered whole (a layer's, or the LM head's where larger)"}}) {
    const CliResult sharded = run_cli(std::string("simulate --model 1b --scope step -N 4 -n 64k --zero ") + stage);
    EXPECT_NE(sharded.out.find(std::string("(16 B per parameter, ZeRO stage ") + stage + ": " + share + ")"), std::string::npos)
        << sharded.out;
  }
  const CliResult ring = run_cli("simulate -N 4 -n 64k");
  EXPECT_NE(ring.out.find("scope: the attention ring of one layer"), std::string::npos) << ring.out;
  const std::string csv_args = "simulate --model 1b --scope step -M 2 -N 4 -n 64k --format csv";
  const CliResult a = run_cli(csv_args), b = run_cli(csv_args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out.substr(0, a.out.find('\n')),
            "layout,scope,model,hardware,model_parallel,devices,data_parallel,seq_len,pass,cp,mask,topology,time_us,speedup_vs_contiguous,"
            "kv_memory_bytes,mean_busy_us,max_idle_us,max_exposed_comm_us,tokens_per_second,mfu,matmul_us,elementwise_us,attention_compute_us,attention_comm_us,attention_idle_us,"
            "model_parallel_comm_us,gradient_comm_us,memory_bytes,exceeds_memory");
}

// The JSON's step inputs carry the traffic between the weights' copies the table prints: the
// gradient all-reduce, and under ZeRO the all-gather of the weights' shards, half of it (a ring
// all-reduce is a reduce-scatter then an all-gather of the same shards); 0 where nothing is sharded.
TEST(CliSimulate, StepJsonCarriesTheWeightCopiesTraffic) {
  const std::string args = "simulate --model llama3-8b --scope step -M 2 -N 4 -D 8 -n 16k --topology cluster:8x8:nic=1gbps "
                           "--layouts zigzag --format json --summary-only";
  const auto inputs = [&](const std::string& zero) {
    const CliResult r = run_cli(args + zero);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out).at("step_inputs");
  };
  const auto plain = inputs("");
  EXPECT_EQ(plain.at("weight_allgather_us").get<double>(), 0.0);
  const double allreduce = plain.at("gradient_allreduce_us").get<double>();
  ASSERT_GT(allreduce, 0);
  for (const std::string stage : {"1", "2", "3"}) {
    const auto sharded = inputs(" --zero " + stage);
    EXPECT_NEAR(2 * sharded.at("weight_allgather_us").get<double>(), allreduce, 1e-6 * allreduce) << stage;
    const CliResult table = run_cli("simulate --model llama3-8b --scope step -M 2 -N 4 -D 8 -n 16k --topology cluster:8x8:nic=1gbps "
                                    "--layouts zigzag --zero " + stage);
    EXPECT_NE(table.out.find(fmt::format("{:.3f} ms", sharded.at("weight_allgather_us").get<double>() / 1e3)), std::string::npos)
        << table.out;
  }
}

// The CSV is what users stack across runs: each row names its mask and topology and carries the
// ring totals the JSON's results give (the same numbers, not a second computation of them).
TEST(CliSimulate, CsvRowsCarryTheMaskTopologyAndRingTotalsOfTheJson) {
  const std::string args = "simulate -N 4 -n 32k --mask documents:8k,24k --topology pcie-8gpu --pass fwdbwd";
  const CliResult json = run_cli(args + " --format json --summary-only"), csv = run_cli(args + " --format csv");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const auto doc = nlohmann::json::parse(json.out);
  std::istringstream lines(csv.out);
  std::string header_line, line;
  std::getline(lines, header_line);
  const auto header = csv_cells(header_line);
  auto column = [&header](const std::string& name) {
    const auto at = std::ranges::find(header, name);
    EXPECT_NE(at, header.end()) << name;
    return static_cast<size_t>(at - header.begin());
  };
  size_t rows = 0;
  for (; std::getline(lines, line); ++rows) {
    const auto cells = csv_cells(line);
    ASSERT_EQ(cells.size(), header.size()) << line;
    const auto& result = doc.at("results").at(rows);
    EXPECT_EQ(cells[column("layout")], result.at("layout").get<std::string>());
    EXPECT_EQ(cells[column("mask")], "documents:8k,24k");
    EXPECT_EQ(cells[column("topology")], doc.at("config").at("topology").get<std::string>());
    for (const char* total : {"mean_busy_us", "max_idle_us", "max_exposed_comm_us"})
      EXPECT_DOUBLE_EQ(std::stod(cells[column(total)]), result.at(total).get<double>()) << total << " " << line;
  }
  EXPECT_EQ(rows, 3u);
  // Contiguous leaves devices idle under documents; the totals are real numbers, not zeros.
  EXPECT_GT(doc.at("results").at(0).at("max_idle_us").get<double>(), 0.0);
}

TEST(CliSimulate, PerRoundRecordsAreOptInAbove64Devices) {
  auto rounds_of = [](const std::string& args) {
    const CliResult r = run_cli(args + " --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    const bool present = doc.at("results")[0].at("passes")[0].contains("rounds");
    EXPECT_EQ(doc.at("rounds_included").get<bool>(), present) << args;
    return present;
  };
  EXPECT_TRUE(rounds_of("simulate -N 64 -n 64k"));
  EXPECT_FALSE(rounds_of("simulate -N 128 -n 128k --layouts zigzag"));
  EXPECT_TRUE(rounds_of("simulate -N 128 -n 128k --layouts zigzag --rounds"));
  EXPECT_FALSE(rounds_of("simulate -N 8 --summary-only"));
}

TEST(CliCalibrateStep, RefusesAnExperimentWithoutStepOrMeasurements) {
  const CliResult tms = run_cli(std::string("calibrate-step --experiment '") + STRIPESIM_SOURCE_DIR +
                                "/configs/experiments/paper-tms.json'");
  EXPECT_EQ(tms.exit_code, 2);
  EXPECT_NE(tms.err.find("has no \"step\" object"), std::string::npos) << tms.err;
  const CliResult bad = run_cli(std::string("calibrate-step --experiment '") + STRIPESIM_SOURCE_DIR +
                                "/tests/data/bad_measured_experiment.json'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad_measured_speedups.csv line 3 speedup 'fast': expected a number"), std::string::npos)
      << bad.err;
  // One measurement a point, and none faster than N devices can be.
  for (const auto& [file, message] :
       {std::pair{"duplicate_measured_experiment.json", "duplicate_measured_speedups.csv line 4: the same point as line 2"},
        std::pair{"impossible_measured_experiment.json",
                  "impossible_measured_speedups.csv line 2: speedup 1e308 is above the 2 devices"}}) {
    const CliResult r = run_cli(std::string("calibrate-step --experiment '") + STRIPESIM_SOURCE_DIR + "/tests/data/" + file + "'");
    EXPECT_EQ(r.exit_code, 2) << file;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

// Replicas of a ring on two nodes of three GPUs: the pairs {0, 1} and {4, 5} stay in a node, {2, 3}
// crosses the network, and the step waits for it. The ring, the all-gather and the all-to-all
// each follow that pair, as two GPUs on two nodes do alone (the ring followed {0, 1}: 7x faster
// than the all-gather on the same placement, which was priced on its slowest group).
TEST(CliSimulate, ReplicasFollowTheirSlowestGroup) {
  const auto time_of = [](const std::string& flags) {
    const CliResult r = run_cli("simulate -n 16k --layouts zigzag --format json " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out).at("results")[0].at("time_us").get<double>() : -1.0;
  };
  for (const char* cp : {"ring", "allgather", "ulysses"}) {
    const std::string with = std::string(" --cp ") + cp;
    EXPECT_DOUBLE_EQ(time_of("--topology cluster:2x3:nic=25gbps -N 2 -D 3" + with), time_of("--topology cluster:2x1:nic=25gbps -N 2" + with))
        << cp;
  }
}

// The group a simulation follows is the one whose transfers are slowest as they run, each
// judged alone against the same GPUs with no replica beside them (GPUs listed in another order):
//  - rings: every ring's hops at once, two on one link sharing it. On `follow`, the pair
//    {0, 1} has a 5 GB/s link of its own, while {2, 3} and {4, 5} share an 8 GB/s trunk, 4 GB/s
//    each: the step waits for them (it followed {0, 1}, alone the slowest, 15.1 ms against 18.5);
//  - an all-gather by its step's bytes (it was judged by 1 byte, by latency: {2, 3}'s 20 us
//    route over {0, 1}'s 5 GB/s link), so the hops shown are the pair that takes 13.4 ms;
//  - --sync serial, one processor copying one part at a time: all-gather and Ulysses by each
//    group's slowest hop alone (Ulysses followed the first group, 9.3 ms against 60.2), a ring by
//    the sum of its hops;
//  - a hybrid by every one of its U rings, side by side.
TEST(CliSimulate, FollowsTheGroupWhoseTransfersAreSlowest) {
  const auto dir = fresh_temp_dir("follow_slowest");
  const auto write = [&](const std::string& name, const std::vector<std::string>& gpus, const std::vector<std::string>& switches,
                         const nlohmann::json& links) {
    nlohmann::json doc = {{"name", name}, {"nodes", nlohmann::json::array()}, {"links", links}};
    for (const auto& g : gpus) doc["nodes"].push_back({{"id", g}, {"kind", "gpu"}});
    for (const auto& w : switches) doc["nodes"].push_back({{"id", w}, {"kind", "switch"}});
    std::ofstream(dir / (name + ".json")) << doc.dump();
    return (dir / (name + ".json")).string();
  };
  const auto link = [](const char* a, const char* b, double gbps, double latency) {
    return nlohmann::json{{"a", a}, {"b", b}, {"bandwidth_gbps", gbps}, {"latency_us", latency}};
  };
  const nlohmann::json trunk = {link("g0", "g1", 5, 1),   link("g0", "L", 1, 1),   link("g2", "L", 100, 1), link("g4", "L", 100, 1),
                                link("g3", "R", 100, 1), link("g5", "R", 100, 1), link("L", "R", 8, 1)};
  const std::string follow = write("follow", {"g0", "g1", "g2", "g3", "g4", "g5"}, {"L", "R"}, trunk);
  const std::string shared_first = write("shared_first", {"g2", "g3", "g4", "g5", "g0", "g1"}, {"L", "R"}, trunk);
  const nlohmann::json star = {link("g0", "g1", 5, 1), link("g0", "S", 1, 1), link("g2", "S", 100, 10), link("g3", "S", 100, 10)};
  const std::string lat = write("lat", {"g0", "g1", "g2", "g3"}, {"S"}, star);
  const std::string lat_reversed = write("lat_reversed", {"g2", "g3", "g0", "g1"}, {"S"}, star);
  const auto run = [](const std::string& flags) {
    const CliResult r = run_cli("simulate -n 16k -N 2 --layouts zigzag --format json " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const auto time_of = [&](const std::string& flags) { return run(flags).at("results")[0].value("time_us", -1.0); };
  EXPECT_DOUBLE_EQ(time_of("--topology " + follow + " -D 3"), time_of("--topology " + shared_first + " -D 2"));
  EXPECT_GT(time_of("--topology " + follow + " -D 3"), 1.2 * time_of("--topology " + follow + " -D 1"));
  const nlohmann::json gathered = run("--topology " + lat + " -D 2 --cp allgather");
  EXPECT_EQ(gathered.at("hops")[0].value("from_gpu", -1), 0);
  EXPECT_EQ(gathered.at("hops")[0].value("to_gpu", -1), 1);
  EXPECT_DOUBLE_EQ(gathered.at("results")[0].value("time_us", -1.0), time_of("--topology " + lat + " -D 1 --cp allgather"));
  for (const char* cp : {"allgather", "ulysses"}) {
    const std::string serial = std::string(" --sync serial --cp ") + cp;
    EXPECT_DOUBLE_EQ(time_of("--topology " + lat_reversed + " -D 2" + serial), time_of("--topology " + lat + " -D 1" + serial)) << cp;
  }
  // A hybrid's U rings run side by side: hybrid:2x2's rings {0, 2} and {1, 3} share the 10 GB/s
  // trunk A-B, 5 GB/s each, while {4, 6} and {5, 7} each have a 9 GB/s link of their own.
  const std::string hybrid = write("hybrid", {"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"}, {"A", "B", "C", "D"},
                                   {link("g0", "A", 100, 1), link("g1", "A", 100, 1), link("g2", "B", 100, 1), link("g3", "B", 100, 1),
                                    link("A", "B", 10, 1), link("g4", "C", 100, 1), link("g5", "C", 100, 1), link("g6", "D", 100, 1),
                                    link("g7", "D", 100, 1), link("g4", "g6", 9, 1), link("g5", "g7", 9, 1), link("A", "C", 1, 1)});
  const auto hybrid_time = [&](const std::string& replicas) {
    const CliResult r = run_cli("simulate -n 16k -N 4 --cp hybrid:2x2 --layouts zigzag --format json --topology " + hybrid + replicas);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out).at("results")[0].value("time_us", -1.0) : -1.0;
  };
  EXPECT_DOUBLE_EQ(hybrid_time(" -D 2"), hybrid_time(" -D 1"));
  // One processor hands a ring's blocks on one after another: the ring whose hops add up to
  // most is the slowest (10, 10 and 10 GB/s against 8, 1000 and 8), not the one with the
  // slowest hop.
  const std::string serial_rings = write("serial_rings", {"g0", "g1", "g2", "g3", "g4", "g5"}, {},
                                         {link("g0", "g1", 10, 1), link("g1", "g2", 10, 1), link("g2", "g0", 10, 1), link("g3", "g4", 8, 1),
                                          link("g4", "g5", 1000, 1), link("g5", "g3", 8, 1), link("g2", "g3", 1, 1)});
  const auto serial_time = [&](const std::string& replicas) {
    const CliResult r = run_cli("simulate -n 12k -N 3 --sync serial --layouts zigzag --format json --topology " + serial_rings + replicas);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out).at("results")[0].value("time_us", -1.0) : -1.0;
  };
  EXPECT_DOUBLE_EQ(serial_time(" -D 2"), serial_time(" -D 1"));
}

// The JSON names the model-parallel group the activation all-reduce is priced on: on cluster:2x3
// with -M 2 the pair {2, 3} straddles the nodes and sets the time (the pair of GPUs on two nodes
// alone takes as long), not the first pair {0, 1}; on cluster:3x2 no pair straddles, the first is named.
TEST(CliSimulate, NamesTheModelParallelGroupItPricesTheAllReduceOn) {
  const auto inputs_of = [](const std::string& flags) {
    const CliResult r = run_cli("simulate --scope step --model llama3-8b -M 2 --layouts zigzag --format json " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out).at("step_inputs") : nlohmann::json::object();
  };
  const nlohmann::json straddling = inputs_of("--topology cluster:2x3 -N 3 -n 12k");
  const nlohmann::json alone = inputs_of("--topology cluster:2x1 -N 1 -n 4k");
  EXPECT_EQ(straddling.value("model_parallel_gpus", nlohmann::json()), nlohmann::json::array({2, 3}));
  EXPECT_DOUBLE_EQ(straddling.value("activation_allreduce_us", -1.0), alone.value("activation_allreduce_us", -2.0));
  EXPECT_EQ(inputs_of("--topology cluster:3x2 -N 3 -n 12k").value("model_parallel_gpus", nlohmann::json()),
            nlohmann::json::array({0, 1}));
}

// A hardware profile whose default kernel was timed in a precision the profile lists no rate for:
// the refusal names that field, not a --kernel the user never gave.
TEST(CliSimulate, ADefaultKernelInAnUnlistedPrecisionIsNamedAsTheHardwaresField) {
  const auto dir = fresh_temp_dir("default_kernel_precision");
  auto hardware = nlohmann::json::parse(slurp(std::string(STRIPESIM_SOURCE_DIR) + "/configs/hardware/cpu.json"));
  hardware["name"] = "cpu-with-fa2";
  hardware["aliases"] = nlohmann::json::array();
  // A bf16 kernel measured on this very hardware (one copied from the H100 would convert by the H100's rates).
  auto kernel = nlohmann::json::parse(slurp(std::string(STRIPESIM_SOURCE_DIR) + "/configs/kernels/h100/fa2.json"));
  kernel["hardware"] = "cpu-with-fa2";
  std::ofstream(dir / "fa2.json") << kernel.dump();
  hardware["default_kernel"] = (dir / "fa2.json").string();
  std::ofstream(dir / "hw.json") << hardware.dump();
  const CliResult r = run_cli("simulate -n 4k -N 2 --dtype fp32 --hardware '" + (dir / "hw.json").string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "stripesim: error: hardware cpu-with-fa2 (" + (dir / "hw.json").string() +
                       ") field \"default_kernel\" 'fa2': timed in bf16, for which hardware cpu-with-fa2 lists no peak rate to "
                       "convert its times by\n");
}

// A measured row's values are named at its line and column where they are refused (an unknown
// hardware or model, a mesh the model cannot split), not as flags calibrate-step has not; a row
// no point of the grid shows is refused by sweep, which would have dropped it from its table.
TEST(CliCalibrateStep, NamesAMeasuredRowsValuesAtTheirLineAndColumn) {
  const auto dir = fresh_temp_dir("measured_rows");
  const auto experiment = [&](const std::string& name, const std::string& row) {
    std::ofstream(dir / (name + ".csv")) << "hardware,model,model_parallel,sequence_parallel,seq_len,"
                                            "measured_speedup_striped_over_contiguous\nA100,1B,1,2,8192,0.94\n"
                                         << row << "\n";
    std::ofstream(dir / (name + ".json")) << R"({"groups": [{"hardware": ["a100"], "models": ["1b"], "meshes": ["1x2"],
        "seq_lens": ["8k", "16k"]}], "step": {"kernel": "blockwise", "sync": "lockstep"}, "measured": ")" + name + R"(.csv"})";
    return "--experiment '" + (dir / (name + ".json")).string() + "'";
  };
  for (const auto& [name, row, message] :
       {std::tuple{"hardware", "B100,1B,1,2,16384,1.02", "hardware.csv line 3 hardware = 'B100': unknown"},
        std::tuple{"model", "A100,2B,1,2,16384,1.02", "model.csv line 3 model = '2B': unknown"},
        std::tuple{"split", "A100,1B,3,2,16384,1.02", "split.csv line 3 model_parallel = 3: must divide the 16 heads"},
        std::tuple{"none", "A100,1B,1,0,16384,0.5", "none.csv line 3 sequence_parallel '0': must be at least 1"}}) {
    const std::string flags = experiment(name, row);
    for (const char* command : {"calibrate-step", "sweep"}) {
      const CliResult r = run_cli(std::string(command) + " " + flags);
      EXPECT_EQ(r.exit_code, 2) << command << " " << name;
      if (std::string(command) == "sweep" && std::string(name) == "split") continue;  // the grid has no 3x2 mesh: below
      EXPECT_NE(r.err.find(message), std::string::npos) << command << ": " << r.err;
      EXPECT_EQ(r.err.find("--"), r.err.find("--experiment")) << "no flag but the one given: " << r.err;
    }
  }
  const std::string outside = experiment("outside", "A100,1B,1,2,12288,1.0");
  EXPECT_EQ(run_cli("calibrate-step " + outside).exit_code, 0);
  const CliResult swept = run_cli("sweep " + outside);
  EXPECT_EQ(swept.exit_code, 2);
  EXPECT_NE(swept.err.find("outside.csv line 3: no point of the grid is A100 1B on a 1x2 mesh at n = 12288"), std::string::npos)
      << swept.err;
  EXPECT_EQ(run_cli("sweep " + experiment("inside", "A100,1B,1,2,16384,1.0")).exit_code, 0);
  // A fit calibrates one hardware: the first row on another is named.
  const CliResult mixed = run_cli("calibrate-step " + experiment("mixed", "H100,1B,1,2,16384,1.02"));
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("mixed.csv: rows on A100 and H100; a step fit calibrates one hardware"), std::string::npos) << mixed.err;
  // One point named two ways is one point twice, for both commands.
  const std::string renamed = experiment("renamed", "a100,1b,1,2,8192,0.5");
  for (const char* command : {"calibrate-step", "sweep"}) {
    const CliResult r = run_cli(std::string(command) + " " + renamed);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.err.find("renamed.csv line 3: the same point as line 2"), std::string::npos) << command << ": " << r.err;
  }
  // Points that differ in their tile alone share a measured row: each shows it.
  std::ofstream(dir / "tiles.json") << R"({"groups": [{"hardware": ["a100"], "models": ["1b"], "meshes": ["1x2"], "seq_lens": ["8k"],
      "tiles": ["2048x4096", "128x128"]}], "step": {"kernel": "blockwise", "sync": "lockstep"}, "measured": "inside.csv",
      "columns": ["n_seq", "c", "measured"]})";
  std::ofstream(dir / "inside.csv") << "hardware,model,model_parallel,sequence_parallel,seq_len,"
                                       "measured_speedup_striped_over_contiguous\nA100,1B,1,2,8192,0.94\n";
  const CliResult tiles = run_cli("sweep --experiment '" + (dir / "tiles.json").string() + "'");
  ASSERT_EQ(tiles.exit_code, 0) << tiles.err;
  size_t shown = 0;
  for (size_t at = tiles.out.find(",0.94"); at != std::string::npos; at = tiles.out.find(",0.94", at + 1)) ++shown;
  EXPECT_EQ(shown, 2u) << tiles.out;
}

TEST(CliSweep, StepSweepRefusesStepFieldsThatThePointsSet) {
  for (const auto& [file, message] :
       {std::pair{"step_sweep_with_layouts.json", "field \"step\": \"layouts\" is set by each point of the grid"},
        std::pair{"step_sweep_attention_scope.json", "\"scope\" is \"attention\"; a step sweep simulates training steps"},
        std::pair{"step_sweep_unknown_column.json", "step_sweep_unknown_column.json field \"columns\" 'speedup_of_light': unknown column"}}) {
    const CliResult r = run_cli(std::string("sweep --experiment '") + STRIPESIM_SOURCE_DIR + "/tests/data/" + file + "'");
    EXPECT_EQ(r.exit_code, 2) << file;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  // The columns it offers are the step sweep's: the step's own among them (they were left out).
  const CliResult unknown = run_cli(std::string("sweep --experiment '") + STRIPESIM_SOURCE_DIR + "/tests/data/step_sweep_unknown_column.json'");
  EXPECT_NE(unknown.err.find("tiles_lockstep_speedup_zigzag, step_time_us_contiguous, step_speedup, step_speedup_zigzag, mfu_striped, "
                             "measured, error\n"),
            std::string::npos)
      << unknown.err;
}

// The step's fields and the measured file are named where the experiment gives them: sweep and
// calibrate-step have no --kernel flag (the message named it until 2026-12-06).
TEST(CliSweep, StepSweepErrorsNameTheExperimentsFields) {
  const std::string kernel = "step_sweep_unknown_kernel.json field \"step.kernel\" = 'nope': no such kernel";
  const std::string measured = "step_sweep_missing_measured.json field \"measured\" ";
  for (const auto& [command, file, message] :
       {std::tuple{"sweep", "step_sweep_unknown_kernel.json", kernel}, std::tuple{"sweep", "step_sweep_missing_measured.json", measured},
        std::tuple{"calibrate-step", "step_sweep_missing_measured.json", measured}}) {
    const CliResult r = run_cli(std::string(command) + " --experiment '" + STRIPESIM_SOURCE_DIR + "/tests/data/" + file + "'");
    EXPECT_EQ(r.exit_code, 2) << command << " " << file;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("--kernel"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

}  // namespace
}  // namespace stripesim::testing
