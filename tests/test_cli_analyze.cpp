#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace stripesim::testing {
namespace {

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

TEST(CliAnalyze, CsvHasOneTidyRowPerLayoutRoundDevice) {
  const CliResult r = run_cli("analyze --seq-len 64 --devices 4 --tile 4x4 --layouts contiguous,striped --format csv");
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

TEST(CliAnalyze, WritesOutputFile) {
  const auto path = std::filesystem::temp_directory_path() / "stripesim_cli_written.json";
  std::filesystem::remove(path);
  const CliResult r = run_cli("analyze --seq-len 1k --devices 4 --tile 32x32 --format json --output '" + path.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(nlohmann::json::parse(slurp(path)).at("config").at("seq_len"), 1024);
  std::filesystem::remove(path);
}

TEST(CliAnalyze, ConfigFileAndFlagsOverrideIt) {
  const auto path = std::filesystem::temp_directory_path() / "stripesim_cli_config.json";
  std::ofstream(path) << R"({"seq_len": "4k", "devices": 4, "tile": "64x64", "layouts": ["zigzag"], "mask": "causal"})";
  const CliResult r = run_cli("analyze --config '" + path.string() + "' --devices 8 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("config").at("seq_len"), 4096);
  EXPECT_EQ(doc.at("config").at("devices"), 8);
  EXPECT_EQ(doc.at("results").size(), 1u);
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

TEST(CliAnalyze, MatricesOnRequest) {
  const CliResult r = run_cli("analyze --seq-len 64 --devices 4 --tile 8x8 --layouts contiguous --matrices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unmasked (q, k) pairs [round][device]"), std::string::npos);
  EXPECT_NE(r.out.find("partial tiles [round][device]"), std::string::npos);
}

}  // namespace
}  // namespace stripesim::testing
