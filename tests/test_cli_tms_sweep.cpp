#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

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

// --format csv: a row per layout, the request's fields then the JSON's entry for the layout, the
// same numbers as the JSON (written the way the JSON writes them).
TEST(CliTms, CsvHasARowPerLayoutWithTheJsonNumbers) {
  const std::string args = "tms --model 1b --hardware a100 --devices 8 --seq-len 196608 --layouts block-striped:64 --format ";
  const CliResult csv = run_cli(args + "csv");
  const CliResult json = run_cli(args + "json");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::ordered_json::parse(json.out);  // in the order written
  std::istringstream lines(csv.out);
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header,
            "model,hardware,convention,pass,recompute,devices,model_parallel,seq_len,tile,tiling,mask,"
            "attention_flop_weight,layout,tms,tms_tiles,lockstep_pairs,lockstep_tiles,attention_per_device,"
            "attention_per_device_tiles,time_flop_equivalents,time_flop_equivalents_tiles,imbalance,tiles_imbalance,"
            "lockstep_speedup,tiles_lockstep_speedup");
  std::vector<std::string> rows;
  while (std::getline(lines, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 4u);
  const std::string request = "1b,a100-80gb,paper,fwdbwd,false,8,1,196608,2048x4096,fixed,causal,2.0,";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& layout = doc.at("layouts")[i];
    std::string expected = request;
    const char* separator = "";
    for (const auto& [key, value] : layout.items()) {
      expected += separator;  // appended apart: g++ 12 sees a false -Wrestrict in "..." + std::string&&
      expected += value.is_string() ? value.get<std::string>() : value.dump();
      separator = ",";
    }
    EXPECT_EQ(rows[i], expected);
  }
  // The paper's N = 8, n = 196608 row: striped's TMS 1.83.
  EXPECT_EQ(rows[1].substr(request.size(), rows[1].find(',', request.size() + 8) - request.size()),
            "striped," + doc.at("tms").dump());
  EXPECT_NEAR(doc.at("tms").get<double>(), 1.83, 0.005);
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

// The table marks varlen tiles only where the tiling changes them: a documents mask, not causal.
TEST(CliTms, TableMarksVarlenTilesUnderADocumentsMaskOnly) {
  const std::string tms = "tms --seq-len 64k --devices 4 --tile 128x128 --tiling varlen";
  const CliResult documents = run_cli(tms + " --mask documents:lognormal:4096:1.0");
  ASSERT_EQ(documents.exit_code, 0) << documents.err;
  EXPECT_NE(documents.out.find("tiles 128x128 (varlen), attention FLOP weight"), std::string::npos) << documents.out;
  const CliResult causal = run_cli(tms);
  ASSERT_EQ(causal.exit_code, 0) << causal.err;
  EXPECT_NE(causal.out.find("tiles 128x128, attention FLOP weight"), std::string::npos) << causal.out;
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

// tms and sweep count tiles as analyze does under the tiling they are given (default fixed):
// the same lockstep tiles and tile imbalance for the same layouts, mask and tile.
TEST(CliTmsSweep, TilingReachesTheirTileCounts) {
  const std::string mask = "documents:lognormal:2048:1.0:seed=3";
  auto analyze = [&](const char* tiling) {
    const CliResult r = run_cli("analyze -n 64k -N 4 --tile 128x128 --mask " + mask + " --tiling " + tiling + " --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out).at("results");
  };
  const auto fixed = analyze("fixed");
  const auto varlen = analyze("varlen");
  const std::string tms = "tms --hardware h100 -n 64k -N 4 --mask " + mask + " --format json";
  const CliResult plain = run_cli(tms);
  const CliResult named = run_cli(tms + " --tiling varlen");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(run_cli(tms + " --tiling fixed").out, plain.out) << "fixed is the default";
  const auto tms_fixed = nlohmann::json::parse(plain.out);
  const auto tms_varlen = nlohmann::json::parse(named.out);
  EXPECT_EQ(tms_fixed.at("config").at("tiling"), "fixed");
  EXPECT_EQ(tms_varlen.at("config").at("tiling"), "varlen");
  EXPECT_EQ(tms_varlen.at("tms"), tms_fixed.at("tms")) << "pairs do not depend on the tiling";
  EXPECT_NE(tms_varlen.at("tms_tiles"), tms_fixed.at("tms_tiles"));
  for (size_t i = 0; i < 3; ++i) {  // contiguous, striped, zigzag in both
    EXPECT_EQ(tms_fixed.at("layouts")[i].at("lockstep_tiles"), fixed[i].at("metrics").at("tiles").at("lockstep"));
    EXPECT_EQ(tms_varlen.at("layouts")[i].at("lockstep_tiles"), varlen[i].at("metrics").at("tiles").at("lockstep"));
  }
  const std::string balance = "sweep --kind balance --seq-lens 64k --devices 4 --masks " + mask +
                              " --layouts contiguous,striped,zigzag --format json";
  const CliResult balance_plain = run_cli(balance);
  const CliResult balance_varlen = run_cli(balance + " --tiling varlen");
  ASSERT_EQ(balance_varlen.exit_code, 0) << balance_varlen.err;
  const auto rows_fixed = nlohmann::json::parse(balance_plain.out);
  const auto rows_varlen = nlohmann::json::parse(balance_varlen.out);
  EXPECT_EQ(rows_fixed.at("tiling"), "fixed");
  EXPECT_EQ(rows_varlen.at("tiling"), "varlen");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(rows_fixed.at("rows")[i].at("tiles_imbalance"), fixed[i].at("metrics").at("tiles").at("imbalance"));
    EXPECT_EQ(rows_varlen.at("rows")[i].at("tiles_imbalance"), varlen[i].at("metrics").at("tiles").at("imbalance"));
  }
  // The CSV has no tiling column: it stays what it was.
  EXPECT_EQ(run_cli(balance.substr(0, balance.find(" --format")) + " --tiling varlen").out.find("tiling"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(run_cli("sweep --devices 2 --seq-lens 16k --format json").out).at("tiling"), "fixed");
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
        BadInput{"unknown_model", "tms --model 13b", "--model '13b': unknown, expected one of 1b, 3b, 7b"},
        BadInput{"misspelt_hardware", "tms --hardware h10", "--hardware 'h10': unknown (did you mean 'h100'?)"},
        BadInput{"unknown_hardware", "tms --hardware gaudi3", "--hardware 'gaudi3': unknown"},
        BadInput{"model_file_missing", "tms --model /nonexistent/m.json", "does not exist"},
        BadInput{"model_file_invalid", "tms --model " + data("invalid_model.json"), "field \"kv_heads\" = 5: must divide the 16 heads"},
        // An empty name printed "hardware ,"; an alias twice was read as one.
        BadInput{"hardware_file_empty_name", "tms --hardware " + data("hardware_empty_name.json"), "field \"name\": must not be empty"},
        BadInput{"hardware_file_alias_twice", "tms --hardware " + data("hardware_alias_twice.json"),
                 "field \"aliases[1]\": given twice in the list (as aliases[0])"},
        // An empty device name is part of every driver's name: any GPU would have matched it.
        BadInput{"hardware_file_empty_device_name", "tms --hardware " + data("hardware_empty_device_name.json"),
                 "field \"device_names[1]\": expected a name, got \"\""},
        // The flags' bounds hold for a model file too (it ran, with 32 GB hops).
        BadInput{"model_file_head_dim", "tms --model " + data("model_head_dim_too_large.json"),
                 "field \"head_dim\": must be between 1 and 1024, got 4096"},
        BadInput{"model_file_d_model", "tms --model " + data("model_d_model_too_large.json"),
                 "field \"d_model\": d_model 262144 over 16 heads is a head size of 16384, above the 1024 stripesim prices"},
        // A vocabulary of 2^62 overflowed a device's parameter bytes (exit 0, a negative all-reduce).
        BadInput{"model_file_vocab", "simulate --scope step --model " + data("model_vocab_too_large.json"),
                 "field \"vocab\": must be between 1 and 16777216, got 4611686018427387904"},
        BadInput{"model_parallel_heads", "tms --model-parallel 3", "--model-parallel 3: must divide the 16 heads"},
        // A group's permutation file that cannot be read is named at its item, as a flag's is.
        BadInput{"balance_sweep_missing_permutation", "sweep --experiment " + data("balance_sweep_missing_permutation.json"),
                 "balance_sweep_missing_permutation.json field \"groups[0].layouts[1]\" = permutation:" STRIPESIM_SOURCE_DIR
                 "/tests/data/no_such_permutation.json: file '" STRIPESIM_SOURCE_DIR "/tests/data/no_such_permutation.json' does not exist"},
        // So is one whose header field is malformed ("permutation:FILE field ..." before).
        BadInput{"balance_sweep_permutation_bad_header", "sweep --experiment " + data("balance_sweep_permutation_bad_header.json"),
                 "balance_sweep_permutation_bad_header.json field \"groups[0].layouts[1]\" = permutation:" STRIPESIM_SOURCE_DIR
                 "/tests/data/permutation_tile_not_an_object.json: field \"tile\": expected an object"},
        // plan reads a permutation file's device count first: the same error.
        BadInput{"plan_missing_permutation", "plan --model 1b -n 16 --gpus 2 --layouts permutation:/nonexistent/p.json",
                 "--layouts permutation:/nonexistent/p.json: file '/nonexistent/p.json' does not exist"},
        // A sweep's --meshes gives both degrees: its errors name it, not the flags refused beside it.
        BadInput{"sweep_mesh_model_parallel", "sweep --meshes 3x2 --seq-lens 64k", "--meshes (M of MxN) 3: must divide the 16 heads"},
        BadInput{"sweep_mesh_devices", "sweep --meshes 2x5000 --seq-lens 64k", "--meshes (N of MxN) 5000: must be between 1 and 4096"},
        // K/V heads split (or replicated) as the simulator splits them: 7 of 4 K/V heads is neither.
        BadInput{"model_parallel_kv_heads", "tms --model qwen2.5-7b --model-parallel 7",
                 "--model-parallel 7: must divide the 4 K/V heads (or be a multiple of it)"},
        BadInput{"tms_zigzag_divisibility", "tms --devices 8 --seq-len 1000", "layout zigzag needs it divisible by 2N = 16"},
        BadInput{"tms_bad_convention", "tms --convention rough", "--convention"},
        BadInput{"tms_recompute_without_backward", "tms --recompute --pass fwd", "--recompute: only with pass fwdbwd (it is the backward that recomputes the forward)"},
        BadInput{"tms_bad_weight", "tms --attention-weight -1", "--attention-weight '-1': must be a positive number"},
        BadInput{"tms_weight_not_number", "tms --attention-weight two", "--attention-weight 'two': expected a number"},
        BadInput{"sweep_bad_mesh", "sweep --meshes 2x", "--meshes '2x': expected MxN"},
        BadInput{"sweep_default_tile_twice", "sweep --devices 8 --seq-lens 256k --tiles default,2048x4096",
                 "--tiles '2048x4096': is 2048x4096 on hardware a100-80gb, as 'default' is: one tile listed twice"},
        BadInput{"sweep_unknown_column", "sweep --columns tms,speed", "--columns 'speed': unknown column"},
        // Named alike but for '-' and '_', two layouts would write one set of columns.
        BadInput{"sweep_layout_columns_collide", "sweep --devices 2 --seq-lens 16 --layouts permutation:a-b.json,permutation:a_b.json",
                 "--layouts 'permutation:a_b.json': its columns (tms_permutation_a_b_json, ...) would be those of 'permutation:a-b.json'"},
        // A "kind" of another type was read as a string and escaped as an internal error (exit 1).
        BadInput{"sweep_kind_not_a_string", "sweep --experiment " + data("sweep_kind_not_a_string.json"),
                 "sweep_kind_not_a_string.json field \"kind\": expected a string, got true"},
        BadInput{"sweep_experiment_missing", "sweep --experiment /nonexistent/e.json", "does not exist"},
        // A file that is no JSON object ran the flags' default grid.
        BadInput{"sweep_experiment_not_an_object", "sweep --experiment " + data("sweep_experiment_not_an_object.json"),
                 "sweep_experiment_not_an_object.json: expected a JSON object"},
        // An empty measured path ran the sweep without its measured column.
        BadInput{"step_sweep_measured_empty", "sweep --experiment " + data("step_sweep_measured_empty.json"),
                 "step_sweep_measured_empty.json field \"measured\": must not be empty"},
        // A file's columns are named at its field, not as a flag the command was not given.
        BadInput{"sweep_experiment_unknown_column", "sweep --experiment " + data("sweep_unknown_column.json"),
                 "sweep_unknown_column.json field \"columns\" 'tms_of_light': unknown column"},
        BadInput{"sweep_misspelt_step", "sweep --experiment " + data("sweep_misspelt_step.json"),
                 "unknown field \"steps\" (did you mean 'step'?) (known: kind, description, convention, pass, recompute, tiling, "
                 "layouts, columns, groups, step, measured)"},
        BadInput{"sweep_measured_without_step", "sweep --experiment " + data("sweep_measured_without_step.json"),
                 "field \"measured\": only in a step sweep, beside a \"step\" object"},
        BadInput{"sweep_seq_len_twice", "sweep --experiment " + data("sweep_seq_len_twice.json"),
                 "group 0 field \"seq_lens[1]\": given twice in the list (as seq_lens[0])"},
        BadInput{"sweep_experiment_malformed", "sweep --experiment " + data("malformed_config.json"), "is not valid JSON"},
        // One point in two groups printed its rows twice; a per-document layout with no documents
        // mask was left out of every row.
        BadInput{"sweep_point_in_two_groups", "sweep --experiment " + data("sweep_point_in_two_groups.json"),
                 "groups[0] and groups[1] both hold hardware a100-80gb, model 1b, mesh 1x8, n = 65536, tile 2048x4096: its row would "
                 "print twice"},
        BadInput{"balance_point_in_two_groups", "sweep --experiment " + data("balance_point_in_two_groups.json"),
                 "groups[0] and groups[1] both hold n = 1024, N = 4, mask causal, tile 128x128, layout zigzag: its row would print twice"},
        // ... however its mask and layout are spelled (compared as strings, both rows printed).
        BadInput{"balance_point_in_two_groups_spelled_apart", "sweep --experiment " + data("balance_point_in_two_groups_spelled_apart.json"),
                 "groups[0] and groups[1] both hold n = 4096, N = 4, mask window:0256, tile 128x128, layout ptrr:1024: its row would print twice"},
        BadInput{"balance_doc_layout_without_documents", "sweep --kind balance --seq-lens 1k --devices 4 --masks causal --layouts doc-zigzag,contiguous",
                 "--layouts 'doc-zigzag': is a per-document layout, and no mask of the sweep is a documents mask (it would be left out "
                 "of every row)"},
        BadInput{"sweep_experiment_unknown_field", "sweep --experiment " + data("unknown_field_config.json"),
                 "unknown field \"devices\""},
        BadInput{"sweep_bad_seq_len", "sweep --seq-lens 16k,abc", "--seq-lens 'abc'"},
        // The experiment is the whole grid: a grid flag beside it would be ignored.
        BadInput{"sweep_grid_flag_beside_experiment",
                 std::string("sweep --experiment '") + STRIPESIM_SOURCE_DIR + "/configs/experiments/windows.json' --masks causal",
                 "--masks: not with --experiment (the experiment file is the whole grid; only --tiling, --threads, --format and "
                 "--output apply to it)"},
        BadInput{"analyze_matrices_in_json", "analyze --matrices --format json",
                 "--matrices: only with --format table or csv (the JSON always holds the matrices)"},
        BadInput{"sweep_tms_flag_in_balance", "sweep --kind balance --pass fwd", "--pass: only with --kind tms (this sweep is --kind balance)"},
        BadInput{"sweep_balance_flag_in_tms", "sweep --pad-documents", "--pad-documents: only with --kind balance"},
        BadInput{"sweep_grid_switch_beside_experiment", "sweep --experiment /nonexistent/e.json --recompute",
                 "--recompute: not with --experiment"},
        BadInput{"balance_bad_kind", "sweep --kind imbalance", "--kind: imbalance not in {tms,balance}"},
        // The grid's flags name what they gave, the experiment's points the field.
        BadInput{"balance_bad_mask", "sweep --kind balance --masks diagonal", "--masks 'diagonal': unknown mask"},
        BadInput{"balance_seq_len_not_divisible", "sweep --kind balance --seq-lens 1001 --devices 4",
                 "--seq-lens 1001: layout contiguous needs it divisible by N = 4"},
        BadInput{"sweep_point_not_divisible", "sweep --experiment " + data("sweep_point_not_divisible.json"),
                 "sweep_point_not_divisible.json field \"groups[0].seq_lens[1]\" = 1001: layout contiguous needs it divisible by "
                 "N = 4"},
        // An experiment's settings are named at their field, not as flags never given.
        BadInput{"sweep_recompute_forward", "sweep --experiment " + data("sweep_recompute_forward.json"),
                 "sweep_recompute_forward.json field \"recompute\": only with pass fwdbwd (it is the backward that "
                 "recomputes the forward)"},
        BadInput{"sweep_unknown_pass", "sweep --experiment " + data("sweep_unknown_pass.json"),
                 "sweep_unknown_pass.json field \"pass\" = 'bwd': expected fwd or fwdbwd"},
        BadInput{"balance_point_bad_mask", "sweep --experiment " + data("balance_point_bad_mask.json"),
                 "balance_point_bad_mask.json field \"groups[0].masks[1]\" = window:0: the window must be at least 1 token"},
        BadInput{"balance_missing_documents", "sweep --experiment " + data("balance_missing_documents.json"),
                 "balance_missing_documents.json field \"groups[0].masks[1]\" = documents:" STRIPESIM_SOURCE_DIR
                 "/tests/data/no_such_lengths.txt: file '" STRIPESIM_SOURCE_DIR "/tests/data/no_such_lengths.txt' does not exist"},
        // pad_documents pads documents: a group with none is refused as the flag is, and beside V+P
        // lengths it is named at its field.
        BadInput{"balance_pad_without_documents", "sweep --experiment " + data("balance_pad_without_documents.json"),
                 "balance_pad_without_documents.json group 0 field \"pad_documents\": needs a documents mask among \"masks\""},
        BadInput{"balance_pad_with_given_padding", "sweep --experiment " + data("balance_pad_with_given_padding.json"),
                 "balance_pad_with_given_padding.json field \"groups[0].pad_documents\": the documents mask already gives its "
                 "padding (V+P lengths)"},
        BadInput{"balance_experiment_fields", "sweep --experiment " + data("bad_balance_experiment.json"),
                 "unknown field \"mask\""},
        BadInput{"tms_unknown_tiling", "tms --tiling diagonal", "--tiling 'diagonal': unknown tiling, expected fixed or varlen"},
        BadInput{"sweep_unknown_tiling", "sweep --kind balance --tiling diagonal",
                 "--tiling 'diagonal': unknown tiling, expected fixed or varlen"},
        // A step sweep simulates its kernel (blockwise, fixed tiling): varlen would price other tiles.
        BadInput{"step_sweep_tiling_not_the_kernels",
                 std::string("sweep --experiment '") + STRIPESIM_SOURCE_DIR + "/configs/experiments/paper-measured.json' --tiling varlen",
                 "--tiling varlen: kernel blockwise (a100-80gb) uses fixed tiling"}),
    bad_input_name);

}  // namespace
}  // namespace stripesim::testing
