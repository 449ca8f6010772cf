#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bad_input_table.hpp"

namespace stripesim::testing {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(CliReport, WritesMarkdownAndFigures) {
  const auto dir = fresh_dir("stripesim_report_test");
  ASSERT_EQ(run_cli("analyze --seq-len 4k --devices 4 --tile 64x64 --format json -o '" + (dir / "a.json").string() + "'").exit_code, 0);
  ASSERT_EQ(run_cli("simulate --seq-len 4k --devices 4 --tile 64x64 --format json -o '" + (dir / "s.json").string() + "'").exit_code, 0);
  const CliResult r = run_cli("report '" + (dir / "a.json").string() + "' '" + (dir / "s.json").string() + "' --out-dir '" +
                              (dir / "out").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("report written to"), std::string::npos);
  const std::string md = slurp(dir / "out" / "report.md");
  EXPECT_NE(md.find("## Work per round and device"), std::string::npos);
  EXPECT_NE(md.find("## Simulated ring"), std::string::npos);
  EXPECT_NE(md.find("No validator output was given"), std::string::npos);
  for (const char* figure : {"work-elements-0.svg", "work-tiles-0.svg", "attention-matrix-0.svg"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "out" / figure)) << figure;
  }
  // Same inputs, same bytes.
  const std::string first = slurp(dir / "out" / "work-elements-0.svg");
  ASSERT_EQ(run_cli("report '" + (dir / "a.json").string() + "' '" + (dir / "s.json").string() + "' --out-dir '" +
                    (dir / "out").string() + "'").exit_code, 0);
  EXPECT_EQ(first, slurp(dir / "out" / "work-elements-0.svg"));
  std::filesystem::remove_all(dir);
}

TEST(CliReport, CommittedDefaultReportIsComplete) {
  const std::filesystem::path dir = std::string(STRIPESIM_SOURCE_DIR) + "/reports/default";
  const std::string md = slurp(dir / "report.md");
  for (const char* section : {"## Work per round and device", "## Theoretical maximum speedup", "## TMS against sequence length",
                              "## Simulated ring", "## Predicted against measured"}) {
    EXPECT_NE(md.find(section), std::string::npos) << section;
  }
  for (const char* figure : {"work-elements-0.svg", "attention-matrix-0.svg", "tms-a100-80gb-1b.svg"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / figure)) << figure;
  }
}

TEST(CliCheck, PassesOnTheCommittedBaselineAndFailsWhenANumberMoves) {
  const std::string baseline = std::string(STRIPESIM_SOURCE_DIR) + "/reports/baseline/imbalance.json";
  const CliResult ok = run_cli("check --baseline '" + baseline + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("within tolerance"), std::string::npos);

  auto doc = nlohmann::json::parse(slurp(baseline));
  doc["entries"][0]["metrics"]["contiguous.elements.imbalance"] = 1.5;
  doc["entries"][0]["metrics"]["zigzag.elements.no_such_metric"] = 1.0;
  const auto moved = std::filesystem::temp_directory_path() / "stripesim_moved_baseline.json";
  std::ofstream(moved) << doc.dump();
  const CliResult bad = run_cli("check --baseline '" + moved.string() + "'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("2 metrics moved"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("contiguous.elements.imbalance"), std::string::npos);
  EXPECT_NE(bad.out.find("missing"), std::string::npos);
  // A loose tolerance lets a small drift through; it never hides a missing metric.
  EXPECT_EQ(run_cli("check --baseline '" + moved.string() + "' --tolerance 1").exit_code, 1);
  std::filesystem::remove(moved);
}

TEST(CliCheck, WritesABaselineFromAnExperiment) {
  const auto dir = fresh_dir("stripesim_check_test");
  std::ofstream(dir / "exp.json") << R"({"analyze": [{"seq_len": 2048, "devices": 8, "tile": "64x64"}],
                                         "tms": [{"model": "1b", "hardware": "a100", "devices": 2, "seq_len": 8192}]})";
  const CliResult r = run_cli("check --write-baseline '" + (dir / "b.json").string() + "' --experiment '" + (dir / "exp.json").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(slurp(dir / "b.json"));
  EXPECT_EQ(doc.at("schema"), "stripesim.baseline/1");
  EXPECT_NEAR(doc.at("entries")[0].at("metrics").at("contiguous.elements.speedup").get<double>(), 4.27, 0.005);
  EXPECT_NEAR(doc.at("entries")[1].at("metrics").at("tms").get<double>(), 1.22, 0.005);
  EXPECT_EQ(run_cli("check --baseline '" + (dir / "b.json").string() + "'").exit_code, 0);
  std::filesystem::remove_all(dir);
}

// A baseline entry records the tiling its numbers were counted under, and the check recounts under
// it; an entry without one (a baseline written before there was a choice) is fixed tiling.
TEST(CliCheck, BaselineEntriesRecordTheirTiling) {
  const auto dir = fresh_dir("stripesim_check_tiling_test");
  std::ofstream(dir / "exp.json") << R"({"analyze": [
      {"seq_len": "16k", "devices": 4, "tile": "128x128", "mask": "documents:lognormal:1024:1.2:seed=17",
       "layouts": ["contiguous", "doc-zigzag"], "pad_documents": true, "tiling": "varlen"},
      {"seq_len": "16k", "devices": 4, "tile": "128x128", "mask": "documents:lognormal:1024:1.2:seed=17",
       "layouts": ["contiguous", "doc-zigzag"], "pad_documents": true}],
    "tms": [{"model": "1b", "hardware": "a100", "devices": 2, "seq_len": 8192}]})";
  const std::string baseline = (dir / "b.json").string();
  ASSERT_EQ(run_cli("check --write-baseline '" + baseline + "' --experiment '" + (dir / "exp.json").string() + "'").exit_code, 0);
  auto doc = nlohmann::json::parse(slurp(baseline));
  EXPECT_EQ(doc.at("entries")[0].at("config").at("tiling"), "varlen");
  EXPECT_EQ(doc.at("entries")[1].at("config").at("tiling"), "fixed");
  EXPECT_EQ(doc.at("entries")[2].at("config").at("tiling"), "fixed");
  const auto& varlen = doc.at("entries")[0].at("metrics");
  const auto& fixed = doc.at("entries")[1].at("metrics");
  EXPECT_EQ(varlen.at("contiguous.elements.imbalance"), fixed.at("contiguous.elements.imbalance"));
  EXPECT_NE(varlen.at("contiguous.tiles.imbalance"), fixed.at("contiguous.tiles.imbalance"));
  const CliResult ok = run_cli("check --baseline '" + baseline + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  // Without the field the varlen entry is recounted under fixed tiling: its tile metrics move, its
  // pair metrics do not; the fixed entry without it still passes.
  doc["entries"][0]["config"].erase("tiling");
  doc["entries"][1]["config"].erase("tiling");
  std::ofstream(dir / "old.json") << doc.dump();
  const CliResult old = run_cli("check --baseline '" + (dir / "old.json").string() + "'");
  EXPECT_EQ(old.exit_code, 1);
  EXPECT_NE(old.out.find("contiguous.tiles.imbalance"), std::string::npos) << old.out;
  EXPECT_EQ(old.out.find("elements"), std::string::npos) << old.out;
  EXPECT_EQ(old.out.find("tiling="), std::string::npos) << "labels name varlen only" << old.out;
  doc["entries"][1]["config"]["tiling"] = "diagonal";
  std::ofstream(dir / "bad.json") << doc.dump();
  const CliResult bad = run_cli("check --baseline '" + (dir / "bad.json").string() + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("entries[1] config field \"tiling\" 'diagonal': unknown tiling"), std::string::npos) << bad.err;
  std::filesystem::remove_all(dir);
}

class CliReportCheckBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliReportCheckBadInput, OneLineExitTwo) {
  expect_rejected(run_cli(GetParam().args), GetParam());
  EXPECT_FALSE(std::filesystem::exists("/tmp/stripesim_never_written"));
}

INSTANTIATE_TEST_SUITE_P(
    Table, CliReportCheckBadInput,
    ::testing::Values(
        BadInput{"report_no_inputs", "report --out-dir /tmp/stripesim_never_written", "inputs is required"},
        BadInput{"report_missing_input", "report /nonexistent/a.json --out-dir /tmp/stripesim_never_written", "does not exist"},
        BadInput{"report_unknown_schema", "report " + data("unknown_field_config.json") + " --out-dir /tmp/stripesim_never_written",
                 "no known \"schema\""},
        BadInput{"check_nothing", "check", "check: give --baseline FILE"},
        BadInput{"check_missing_baseline", "check --baseline /nonexistent/b.json", "does not exist"},
        BadInput{"check_not_a_baseline", "check --baseline " + data("unknown_field_config.json"), "unknown field"},
        BadInput{"check_bad_tolerance", "check --baseline x.json --tolerance -1", "--tolerance '-1': must be a non-negative number"},
        BadInput{"check_write_without_experiment", "check --write-baseline /tmp/stripesim_never_written", "needs --experiment"},
        BadInput{"check_both", "check --baseline a.json --write-baseline b.json", "excludes"}),
    bad_input_name);

}  // namespace
}  // namespace stripesim::testing
