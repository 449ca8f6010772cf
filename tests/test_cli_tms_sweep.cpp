#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bad_input_table.hpp"

namespace stripesim::testing {
namespace {

TEST(CliTms, JsonHasTmsZigzagTilesAndBreakdown) {
  const CliResult r = run_cli("tms --model 1b --hardware a100 --devices 8 --model-parallel 1 --seq-len 196608 "
                              "--convention paper --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("schema"), "stripesim.tms/1");
  EXPECT_NEAR(doc.at("tms").get<double>(), 1.83, 0.005);  // the paper's N=8, n=196608 row
  EXPECT_GT(doc.at("tms_zigzag").get<double>(), 1.8);
  EXPECT_LT(doc.at("tms_tiles").get<double>(), doc.at("tms").get<double>());
  EXPECT_EQ(doc.at("config").at("tile").at("key"), 4096);
  EXPECT_DOUBLE_EQ(doc.at("flops").at("attention_flop_weight").get<double>(), 2.0);
  EXPECT_EQ(doc.at("layouts").size(), 3u);
  EXPECT_TRUE(r.err.empty());
}

TEST(CliSweep, CommittedPaperStepReportIsUpToDate) {
  const CliResult r = run_cli(std::string("sweep --experiment '") + STRIPESIM_SOURCE_DIR +
                              "/configs/experiments/paper-measured.json'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, slurp(std::string(STRIPESIM_SOURCE_DIR) + "/reports/paper-step.csv"))
      << "regenerate with: stripesim sweep --experiment configs/experiments/paper-measured.json --output reports/paper-step.csv";
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "hardware,model,mesh,n_seq,c,tms,tms_tiles,step_speedup,step_speedup_zigzag,mfu_striped,measured,error");
}

TEST(CliTms, TableByDefault) {
  const CliResult r = run_cli("tms");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("model 1b on a100-80gb"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("striped"), std::string::npos);
}

TEST(CliSweep, CommittedPaperReportIsUpToDate) {
  const CliResult r = run_cli(std::string("sweep --experiment '") + STRIPESIM_SOURCE_DIR +
                              "/configs/experiments/paper-tms.json'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, slurp(std::string(STRIPESIM_SOURCE_DIR) + "/reports/paper-tms.csv"))
      << "regenerate with: stripesim sweep --experiment configs/experiments/paper-tms.json --output reports/paper-tms.csv";
  EXPECT_TRUE(r.err.empty()) << "no progress bar when stderr is not a terminal: " << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "hardware,model,mesh,n_seq,c,tms,tms_tiles,tms_zigzag");
}

TEST(CliSweep, FlagsGridAndFormats) {
  const std::string grid = "sweep --hardware a100,h100 --models 1b,7b --devices 2,4 --seq-lens 16k,32k";
  const CliResult csv = run_cli(grid);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 1 + 2 * 2 * 2 * 2);
  const CliResult json = run_cli(grid + " --format json --threads 1");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc.at("schema"), "stripesim.sweep/1");
  EXPECT_EQ(doc.at("rows").size(), 16u);
  EXPECT_EQ(run_cli(grid + " --format json --threads 2").out, json.out);
  const CliResult table = run_cli(grid + " --format table --columns model,mesh,n_seq,tms");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.substr(0, table.out.find('\n')).find("model"), 0u);
}

class CliTmsSweepBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliTmsSweepBadInput, OneLineExitTwo) {
  expect_rejected(run_cli(GetParam().args), GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Table, CliTmsSweepBadInput,
    ::testing::Values(
        BadInput{"unknown_model", "tms --model 13b", "--model '13b': unknown, expected one of 1b, 3b, 7b, llama3-70b, llama3-8b"},
        BadInput{"misspelt_hardware", "tms --hardware h10", "--hardware 'h10': unknown (did you mean 'h100'?)"},
        BadInput{"unknown_hardware", "tms --hardware mi300x", "--hardware 'mi300x': unknown"},
        BadInput{"model_file_missing", "tms --model /nonexistent/m.json", "does not exist"},
        BadInput{"model_file_invalid", "tms --model " + data("invalid_model.json"), "heads 16 must be a multiple of kv_heads 5"},
        BadInput{"model_parallel_heads", "tms --model-parallel 3", "--model-parallel 3: must divide the model's 16 heads"},
        BadInput{"tms_zigzag_divisibility", "tms --devices 8 --seq-len 1000", "layout zigzag needs it divisible by 2N = 16"},
        BadInput{"tms_bad_convention", "tms --convention rough", "--convention"},
        BadInput{"tms_bad_weight", "tms --attention-weight -1", "--attention-weight '-1': must be a positive number"},
        BadInput{"tms_weight_not_number", "tms --attention-weight two", "--attention-weight 'two': must be a positive number"},
        BadInput{"sweep_bad_mesh", "sweep --meshes 2x", "--meshes '2x': expected MxN"},
        BadInput{"sweep_unknown_column", "sweep --columns tms,speed", "--columns 'speed': unknown column"},
        BadInput{"sweep_experiment_missing", "sweep --experiment /nonexistent/e.json", "does not exist"},
        BadInput{"sweep_experiment_malformed", "sweep --experiment " + data("malformed_config.json"), "is not valid JSON"},
        BadInput{"sweep_experiment_unknown_field", "sweep --experiment " + data("unknown_field_config.json"),
                 "unknown field \"devices\""},
        BadInput{"sweep_bad_seq_len", "sweep --seq-lens 16k,abc", "--seq-lens 'abc'"},
        BadInput{"balance_bad_kind", "sweep --kind imbalance", "--kind: imbalance not in {tms,balance}"},
        BadInput{"balance_bad_mask", "sweep --kind balance --masks diagonal", "--mask 'diagonal': unknown mask"},
        BadInput{"balance_experiment_fields", "sweep --experiment " + data("bad_balance_experiment.json"),
                 "unknown field \"mask\""}),
    bad_input_name);

}  // namespace
}  // namespace stripesim::testing
