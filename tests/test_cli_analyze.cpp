#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "csv_cells.hpp"
#include "stripesim/model/io/spec_syntax.hpp"
#include "stripesim/model/work/document_layouts.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "temp_path.hpp"

namespace stripesim::testing {
namespace {

// The flag table lists every layout and mask the parsers take, as the parsers' lists spell them,
// in their order, and nothing else in backquotes before the defaults.
TEST(CliAnalyze, ReadmeFlagTableListsEveryLayoutAndMask) {
  for (const auto& [flag, syntaxes] :
       {std::pair{std::string("--layouts"), std::span<const model::SpecSyntax>(model::kLayoutSyntaxes)},
        std::pair{std::string("--mask"), std::span<const model::SpecSyntax>(model::kMaskSyntaxes)}}) {
    const std::string row = readme_row(flag);
    const std::string meaning = row.substr(0, row.rfind(" | "));  // the default's cell left out
    std::vector<std::string> listed;
    for (size_t at = meaning.find('`', flag.size() + 4); at != std::string::npos; at = meaning.find('`', at + 1)) {
      const size_t end = meaning.find('`', at + 1);
      listed.push_back(meaning.substr(at + 1, end - at - 1));
      at = end;
    }
    std::vector<std::string> expected;
    for (const model::SpecSyntax& each : syntaxes) expected.emplace_back(each.syntax);
    EXPECT_EQ(listed, expected) << row;
  }
  // And the parser's error lists the same.
  const CliResult r = run_cli("analyze --layouts diagonal");
  EXPECT_NE(r.err.find("expected " + model::expected_list(model::kLayoutSyntaxes)), std::string::npos) << r.err;
}

TEST(CliAnalyze, DefaultRunPrintsThePaperComparison) {
  const CliResult r = run_cli("analyze");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("n = 262144 tokens, N = 8 devices"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tiles 2048x4096"), std::string::npos);
  for (const char* layout : {"contiguous", "striped", "zigzag"}) EXPECT_NE(r.out.find(layout), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CliAnalyze, JsonFollowsTheContract) {
  const CliResult r = run_cli("analyze --seq-len 2048 --devices 8 --tile 64x64 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("schema"), "stripesim.analyze/1");
  EXPECT_EQ(doc.at("config").at("seq_len"), 2048);
  EXPECT_EQ(doc.at("config").at("devices"), 8);
  EXPECT_EQ(doc.at("config").at("tile").at("query"), 64);
  ASSERT_EQ(doc.at("results").size(), 3u);
  for (const auto& result : doc.at("results")) {
    for (const char* matrix : {"unmasked_elements", "active_tiles", "partial_tiles"}) {
      ASSERT_EQ(result.at(matrix).size(), 8u) << matrix;
      for (const auto& round : result.at(matrix)) ASSERT_EQ(round.size(), 8u);
    }
    for (const char* unit : {"elements", "tiles"}) {
      for (const char* key : {"total", "lockstep", "slowest_device", "imbalance", "spread", "cv", "speedup",
                              "lockstep_speedup", "idle_fraction", "lockstep_speedup_vs_contiguous"}) {
        EXPECT_TRUE(result.at("metrics").at(unit).contains(key)) << unit << "." << key;
      }
    }
  }
  const auto& contiguous = doc.at("results")[0];
  EXPECT_EQ(contiguous.at("layout"), "contiguous");
  EXPECT_EQ(contiguous.at("metrics").at("elements").at("total"), 2048 * 2049 / 2);
  EXPECT_NEAR(contiguous.at("metrics").at("elements").at("speedup").get<double>(), 4.27, 0.005);
  EXPECT_NEAR(doc.at("results")[2].at("metrics").at("elements").at("lockstep_speedup_vs_contiguous").get<double>(),
              1.87, 0.005);
}

TEST(CliAnalyze, CsvMatricesHaveOneTidyRowPerLayoutRoundDevice) {
  const CliResult r =
      run_cli("analyze --seq-len 64 --devices 4 --tile 4x4 --layouts contiguous,striped --format csv --matrices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "layout,round,device,kv_source,unmasked_elements,active_tiles,partial_tiles");
  int rows = 0;
  while (std::getline(lines, line)) ++rows;
  EXPECT_EQ(rows, 2 * 4 * 4);
  // Round 0 of contiguous: device 3 computes its own diagonal block, 16 * 17 / 2 pairs.
  EXPECT_NE(r.out.find("contiguous,0,3,3,136,"), std::string::npos) << r.out;
  // Round 1: device 3 holds device 2's block, fully visible.
  EXPECT_NE(r.out.find("contiguous,1,3,2,256,16,0"), std::string::npos) << r.out;
}

// Without --matrices the CSV is the summary: one row per layout, the JSON's metrics flattened.
TEST(CliAnalyze, CsvSummaryHasOneRowPerLayoutWithTheJsonMetrics) {
  const std::string args = "analyze --seq-len 2048 --devices 8 --tile 64x64 --layouts contiguous,zigzag --format ";
  const CliResult csv = run_cli(args + "csv");
  const CliResult json = run_cli(args + "json");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const auto doc = nlohmann::json::parse(json.out);
  std::istringstream lines(csv.out);
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header,
            "layout,seq_len,devices,tile,tiling,mask,"
            "elements_total,elements_lockstep,elements_slowest_device,elements_imbalance,elements_spread,elements_cv,"
            "elements_speedup,elements_lockstep_speedup,elements_idle_fraction,elements_lockstep_speedup_vs_contiguous,"
            "tiles_total,tiles_lockstep,tiles_slowest_device,tiles_imbalance,tiles_spread,tiles_cv,"
            "tiles_speedup,tiles_lockstep_speedup,tiles_idle_fraction,tiles_lockstep_speedup_vs_contiguous,"
            "tiles_vs_bound,tiles_lockstep_vs_bound,best");
  const std::vector<std::string> columns = csv_cells(header);
  std::vector<std::vector<std::string>> rows;
  while (std::getline(lines, line)) rows.push_back(csv_cells(line));
  ASSERT_EQ(rows.size(), 2u);
  // The blog's numbers: contiguous 2098176 pairs, lockstep and slowest device both the last
  // device's 256 * 257 / 2 + 7 * 256 * 256 = 491648 (4.27x).
  const std::vector<std::string> contiguous_head{"contiguous", "2048",    "8",      "64x64", "fixed",
                                                 "causal",     "2098176", "491648", "491648"};
  EXPECT_EQ(std::vector<std::string>(rows[0].begin(), rows[0].begin() + 9), contiguous_head);
  // Every metric cell is the JSON's number, written the same way.
  for (size_t l = 0; l < 2; ++l) {
    ASSERT_EQ(rows[l].size(), columns.size());
    const auto& result = doc.at("results")[l];
    for (size_t c = 6; c + 3 < columns.size(); ++c) {
      const std::string unit = columns[c].substr(0, columns[c].find('_'));
      const std::string key = columns[c].substr(unit.size() + 1);
      EXPECT_EQ(rows[l][c], result.at("metrics").at(unit).at(key).dump()) << columns[c];
    }
    EXPECT_EQ(rows[l][columns.size() - 3], result.at("tiles_vs_bound").dump());
    EXPECT_EQ(rows[l].back(), result.at("best").dump());
  }
  EXPECT_EQ(rows[1].back(), "true") << "zigzag is the best layout";
}

// Packed documents: speedup and imbalance are relative to each layout's own total, so striped
// (which needs many more tiles) looks perfect; the tile bound columns rank every layout against
// one denominator, the fewest tiles any layout needs over N.
TEST(CliAnalyze, TileBoundRanksLayoutsOnPackedDocuments) {
  const CliResult r = run_cli(
      "analyze -n 64k -N 8 --tile 128x128 --mask documents:lognormal:2048:1.0:seed=7 --pad-documents "
      "--layouts contiguous,striped,zigzag,doc-zigzag,balanced --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& results = doc.at("results");
  model::Count fewest = results[0].at("metrics").at("tiles").at("total");
  for (const auto& result : results) fewest = std::min(fewest, result.at("metrics").at("tiles").at("total").get<model::Count>());
  const double bound = static_cast<double>(fewest) / 8.0;
  EXPECT_DOUBLE_EQ(doc.at("tile_bound").get<double>(), bound);
  size_t best = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& tiles = results[i].at("metrics").at("tiles");
    EXPECT_DOUBLE_EQ(results[i].at("tiles_vs_bound").get<double>(), tiles.at("slowest_device").get<double>() / bound);
    EXPECT_DOUBLE_EQ(results[i].at("tiles_lockstep_vs_bound").get<double>(), tiles.at("lockstep").get<double>() / bound);
    if (tiles.at("slowest_device") < results[best].at("metrics").at("tiles").at("slowest_device")) best = i;
  }
  EXPECT_EQ(results[best].at("layout"), "balanced");
  EXPECT_EQ(doc.at("best_layout"), "balanced");
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i].at("best").get<bool>(), i == best) << i;
  // Striped's own speedup looks perfect, yet its busiest device is far above the bound.
  const auto& striped = results[1];
  ASSERT_EQ(striped.at("layout"), "striped");
  EXPECT_GT(striped.at("metrics").at("tiles").at("speedup").get<double>(), 7.9);
  EXPECT_GT(striped.at("tiles_vs_bound").get<double>(), 1.3);
  EXPECT_LT(results[best].at("tiles_vs_bound").get<double>(), 1.1);
  // The table marks it, and only it.
  const CliResult table = run_cli(
      "analyze -n 64k -N 8 --tile 128x128 --mask documents:lognormal:2048:1.0:seed=7 --pad-documents "
      "--layouts contiguous,striped,zigzag,doc-zigzag,balanced");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const size_t marker = table.out.find("<- best");
  ASSERT_NE(marker, std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("<- best", marker + 1), std::string::npos);
  EXPECT_EQ(table.out.rfind("\nbalanced ", marker), table.out.rfind('\n', marker)) << table.out;
  EXPECT_NE(table.out.find(fmt::format("/ N = {:.1f} tiles", bound)), std::string::npos) << table.out;
}

// The header names the mask it counted under; it said "causal" under every mask once.
TEST(CliAnalyze, HeaderNamesTheMask) {
  const CliResult r = run_cli("analyze --seq-len 64 --devices 4 --tile 8x8 --mask bidirectional");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string header = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(header, "ring attention work: n = 64 tokens, N = 4 devices, c = 16 tokens per device, mask bidirectional, tiles 8x8");
  EXPECT_EQ(r.out.find("causal"), std::string::npos) << r.out;
}

// Prefix-LM: P^2 pairs inside the prefix, then every later query its q + 1 keys, whatever the layout;
// under contiguous, device 0's own block lies inside the prefix: every tile of it full, none partial
// (a causal mask leaves 136 of its 16 x 16 tiles active, 16 of them partial).
TEST(CliAnalyze, PrefixMaskCountsThePrefixBothWays) {
  const CliResult r = run_cli("analyze --seq-len 4096 --devices 4 --tile 64x64 --mask prefix:1k --format json "
                              "--layouts contiguous,striped,zigzag,balanced");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("config").at("mask").at("prefix"), 1024);
  const std::int64_t n = 4096, p = 1024;
  for (const auto& result : doc.at("results")) {
    EXPECT_EQ(result.at("metrics").at("elements").at("total"), p * p + (n * (n + 1) - p * (p + 1)) / 2) << result.at("layout");
  }
  const auto& contiguous = doc.at("results")[0];
  EXPECT_EQ(contiguous.at("active_tiles")[0][0], 256);
  EXPECT_EQ(contiguous.at("partial_tiles")[0][0], 0);
  // Device 1's queries (1024..2047) are past the prefix: causal there, and they read all of device 0's block.
  EXPECT_EQ(contiguous.at("active_tiles")[0][1], 136);
  EXPECT_EQ(contiguous.at("active_tiles")[1][1], 256);
  EXPECT_EQ(contiguous.at("partial_tiles")[1][1], 0);
}

TEST(CliAnalyze, OutputIsByteIdenticalAcrossRunsAndThreads) {
  for (const char* format : {"json", "csv", "table"}) {
    const std::string args = std::string("analyze --seq-len 96k --devices 12 --tile 128x256 --mask window:5000 "
                                         "--layouts contiguous,striped,zigzag,block-striped:4 --format ") + format;
    const CliResult one = run_cli(args + " --threads 1");
    const CliResult two = run_cli(args + " --threads 2");
    const CliResult again = run_cli(args);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(one.out, two.out) << format;
    EXPECT_EQ(one.out, again.out) << format;
  }
}

// --format is case aside in every command, as layout's is: the output is the lowercase name's.
TEST(CliAnalyze, FormatNamesAreCaseAside) {
  for (const std::string command : {"analyze -n 4k -N 4", "tms -n 64k -N 4", "simulate -n 4k -N 2", "sweep --devices 2 --seq-lens 16k",
                                    "layout --layout zigzag -n 16 -N 2"}) {
    for (const auto& [given, name] : {std::pair{"JSON", "json"}, std::pair{"Csv", "csv"}}) {
      const CliResult upper = run_cli(command + " --format " + given);
      const CliResult lower = run_cli(command + " --format " + name);
      ASSERT_EQ(upper.exit_code, 0) << command << ": " << upper.err;
      ASSERT_EQ(lower.exit_code, 0) << command << ": " << lower.err;
      EXPECT_EQ(upper.out, lower.out) << command << " --format " << given;
    }
  }
  EXPECT_EQ(run_cli("analyze --format XML").err,
            "stripesim: error: --format: XML not in {table,json,csv} (see stripesim analyze --help)\n");
}

TEST(CliAnalyze, WritesOutputFile) {
  const auto path = temp_path("stripesim_cli_written.json");
  std::filesystem::remove(path);
  const CliResult r = run_cli("analyze --seq-len 1k --devices 4 --tile 32x32 --format json --output '" + path.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(nlohmann::json::parse(slurp(path)).at("config").at("seq_len"), 1024);
  std::filesystem::remove(path);
}

TEST(CliAnalyze, ConfigFileAndFlagsOverrideIt) {
  const auto path = temp_path("stripesim_cli_config.json");
  std::ofstream(path) << R"({"seq_len": "4k", "devices": 4, "tile": "64x64", "layouts": ["zigzag"], "mask": "causal"})";
  const CliResult r = run_cli("analyze --config '" + path.string() + "' --devices 8 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("config").at("seq_len"), 4096);
  EXPECT_EQ(doc.at("config").at("devices"), 8);
  EXPECT_EQ(doc.at("results").size(), 1u);
  // --experiment, the name every other command uses, reads the same file the same way.
  EXPECT_EQ(run_cli("analyze --experiment '" + path.string() + "' --devices 8 --format json").out, r.out);
  std::filesystem::remove(path);
}

TEST(CliAnalyze, ShippedDefaultConfigIsThePaperSetting) {
  const CliResult r = run_cli(std::string("analyze --config '") + STRIPESIM_SOURCE_DIR +
                              "/configs/analyze/default.json' --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("config").at("seq_len"), 262144);
  EXPECT_EQ(doc.at("config").at("devices"), 8);
  EXPECT_EQ(doc.at("config").at("tile").at("key"), 4096);
  EXPECT_EQ(doc.at("results").size(), 3u);
}

TEST(CliAnalyze, HelpShowsWorkedExamples) {
  const CliResult top = run_cli("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("Examples:"), std::string::npos);
  const CliResult sub = run_cli("analyze --help");
  EXPECT_EQ(sub.exit_code, 0);
  EXPECT_NE(sub.out.find("--layouts"), std::string::npos);
  EXPECT_NE(sub.out.find("Examples:"), std::string::npos);
}

// --tiling varlen counts the tiles of a kernel that tiles every document on its own (FlashAttention's
// varlen entry point): under packed documents fewer than fixed tiling's, exactly the work model's.
TEST(CliAnalyze, VarlenTilingCountsEveryDocumentOnItsOwn) {
  const std::string mask_spec = "documents:lognormal:1024:1.2:seed=17";
  const std::string args = "analyze -n 16k -N 4 --tile 128x128 --mask " + mask_spec +
                           " --layouts contiguous,doc-zigzag --pad-documents --format json";
  const CliResult varlen = run_cli(args + " --tiling varlen");
  const CliResult fixed = run_cli(args + " --tiling fixed");
  ASSERT_EQ(varlen.exit_code, 0) << varlen.err;
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_EQ(run_cli(args).out, fixed.out) << "fixed is the default";
  const auto v = nlohmann::json::parse(varlen.out);
  const auto f = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(v.at("config").at("tiling"), "varlen");
  EXPECT_EQ(f.at("config").at("tiling"), "fixed");

  const model::Mask mask = model::pad_documents(model::parse_mask(mask_spec, 16384), 4).mask;
  ASSERT_EQ(v.at("config").at("seq_len"), mask.seq_len());
  const model::TileShape tile{128, 128};
  const std::vector<model::Count> fixed_totals{1189, 1864}, varlen_totals{1104, 1488};
  for (size_t i = 0; i < 2; ++i) {
    const auto& vr = v.at("results")[i];
    const auto& fr = f.at("results")[i];
    const std::string spec = vr.at("layout");
    // Unmasked pairs do not depend on the tiling; active tiles do.
    EXPECT_EQ(vr.at("unmasked_elements"), fr.at("unmasked_elements")) << spec;
    EXPECT_EQ(fr.at("metrics").at("tiles").at("total"), fixed_totals[i]) << spec;
    EXPECT_EQ(vr.at("metrics").at("tiles").at("total"), varlen_totals[i]) << spec;
    const model::Layout layout =
        model::parse_layout(spec, mask.seq_len(), 4, model::LayoutContext{&mask, tile, model::Tiling::varlen});
    const model::Work work = model::count_work(layout, mask, tile, 1, model::WorkDetail::totals, model::Tiling::varlen);
    // The cu_seqlens entries a varlen call needs, per device; fixed tiling does not report them.
    EXPECT_EQ(vr.at("document_pieces").get<std::vector<model::Count>>(), model::document_pieces(layout, mask)) << spec;
    EXPECT_FALSE(fr.contains("document_pieces")) << spec;
    for (model::Count r = 0; r < 4; ++r) {
      for (model::Count d = 0; d < 4; ++d) {
        EXPECT_EQ(vr.at("active_tiles")[r][d], work.active_tiles.at(r, d)) << spec << " round " << r << " device " << d;
        EXPECT_EQ(vr.at("partial_tiles")[r][d], work.partial_tiles.at(r, d)) << spec << " round " << r << " device " << d;
      }
    }
  }
  // The table names the tiling where it changes the counts.
  const std::string table_args = args.substr(0, args.find(" --format"));
  EXPECT_NE(run_cli(table_args + " --tiling varlen").out.find("tiles 128x128 (varlen)\n"), std::string::npos);
  EXPECT_EQ(run_cli(table_args).out.find("varlen"), std::string::npos);
  // A config file names it too.
  const auto path = temp_path("stripesim_cli_tiling_config.json");
  std::ofstream(path) << R"({"seq_len": "16k", "devices": 4, "tile": "128x128", "tiling": "varlen", "pad_documents": true,
                             "mask": "documents:lognormal:1024:1.2:seed=17", "layouts": ["contiguous", "doc-zigzag"]})";
  EXPECT_EQ(run_cli("analyze --config '" + path.string() + "' --format json").out, varlen.out);
  EXPECT_EQ(run_cli("analyze --config '" + path.string() + "' --tiling fixed --format json").out, fixed.out);
  std::filesystem::remove(path);
}

TEST(CliAnalyze, MatricesOnRequest) {
  const CliResult r = run_cli("analyze --seq-len 64 --devices 4 --tile 8x8 --layouts contiguous --matrices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unmasked (q, k) pairs [round][device]"), std::string::npos);
  EXPECT_NE(r.out.find("partial tiles [round][device]"), std::string::npos);
}

}  // namespace
}  // namespace stripesim::testing
