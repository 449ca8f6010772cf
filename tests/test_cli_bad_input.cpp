// Every bad input gets one line on stderr naming the input and the constraint, exit code 2,
// nothing on stdout and no output file. Each row here is also a row of the README's table.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bad_input_table.hpp"
#include "temp_path.hpp"

namespace stripesim::testing {
namespace {

std::vector<BadInput> bad_inputs() {
  return {
      {"zero_devices", "--devices 0", "--devices 0: must be between 1 and 2048"},
      {"too_many_devices", "--devices 65536 --seq-len 1G", "--devices 65536: must be between 1 and 2048 (analyze keeps N x N matrices per layout)"},
      {"zero_tile", "--tile 0x128", "both tile sides must be at least 1"},
      {"tiles_beyond_memory", "-n 256M -N 8 --tile 1x1",
       "--tile 1x1: 268435456 tokens make 268435456 tiles of 1 a side, more than the 67108864 (2^26, about 8 GB of counts) stripesim holds"},
      {"half_tile", "--tile 12x", "--tile '12x': expected TQxTK"},
      {"tile_not_a_number", "--tile axb", "--tile query size 'a'"},
      {"unknown_tiling", "--tiling diagonal", "--tiling 'diagonal': unknown tiling, expected fixed or varlen"},
      {"config_unknown_tiling", "--config " + data("bad_tiling_config.json"),
       "bad_tiling_config.json field \"tiling\" 'diagonal': unknown tiling, expected fixed or varlen"},
      {"experiment_and_config", "--experiment a.json --config b.json",
       "--experiment a.json, --config b.json: the same file by two names; give one"},
      {"experiment_unknown_tiling", "--experiment " + data("bad_tiling_config.json"),
       "bad_tiling_config.json field \"tiling\" 'diagonal': unknown tiling, expected fixed or varlen"},
      {"experiment_bad_tile", "--experiment " + data("analyze_bad_tile_config.json"),
       "analyze_bad_tile_config.json field \"tile\" = '12x': expected TQxTK, e.g. 2048x4096"},
      {"unknown_layout", "--layouts contiguous,diagonal", "--layouts 'diagonal': unknown layout"},
      {"misspelt_layout", "--layouts contiguous,zigzg", "--layouts 'zigzg': unknown layout (did you mean 'zigzag'?)"},
      {"misspelt_flag", "--device 8", "--device: unknown option of analyze (did you mean '--devices'?)"},
      {"empty_layout_item", "--layouts contiguous,,zigzag", "empty item"},
      {"unknown_mask", "--mask sliding:4", "--mask 'sliding:4': unknown mask"},
      {"zero_window", "--mask window:0", "the window must be at least 1 token"},
      {"negative_window", "--mask window:-5", "the window must be at least 1 token"},
      {"prefix_past_the_sequence", "--seq-len 4k --mask prefix:5k", "--mask prefix:5120: the prefix must hold 1 to n = 4096 tokens"},
      {"zero_prefix", "--mask prefix:0", "the prefix must hold 1 to n = "},
      {"documents_do_not_sum", "--mask documents:100k,100k", "they must add up to the sequence length n = 262144"},
      {"documents_overflow_n", "--mask documents:200k,200k", "add up to more than the sequence length n = 262144"},
      {"zero_length_document", "--seq-len 1k --mask documents:0,1k", "every length must be at least 1"},
      {"zero_document_window", "--seq-len 1k --mask documents:512,512:window=0",
       "the window of documents:...:window=W must be at least 1 token"},
      {"window_without_documents", "--seq-len 1k --mask documents:window=64", "documents needs its lengths before :window=W"},
      {"window_twice", "--seq-len 1k --mask documents:512,512:window=64:window=32", "documents takes one :window=W"},
      {"all_padding_document", "--seq-len 1k --mask documents:0+512,512", "padding must leave at least 1 token"},
      // V and P each fit 64 bits; their sum does not (it wrapped negative).
      {"document_length_wraps", "--seq-len 64 --mask documents:9223372036854775807+1",
       "--mask documents length '9223372036854775807+1': V+P above 2^63 - 1, the largest count stripesim takes"},
      {"padding_given_twice", "--seq-len 1k --devices 4 --mask documents:500+12,512 --pad-documents",
       "already gives its padding (V+P lengths)"},
      // The whole spec is named (a file's path included), not "documents" alone.
      {"documents_file_short", "--seq-len 4k --mask documents:" + data("short_documents.txt"),
       "--mask documents:" STRIPESIM_SOURCE_DIR "/tests/data/short_documents.txt: the lengths add up to 3000"},
      {"documents_list_short", "--mask documents:100k,100k", "--mask documents:100k,100k: the lengths add up to 204800"},
      // A lone '+' is quoted whole, not by its empty part.
      {"document_length_bare_plus", "--seq-len 1k --mask documents:+512,512",
       "--mask documents length '+512': expected V or V+P (V tokens, then P padding tokens)"},
      {"document_length_trailing_plus", "--seq-len 1k --mask documents:512+,512",
       "--mask documents length '512+': expected V or V+P (V tokens, then P padding tokens)"},
      {"documents_file_missing", "--mask documents:/nonexistent/docs.txt", "does not exist"},
      {"seq_len_beyond_counts", "--seq-len 4G", "must be between 1 and 2^31"},
      // Refused before the deal or the document list it would size is allocated (both ran out of memory).
      {"seq_len_beyond_counts_ptrr", "--seq-len 4G --layouts ptrr", "--seq-len 4294967296: must be between 1 and 2^31"},
      {"seq_len_beyond_counts_documents", "--seq-len 4G --mask documents:fixed:1", "--seq-len 4294967296: must be between 1 and 2^31"},
      {"seq_len_beyond_64_bits", "--seq-len 99999999999999999999", "above 2^63 - 1, the largest count stripesim takes"},
      {"seq_len_not_a_number", "--seq-len abc", "--seq-len 'abc'"},
      {"seq_len_zero", "--seq-len 0", "must be between 1 and 2^31"},
      // The lengths offered are ones every listed layout takes (zigzag's 2N, not contiguous's N: 999
      // was offered, and zigzag refused it next).
      {"not_divisible_by_devices", "--seq-len 1000 --devices 3",
       "--seq-len 1000: layout contiguous needs it divisible by N = 3; the nearest lengths every listed layout takes are 996 and "
       "1002 (pad 2 tokens to reach 1002)"},
      {"one_layout_alone", "--seq-len 1000 --devices 3 --layouts contiguous",
       "--seq-len 1000: layout contiguous needs it divisible by N = 3; the nearest such lengths are 999 and 1002"},
      // A layout that takes the length but not the first's multiples adds its own (block-striped:3 takes 20 tokens
      // on 2 devices, zigzag's 4 does not divide 18; 12 and 24 both take them).
      {"every_layouts_multiple", "--seq-len 20 --devices 2 --layouts zigzag,block-striped:3",
       "--seq-len 20: layout block-striped:3 needs it divisible by s*N = 6; the nearest lengths every listed layout takes are 12 "
       "and 24 (pad 4 tokens to reach 24)"},
      // A permutation file holds one length: no other is offered for the list.
      {"with_a_permutation_file", "--seq-len 20 --devices 3 --layouts zigzag,permutation:" + data("perm_4.json"),
       "--seq-len 20: layout zigzag needs it divisible by 2N = 6; the nearest such lengths are 18 and 24"},
      {"zigzag_needs_2N", "--seq-len 20 --devices 4 --layouts zigzag",
       "layout zigzag needs it divisible by 2N = 8; the nearest such lengths are 16 and 24 (pad 4 tokens to reach 24)"},
      {"block_striped_needs_sN", "--seq-len 96 --devices 4 --layouts block-striped:5",
       "divisible by s*N = 20; the nearest such lengths are 80 and 100 (pad 4 tokens to reach 100)"},
      {"balanced_needs_N", "--seq-len 1001 --devices 4 --layouts balanced",
       "--seq-len 1001: layout balanced needs it divisible by N = 4; the nearest such lengths are 1000 and 1004 (pad 3 "
       "tokens to reach 1004)"},
      {"block_striped_zero", "--layouts block-striped:0", "the stripe width must be at least 1"},
      {"permutation_missing", "--layouts permutation:/nonexistent/perm.json", "does not exist"},
      {"permutation_malformed", "--seq-len 4 --devices 2 --layouts permutation:" + data("malformed_permutation.json"),
       "is not valid JSON"},
      {"permutation_not_bijection", "--seq-len 8 --devices 2 --layouts permutation:" + data("duplicate_permutation.json"),
       "position 3 appears twice"},
      {"permutation_wrong_devices", "--seq-len 8 --devices 4 --layouts permutation:" + data("duplicate_permutation.json"),
       "holds 2 device blocks but the ring has N = 4"},
      // The header of an exported layout is checked for the form its schema gives, mask and padding too.
      {"permutation_bad_mask_kind", "--seq-len 16 --devices 2 --layouts permutation:" + data("permutation_bad_mask_kind.json"),
       "field \"mask\" field \"kind\": 'triangle' is no mask kind (causal, bidirectional, window, prefix or documents)"},
      {"permutation_bad_padding", "--seq-len 16 --devices 2 --layouts permutation:" + data("permutation_bad_padding.json"),
       "field \"padding\" field \"document_lengths[1]\": expected an integer of at least 1, got \"6\""},
      {"permutation_huge_position", "--seq-len 16 --devices 2 --layouts permutation:" + data("permutation_huge_position.json"),
       "(device 0, local 7) holds 9.999999999999999e+22, more than 2^63 - 1: expected an integer position in [0, 16)"},
      {"permutation_fractional_position", "--seq-len 16 --devices 2 --layouts permutation:" + data("permutation_fractional_position.json"),
       "(device 1, local 0) holds 4.5, expected an integer position in [0, 16)"},
      {"unknown_format", "--format xml", "--format: xml not in {table,json,csv}"},
      {"output_dir_missing", "--output /nonexistent/dir/out.json", "directory '/nonexistent/dir' does not exist"},
      {"unknown_flag", "--frobnicate", "--frobnicate: unknown option of analyze"},
      {"config_missing", "--config /nonexistent/config.json", "does not exist"},
      {"config_malformed", "--config " + data("malformed_config.json"), "is not valid JSON"},
      // The parser stopped at the NUL and took the document before it (exit 0).
      {"config_nul_then_garbage", "--config " + data("nul_then_garbage.json"), "is not valid JSON (a NUL byte at byte 44)"},
      {"experiment_layout_twice", "--experiment " + data("layout_twice_config.json"), "field \"layouts[1]\": given twice in the list (as layouts[0])"},
      {"experiment_key_twice", "--experiment " + data("duplicate_key_config.json"), "duplicate_key_config.json': key \"seq_len\" is given twice in one object"},
      {"experiment_number_overflow", "--experiment " + data("number_overflow_config.json"),
       "number_overflow_config.json': number overflow parsing '1e400', beyond what a double holds"},
      {"config_unknown_field", "--config " + data("unknown_field_config.json"), "unknown field \"tiles\""},
      {"threads_negative", "--threads -1", "--threads '-1': expected a whole number from 0 (one per core) to 1024"},
      {"threads_hex", "--threads 0x10", "--threads '0x10': expected a whole number from 0 (one per core) to 1024"},
      {"threads_not_a_number", "--threads abc", "--threads 'abc': expected a whole number from 0 (one per core) to 1024"},
      {"doc_zigzag_without_documents", "--layouts doc-zigzag", "--layouts doc-zigzag: needs a documents mask"},
      {"seed_on_one_length", "--seq-len 1k --mask documents:uniform:7-7:seed=5",
       "a range of one length draws nothing at random: a seed changes nothing"},
      {"seed_without_spread", "--seq-len 1k --mask documents:lognormal:100:0:seed=5", "SIGMA 0 draws nothing at random"},
      {"doc_zigzag_indivisible", "--seq-len 1000 --devices 4 --mask documents:300,700 --layouts doc-zigzag",
       "document 0 has length 300, not divisible by 2N = 8 (pad every document: --pad-documents where the command takes it, "
       "or lengths V+P in the mask, here 300+4; validate, which runs no padding, takes neither: give lengths that divide)"},
      {"pad_without_documents", "--pad-documents", "--pad-documents: needs a documents mask"},
      // Given by a file, the padding is named by the file's field, not by a flag the user never gave.
      {"experiment_pad_without_documents", "--experiment " + data("pad_documents_without_documents.json"),
       "pad_documents_without_documents.json field \"pad_documents\": needs a documents mask"},
      {"unknown_distribution", "--mask documents:gamma:3:4", "--mask documents:gamma:3:4: file 'gamma:3:4' does not exist"},
      {"bad_lognormal", "--mask documents:lognormal:512", "documents:lognormal:512: expected lognormal:MEAN:SIGMA"},
      {"bad_uniform", "--mask documents:uniform:900-100", "needs 1 <= A <= B"},
      {"layout_without_its_argument", "--layouts block-striped", "--layouts 'block-striped': expected block-striped:S (with its argument)"},
      {"bad_balanced_chunk", "--layouts balanced:0", "--layouts 'balanced:0': the chunk must be at least 1 token"},
      // One size written two ways would print its rows twice.
      {"layout_size_twice", "-n 64k -N 4 --layouts block-striped:1k,block-striped:1024",
       "--layouts 'block-striped:1024': given twice in the list"},
      {"balanced_chunk_beyond_share", "-n 64k -N 4 --layouts balanced:1G",
       "--layouts balanced:1073741824: the chunk must be at most a device's share, n / N = 16384 tokens"},
  };
}

class CliBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadInput, OneLineExitTwoNoOutput) {
  const BadInput& input = GetParam();
  const auto output = temp_path(std::string("stripesim_bad_") + input.name + ".json");
  std::filesystem::remove(output);
  const bool writes_elsewhere = input.args.find("--output") != std::string::npos;
  const std::string args =
      "analyze " + input.args + (writes_elsewhere ? "" : " --format json --output '" + output.string() + "'");
  const CliResult r = run_cli(args);
  expect_rejected(r, input);
  EXPECT_FALSE(std::filesystem::exists(output)) << "no partial output file";
}

INSTANTIATE_TEST_SUITE_P(Table, CliBadInput, ::testing::ValuesIn(bad_inputs()),
                         bad_input_name);

// The same in every command that takes a list of layouts (analyze's are among the cases above);
// ptrr and ptrr:64, which agree only where the query tile is 64, are two layouts.
TEST(CliBadInput, OneLayoutSizeWrittenTwoWaysIsRefusedByEveryCommand) {
  for (const std::string& command :
       {std::string("simulate -n 64k -N 4 --hardware h100"), std::string("tms --model 1b --hardware a100 -N 4 -n 64k"),
        std::string("plan --model 1b -n 64k --gpus 4 --algorithms ring"),
        std::string("sweep --kind balance --seq-lens 64k --devices 4 --tiles 128x128")}) {
    const CliResult r = run_cli(command + " --layouts ptrr:1k,PTRR:1024");
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.err, "stripesim: error: --layouts 'PTRR:1024': given twice in the list\n") << command;
    EXPECT_EQ(r.out, "") << command;
  }
  const CliResult two = run_cli("sweep --kind balance --seq-lens 512,64k --devices 8 --tiles 64x64,128x128 --layouts ptrr,ptrr:64 --format csv");
  EXPECT_EQ(two.exit_code, 0) << two.err;
  // A command of one point, whose tile makes them one: two rows of one name. Where a device's
  // share is shorter than the tile, that is ptrr's default block: 256 / 4 = 64 (a hybrid's share
  // is its ring's, 256 / 4 again; padded documents count after the padding).
  struct OnePoint {
    std::string command, block, at, apart;
  };
  for (const OnePoint& point :
       {OnePoint{"analyze -n 64k -N 4 --tile 64x64", "64", "64x64 tile and 16384", "128"},
        OnePoint{"simulate -n 64k -N 4 --hardware h100 --tile 64x64", "64", "64x64 tile and 16384", "128"},
        OnePoint{"analyze -n 256 -N 4 --tile 128x128", "64", "128x128 tile and 64", "32"},
        OnePoint{"simulate -n 256 -N 4 --hardware h100", "64", "128x128 tile and 64", "32"},
        OnePoint{"simulate -n 256 -N 8 --cp hybrid:2x4 --hardware h100", "64", "128x128 tile and 64", "32"}}) {
    const CliResult one = run_cli(point.command + " --layouts ptrr:" + point.block + ",ptrr");
    EXPECT_EQ(one.exit_code, 2) << point.command;
    EXPECT_EQ(one.err, "stripesim: error: --layouts 'ptrr': is ptrr:" + point.block + " at the " + point.at +
                           " tokens a device, as 'ptrr:" + point.block + "' is (its row would print twice under one name)\n")
        << point.command;
    EXPECT_EQ(one.out, "") << point.command;
    EXPECT_EQ(run_cli(point.command + " --layouts ptrr:" + point.apart + ",ptrr").exit_code, 0) << point.command;
  }
  const CliResult padded = run_cli("analyze -n 256 -N 4 --pad-documents --mask documents:100,156 --tile 128x128 --layouts ptrr:66,ptrr");
  EXPECT_EQ(padded.exit_code, 2);
  EXPECT_NE(padded.err.find("is ptrr:66 at the 128x128 tile and 66 tokens a device"), std::string::npos) << padded.err;
}

TEST(CliBadInput, MisspeltCommandGetsTheNearestOne) {
  const CliResult r = run_cli("analyse");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'analyse': unknown command (did you mean 'analyze'?); the commands are analyze, tms"),
            std::string::npos)
      << r.err;
  // Nothing is offered when nothing is near.
  const CliResult far = run_cli("frobnicate");
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

TEST(CliNames, ModelHardwareAndLayoutNamesMatchCaseAside) {
  const CliResult exact = run_cli("tms --model llama3-8b --hardware h100 --format json");
  const CliResult shouted = run_cli("tms --model LLAMA3-8B --hardware H100 --format json");
  ASSERT_EQ(shouted.exit_code, 0) << shouted.err;
  EXPECT_EQ(shouted.out, exact.out);
  // The config echoes what was typed; the results are the same layouts'.
  const CliResult layouts = run_cli("analyze -n 16k -N 4 --layouts Contiguous,ZigZag --format json");
  ASSERT_EQ(layouts.exit_code, 0) << layouts.err;
  EXPECT_EQ(nlohmann::json::parse(layouts.out).at("results"),
            nlohmann::json::parse(run_cli("analyze -n 16k -N 4 --layouts contiguous,zigzag --format json").out).at("results"));
}

// A full disk is not success: output that could not be written exits 2 with one line, whether
// it went to a file (-o) or to standard output; and a path that is a device (/dev/null,
// /dev/full, a terminal) is written in place, never replaced by a regular file.
TEST(CliBadInput, OutputThatCannotBeWrittenIsAnError) {
  namespace fs = std::filesystem;
  if (!fs::is_character_file("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  const CliResult to_file = run_cli("analyze -n 1k -N 4 --format json -o /dev/full");
  EXPECT_EQ(to_file.exit_code, 2) << to_file.err;
  EXPECT_NE(to_file.err.find("--output '/dev/full': write failed"), std::string::npos) << to_file.err;
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
  const CliResult trace = run_cli("simulate -n 16k -N 4 --topology ideal --trace /dev/full");
  EXPECT_EQ(trace.exit_code, 2) << trace.err;
  EXPECT_NE(trace.err.find("--trace '/dev/full': write failed"), std::string::npos) << trace.err;
  EXPECT_TRUE(fs::is_character_file("/dev/full"));

  const fs::path err_path = temp_path("stripesim_full_err_");
  for (const std::string& args : {std::string("analyze -n 1k -N 4 --format json"),
                                  "check --baseline '" + std::string(STRIPESIM_SOURCE_DIR) + "/reports/baseline/imbalance.json'",
                                  std::string("--help"), std::string("--version"), std::string("analyze --help")}) {
    const std::string command = std::string("'") + STRIPESIM_BINARY + "' " + args + " >/dev/full 2>'" + err_path.string() + "'";
    const int status = std::system(command.c_str());
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << args;
    EXPECT_EQ(slurp(err_path), "stripesim: error: standard output: write failed (disk full or closed pipe?)\n") << args;
  }
  // A reader that stops early: the pipe closes under the writer (64 MB of layout, 10 bytes read).
  const std::string piped = "set -o pipefail; '" + std::string(STRIPESIM_BINARY) +
                            "' layout --layout zigzag -n 4M -N 2 --format csv 2>'" + err_path.string() + "' | head -c 10 >/dev/null";
  const int piped_status = std::system(("bash -c \"" + piped + "\"").c_str());
  EXPECT_EQ(WIFEXITED(piped_status) ? WEXITSTATUS(piped_status) : -1, 2) << "a closed pipe";
  EXPECT_EQ(slurp(err_path), "stripesim: error: standard output: write failed (disk full or closed pipe?)\n");
  fs::remove(err_path);

  const CliResult to_null = run_cli("analyze -n 1k -N 4 --format json -o /dev/null");
  EXPECT_EQ(to_null.exit_code, 0) << to_null.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// A command with several outputs writes all of them or none: when the last one fails (a full
// device as --output, or standard output), the files written before it are gone and so are the
// folders the command made for them.
TEST(CliBadInput, AFailedOutputTakesTheCommandsOtherFilesWithIt) {
  namespace fs = std::filesystem;
  if (!fs::is_character_file("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  const fs::path dir = fresh_temp_dir("stripesim_all_or_none_");
  const std::string d = dir.string();
  const std::string analyze_json = d + "/analyze.json";
  ASSERT_EQ(run_cli("analyze -n 4k -N 4 --tile 64x64 --format json -o '" + analyze_json + "'").exit_code, 0);
  const std::string experiment = std::string(STRIPESIM_SOURCE_DIR) + "/configs/experiments/";
  struct Case {
    std::string args, stdout_to, failed;  // stdout_to: "" keeps it, else where it goes
  };
  const std::vector<Case> cases = {
      {"simulate -n 32k -N 4 --trace '" + d + "/trace.json' -o /dev/full", "", "--output '/dev/full'"},
      {"simulate -n 32k -N 4 --trace '" + d + "/trace.json'", "/dev/full", "standard output"},
      {"calibrate-step --experiment '" + experiment + "paper-measured.json' --hardware-out '" + d + "/hw.json' --kernel-out /dev/full",
       "", "--kernel-out '/dev/full'"},
      {"validate -n 256 -N 2 --tile 32x32 --iterations 1 --warmup 0 --layouts zigzag --out-dir '" + d + "/new/validated' -o /dev/full",
       "", "--output '/dev/full'"},
      {"report '" + analyze_json + "' --out-dir '" + d + "/report'", "/dev/full", "standard output"},
      {"check --write-baseline '" + d + "/baseline.json' --experiment '" + experiment + "baseline.json'", "/dev/full",
       "standard output"},
      {"check --baseline '" + std::string(STRIPESIM_SOURCE_DIR) + "/reports/baseline/imbalance.json' --junit '" + d + "/junit.xml'",
       "/dev/full", "standard output"},
  };
  const std::string err_path = d + "/stderr";
  for (const Case& c : cases) {
    const std::string command = std::string("'") + STRIPESIM_BINARY + "' " + c.args + (c.stdout_to.empty() ? " >/dev/null" : " >" + c.stdout_to) +
                                " 2>'" + err_path + "'";
    const int status = std::system(command.c_str());
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << c.args;
    const std::string err = slurp(err_path);
    EXPECT_TRUE(err.starts_with("stripesim: error: " + c.failed)) << c.args << "\n" << err;
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name != "analyze.json" && name != "stderr") left.push_back(name);
    }
    EXPECT_TRUE(left.empty()) << c.args << ": left " << fmt::format("{}", fmt::join(left, ", "));
  }
  // The same commands with somewhere to write succeed and write every file.
  const CliResult report = run_cli("report '" + analyze_json + "' --out-dir '" + d + "/report'");
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(fs::exists(d + "/report/report.md"));
  EXPECT_NE(report.out.find("report written to"), std::string::npos);
  const CliResult traced = run_cli("simulate -n 32k -N 4 --trace '" + d + "/trace.json' -o '" + d + "/simulate.txt'");
  EXPECT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_TRUE(fs::exists(d + "/trace.json") && fs::exists(d + "/simulate.txt"));
  fs::remove_all(dir);
}

// An output onto a file the command reads would destroy that input (a baseline, an experiment,
// a model, a measurement file): refused with exit 2 and the file untouched. A fit's profile
// output may refit the profile it started from, as the shipped profiles' "fitted by" commands do.
TEST(CliBadInput, AnOutputNeverOverwritesAnInput) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("stripesim_output_onto_input_");
  const std::string d = dir.string(), source = STRIPESIM_SOURCE_DIR;
  for (const auto& [from, to] : {std::pair{"/reports/baseline/imbalance.json", "/b.json"}, {"/configs/experiments/baseline.json", "/e.json"},
                                 {"/configs/models/llama3-8b.json", "/m.json"}, {"/configs/kernels/h100/fa3.json", "/k.json"},
                                 {"/configs/measurements/h100/block-costs-fa3-magiattention.json", "/costs.json"}}) {
    fs::copy_file(source + from, d + to);
  }
  struct Case {
    std::string args, error;
  };
  const std::vector<Case> cases = {
      {"check --baseline '" + d + "/b.json' --junit '" + d + "/b.json'",
       "--junit '" + d + "/b.json': the command reads this file (--baseline " + d + "/b.json)"},
      {"check --write-baseline '" + d + "/e.json' --experiment '" + d + "/e.json'",
       "--write-baseline '" + d + "/e.json': the command reads this file (--experiment " + d + "/e.json)"},
      {"tms --model '" + d + "/m.json' -o '" + d + "/./m.json'",
       "--output '" + d + "/./m.json': the command reads this file (--model " + d + "/m.json)"},
      {"simulate --hardware h100 --kernel '" + d + "/k.json' -o '" + d + "/k.json'",
       "--output '" + d + "/k.json': the command reads this file (--kernel " + d + "/k.json)"},
      {"validate --calibrate --hardware h100 --kernel fa3 --block-costs '" + d + "/costs.json' --block-costs-kernel fa3 --kernel-out '" + d +
           "/costs.json'",
       "--kernel-out '" + d + "/costs.json': the command reads this file (--block-costs " + d + "/costs.json)"},
  };
  std::map<std::string, std::string> before;
  for (const auto& entry : fs::directory_iterator(dir)) before[entry.path().string()] = slurp(entry.path());
  for (const Case& c : cases) {
    const CliResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_EQ(r.err, "stripesim: error: " + c.error + "; give the output another path\n") << c.args;
    EXPECT_EQ(r.out, "") << c.args;  // nor a summary line before the refusal
  }
  for (const auto& [path, text] : before) EXPECT_EQ(slurp(path), text) << path << " was overwritten";
  // The refit in place: --kernel's file is the profile --kernel-out replaces.
  const CliResult refit = run_cli("validate --calibrate --hardware h100 --kernel '" + d + "/k.json' --block-costs '" + d +
                                  "/costs.json' --block-costs-kernel fa3 --kernel-out '" + d + "/k.json'");
  EXPECT_EQ(refit.exit_code, 0) << refit.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(d + "/k.json"))["name"], "fa3");
  fs::remove_all(dir);
}

// Two outputs on standard output would run together (a trace's JSON after the result's, JUnit XML
// before a table): refused with one line, nothing printed.
TEST(CliBadInput, TwoOutputsOnStandardOutputAreRefused) {
  const std::string source = STRIPESIM_SOURCE_DIR;
  for (const auto& [args, error] :
       {std::pair<std::string, std::string>{"simulate -n 32k -N 4 --format json --trace -",
                                            "--trace '-' and the command's output: both go to standard output, where they "
                                            "would run together; give --trace a file"},
        {"check --baseline '" + source + "/reports/baseline/imbalance.json' --junit -",
         "--junit '-' and the command's output: both go to standard output, where they would run together; give --junit a file"},
        {"calibrate-step --experiment '" + source + "/configs/experiments/paper-measured.json' --hardware-out - --kernel-out -",
         "--hardware-out '-' and --kernel-out '-': both go to standard output, where they would run together; give --kernel-out a "
         "file"}}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err, "stripesim: error: " + error + "\n") << args;
    EXPECT_EQ(r.out, "") << args;
  }
}

// Standard output by another name (/dev/stdout, /dev/fd/1: here the file the runner sends it to)
// is standard output: a trace there would run into the result as with "-".
TEST(CliBadInput, StandardOutputByAnotherNameIsStandardOutput) {
  for (const char* alias : {"/dev/stdout", "/dev/fd/1"}) {
    if (!std::filesystem::exists(alias)) continue;
    const CliResult r = run_cli(std::string("simulate -n 32k -N 4 --format json --trace ") + alias);
    EXPECT_EQ(r.exit_code, 2) << alias;
    EXPECT_EQ(r.err, fmt::format("stripesim: error: --trace '{}' and the command's output: both go to standard output, where "
                                 "they would run together; give --trace a file\n",
                                 alias));
    EXPECT_EQ(r.out, "") << alias;
  }
  // Not every file stdout could be: /dev/null takes the trace while the result goes to stdout.
  const CliResult to_null = run_cli("simulate -n 32k -N 4 --format json --trace /dev/null");
  EXPECT_EQ(to_null.exit_code, 0) << to_null.err;
}

// One file named two ways, a bare name and "./name", or through a link to a file not yet
// there: the second output would overwrite the first (or replace the link), refused before
// anything is written.
TEST(CliBadInput, OneOutputFileNamedTwoWaysIsRefused) {
  namespace fs = std::filesystem;
  const std::string bare = "stripesim_two_names_" + std::to_string(::getpid()) + ".json";  // in the working directory
  const CliResult r = run_cli("simulate -n 4k -N 4 --format json -o " + bare + " --trace ./" + bare);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "stripesim: error: --trace './" + bare + "', --output '" + bare + "': the same file; give each its own\n");
  EXPECT_FALSE(fs::exists(bare)) << "a partial output was left";
  fs::remove(bare);
  const fs::path dir = fresh_temp_dir("stripesim_dangling_link_");
  const fs::path target = dir / "x.json", link = dir / "link.json";
  fs::create_symlink(target, link);
  const CliResult linked = run_cli("simulate -n 4k -N 4 --format json -o '" + target.string() + "' --trace '" + link.string() + "'");
  EXPECT_EQ(linked.exit_code, 2);
  EXPECT_NE(linked.err.find("the same file; give each its own"), std::string::npos) << linked.err;
  EXPECT_FALSE(fs::exists(target));
  // Written alone through the dangling link: the link stays and the file it names is created.
  const CliResult through = run_cli("simulate -n 4k -N 4 --format csv -o '" + link.string() + "'");
  ASSERT_EQ(through.exit_code, 0) << through.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(slurp(target).starts_with("layout,")) << slurp(target);
  fs::remove_all(dir);
}

// JSON nested deeper than any input (every walk over it would recurse that deep: a crash at
// 20,000 levels) is refused as it is parsed; a wrong value is quoted in part, not whole.
TEST(CliBadInput, DeeplyNestedOrHugeJsonValuesGetOneShortLine) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("stripesim_deep_json_");
  const std::string deep = (dir / "deep.json").string(), wide = (dir / "wide.json").string();
  {
    std::ofstream out(deep);
    out << "{\"description\": " << std::string(20000, '[') << std::string(20000, ']') << "}";
  }
  {
    std::ofstream out(wide);
    out << "{\"name\": [";
    for (int i = 0; i < 50000; ++i) out << (i ? "," : "") << i;
    out << "]}";
  }
  for (const std::string flag : {"analyze --experiment", "tms --model", "simulate --hardware"}) {
    const CliResult r = run_cli(flag + " '" + deep + "'");
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_NE(r.err.find("arrays and objects nested more than 64 deep, deeper than any input"), std::string::npos) << flag << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << flag;
  }
  const CliResult r = run_cli("tms --model '" + wide + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.err.ends_with("field \"name\": expected a string, got [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,...\n"))
      << r.err.substr(0, 300);
  EXPECT_LT(r.err.size(), 300u);
  fs::remove_all(dir);
}

// With standard error closed the message cannot be printed, but the exit code still says bad
// input (it aborted before).
TEST(CliBadInput, ClosedStandardErrorStillExitsTwo) {
  const int status = std::system((std::string("'") + STRIPESIM_BINARY + "' analyze --seq-len abc >/dev/null 2>&-").c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

// A fit's profile output replaces only the profile it refits: read as a profile of its kind,
// under the same name. Not a kernel profile the command read (--hardware-out onto it), not the
// hardware profile (--kernel-out onto it), not a preset a catalog lookup read to pass it over.
TEST(CliBadInput, AProfileOutputReplacesOnlyTheProfileItRefits) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("stripesim_profile_out_");
  const std::string cfg = (dir / "configs").string();
  fs::copy(std::string(STRIPESIM_SOURCE_DIR) + "/configs", cfg, fs::copy_options::recursive);
  ASSERT_EQ(setenv("STRIPESIM_CONFIG_DIR", cfg.c_str(), 1), 0);
  const std::string experiment = cfg + "/experiments/paper-measured.json";
  const std::string measured = cfg + "/measurements/h100/flex/causal-fwd-n16384-N2.json";
  struct Case {
    std::string args, error;
  };
  const std::vector<Case> refused = {
      // The step's kernel profile, read to price the step, is not a hardware profile.
      {"calibrate-step --experiment '" + experiment + "' --hardware-out '" + cfg + "/kernels/a100/blockwise.json'",
       "--hardware-out '" + cfg + "/kernels/a100/blockwise.json': the command reads this file"},
      // The hardware profile the kernel was fitted for is not a kernel profile.
      {"validate --calibrate --hardware h100 --kernel flex --measurements '" + measured + "' --kernel-out '" + cfg +
           "/hardware/h100-sxm.json'",
       "--kernel-out '" + cfg + "/hardware/h100-sxm.json': the command reads this file"},
      // a100-80gb.json was read to find h800 (the files in order) and passed over.
      {"validate --calibrate --hardware h800 --kernel fa2 --measurements '" + measured + "' --kernel-out '" + cfg +
           "/hardware/a100-80gb.json'",
       "--kernel-out '" + cfg + "/hardware/a100-80gb.json': the command reads this file"},
  };
  std::map<std::string, std::string> before;
  for (const auto& entry : fs::recursive_directory_iterator(cfg)) {
    if (entry.is_regular_file()) before[entry.path().string()] = slurp(entry.path());
  }
  for (const Case& c : refused) {
    const CliResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_NE(r.err.find(c.error), std::string::npos) << c.args << "\n" << r.err;
  }
  for (const auto& [path, text] : before) EXPECT_EQ(slurp(path), text) << path << " was overwritten";
  // The refits in place, as the shipped profiles' "fitted by" commands run them.
  const CliResult kernel = run_cli("validate --calibrate --hardware h100 --kernel flex --measurements '" + measured +
                                   "' --kernel-out '" + cfg + "/kernels/h100/flex.json'");
  EXPECT_EQ(kernel.exit_code, 0) << kernel.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(cfg + "/kernels/h100/flex.json"))["name"], "flex");
  const CliResult hardware = run_cli("calibrate-step --experiment '" + experiment + "' --hardware-out '" + cfg + "/hardware/a100-80gb.json'");
  EXPECT_EQ(hardware.exit_code, 0) << hardware.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(cfg + "/hardware/a100-80gb.json"))["name"], "a100-80gb");
  unsetenv("STRIPESIM_CONFIG_DIR");
  fs::remove_all(dir);
}

// An output path that is a link is written through: the link stays and the file it names gets
// the output. /dev/stdout, a link into /proc, is written as the stream it is, even when the
// shell sent standard output to a regular file (renaming onto it would replace /dev/stdout).
TEST(CliBadInput, AnOutputThroughALinkKeepsTheLink) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("stripesim_output_link_");
  const fs::path target = dir / "target.json", link = dir / "link.json";
  { std::ofstream(target) << "old\n"; }
  fs::create_symlink(target, link);
  const CliResult r = run_cli("analyze -n 1k -N 2 --format json -o '" + link.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(nlohmann::json::parse(slurp(target))["config"]["seq_len"], 1024);
  if (fs::is_symlink("/dev/stdout")) {
    const CliResult to_stdout = run_cli("analyze -n 1k -N 2 --format json -o /dev/stdout");  // stdout: a regular file
    EXPECT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
    EXPECT_TRUE(fs::is_symlink("/dev/stdout")) << "/dev/stdout was replaced by a file";
    EXPECT_EQ(nlohmann::json::parse(to_stdout.out)["config"]["seq_len"], 1024);
  }
  // A file under /dev that is a file (shared memory) is staged and renamed as any other: written
  // whole, nothing left beside it.
  if (fs::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0) {
    const fs::path shm = fs::path("/dev/shm") / ("stripesim_output_shm_" + std::to_string(::getpid()));
    fs::remove_all(shm);
    fs::create_directories(shm);
    const CliResult to_shm = run_cli("analyze -n 1k -N 2 --format json -o '" + (shm / "a.json").string() + "'");
    EXPECT_EQ(to_shm.exit_code, 0) << to_shm.err;
    EXPECT_EQ(nlohmann::json::parse(slurp(shm / "a.json"))["config"]["seq_len"], 1024);
    EXPECT_EQ(std::distance(fs::directory_iterator(shm), fs::directory_iterator()), 1);
    fs::remove_all(shm);
  }
  fs::remove_all(dir);
}

// A path through /proc names the file it leads to (/proc/self/root/DIR/b.json is DIR/b.json): an
// input there is refused as by its own name, and a file there is replaced whole. Standard output
// or error by another name is written through the stream, where the shell put it: `>> log` keeps
// what the log held. A file replaced keeps its mode.
TEST(CliBadInput, AnOutputPathIsTheFileItLeadsTo) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("stripesim_output_leads_to_");
  const std::string d = dir.string();
  fs::copy_file(std::string(STRIPESIM_SOURCE_DIR) + "/reports/baseline/imbalance.json", dir / "b.json");
  const std::string baseline = slurp(dir / "b.json");
  if (fs::is_directory("/proc/self/root")) {
    const std::string through = "/proc/self/root" + d + "/b.json";
    const CliResult r = run_cli("check --baseline '" + d + "/b.json' --junit '" + through + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "stripesim: error: --junit '" + through + "': the command reads this file (--baseline " + d +
                         "/b.json); give the output another path\n");
    EXPECT_EQ(slurp(dir / "b.json"), baseline) << "the baseline was overwritten";
  }
  const fs::path log = dir / "log.txt";
  for (const auto& [alias, stream] : {std::pair{"/dev/stdout", ">>"}, {"/dev/stderr", "2>>"}}) {
    if (!fs::exists(alias)) continue;
    { std::ofstream(log) << "kept\n"; }
    const std::string command = fmt::format("'{}' analyze -n 1k -N 2 --format csv -o {} {}'{}' {}", STRIPESIM_BINARY, alias, stream,
                                            log.string(), std::string(stream) == ">>" ? "2>/dev/null" : ">/dev/null");
    const int status = std::system(command.c_str());
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0) << alias;
    const std::string text = slurp(log);
    EXPECT_TRUE(text.starts_with("kept\nlayout,seq_len,")) << alias << ": " << text.substr(0, 40);
  }
  const fs::path private_file = dir / "private.json";
  { std::ofstream(private_file) << "old\n"; }
  fs::permissions(private_file, fs::perms::owner_read | fs::perms::owner_write);
  const CliResult replaced = run_cli("analyze -n 1k -N 2 --format json -o '" + private_file.string() + "'");
  EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(fs::status(private_file).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(nlohmann::json::parse(slurp(private_file))["config"]["seq_len"], 1024);
  // Paths that cannot be a file: a loop of links, a folder that is a file; and a read-only file,
  // which renaming over it would replace without asking (refused for root too).
  fs::create_symlink(dir / "loop_b", dir / "loop_a");
  fs::create_symlink(dir / "loop_a", dir / "loop_b");
  { std::ofstream(dir / "plain") << "x\n"; }
  { std::ofstream(dir / "read_only.json") << "kept\n"; }
  fs::permissions(dir / "read_only.json", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  for (const auto& [path, error] : {std::pair<std::string, std::string>{d + "/loop_a", "its symbolic links form a loop, expected a file name"},
                                    {d + "/plain/x.json", "'" + d + "/plain' is not a directory"},
                                    {d + "/read_only.json", "the file is read-only; make it writable or give another path"}}) {
    const CliResult r = run_cli("analyze -n 1k -N 2 -o '" + path + "'");
    EXPECT_EQ(r.exit_code, 2) << path;
    EXPECT_EQ(r.err, "stripesim: error: --output '" + path + "': " + error + "\n");
  }
  EXPECT_TRUE(fs::is_symlink(dir / "loop_a")) << "the link was replaced";
  EXPECT_EQ(slurp(dir / "read_only.json"), "kept\n");
  fs::remove_all(dir);
}

// A folder named like a preset is refused by name when a lookup reads it (it was an internal
// error, exit 1, in every command, whose help lists the presets), wherever it sorts (a lookup
// reads every preset); the commands that look nothing up run.
TEST(CliBadInput, AFolderNamedLikeAPresetIsRefusedByName) {
  namespace fs = std::filesystem;
  const fs::path cfg = fresh_temp_dir("stripesim_preset_folder_");
  fs::copy(std::string(STRIPESIM_SOURCE_DIR) + "/configs", cfg, fs::copy_options::recursive);
  for (const char* name : {"aa-folder.json", "zz-folder.json"}) {
    const fs::path folder = cfg / "hardware" / name;
    fs::create_directory(folder);
    ASSERT_EQ(setenv("STRIPESIM_CONFIG_DIR", cfg.c_str(), 1), 0);
    const CliResult lookup = run_cli("tms --model 1b --hardware h100");
    const CliResult no_lookup = run_cli("analyze -n 4k -N 4 --format csv");
    unsetenv("STRIPESIM_CONFIG_DIR");
    EXPECT_EQ(lookup.exit_code, 2) << name;
    EXPECT_EQ(lookup.err, fmt::format("stripesim: error: {0}: '{0}' is a directory, expected a file; every preset of {1} must read (a "
                                      "lookup of 'h100' reads them all)\n",
                                      folder.string(), (cfg / "hardware").string()));
    EXPECT_EQ(no_lookup.exit_code, 0) << no_lookup.err;
    fs::remove(folder);
  }
  fs::remove_all(cfg);
}

// A name two presets answer to is refused, one line naming both files, in every command that
// looks it up (name order used to pick the first without a word); a kernels_from that names it
// too, where a name no preset answers to only ends the chain of kernel folders.
TEST(CliBadInput, ANameTwoPresetsAnswerToIsRefused) {
  namespace fs = std::filesystem;
  const fs::path cfg = fresh_temp_dir("stripesim_preset_twice_");
  fs::copy(std::string(STRIPESIM_SOURCE_DIR) + "/configs", cfg, fs::copy_options::recursive);
  nlohmann::json copy = nlohmann::json::parse(std::ifstream(cfg / "hardware" / "a100-80gb.json"));
  copy["name"] = "a100-copy";
  copy["aliases"] = {"h100"};
  std::ofstream(cfg / "hardware" / "zz-a100-copy.json") << copy.dump(2);
  const std::string both = fmt::format("two presets answer to it, {} and {}; rename one or give a path to a JSON file",
                                       (cfg / "hardware" / "h100-sxm.json").string(), (cfg / "hardware" / "zz-a100-copy.json").string());
  ASSERT_EQ(setenv("STRIPESIM_CONFIG_DIR", cfg.c_str(), 1), 0);
  const CliResult tms = run_cli("tms --model 1b --hardware h100");
  const CliResult simulate = run_cli("simulate -n 16k -N 4 --hardware H100");
  const CliResult other = run_cli("simulate -n 16k -N 4 --hardware h200");
  // The H800 runs the H100's kernels (kernels_from "h100"): that name is now two presets', blamed
  // on that field wherever the H800 was named (an experiment's field too).
  const CliResult chained = run_cli("simulate -n 16k -N 4 --hardware h800");
  std::ofstream(cfg / "h800.json") << R"({"hardware": "h800", "seq_len": "16k", "devices": 4})";
  const CliResult experiment = run_cli("simulate --experiment " + (cfg / "h800.json").string());
  // A kernel profile's "hardware" names it too: blamed on that field, not on --hardware.
  nlohmann::json kernel = nlohmann::json::parse(std::ifstream(cfg / "kernels" / "h100" / "fa2.json"));
  kernel["hardware"] = "h100";
  std::ofstream(cfg / "fa2-h100.json") << kernel.dump(2);
  const CliResult kernel_field = run_cli("simulate -n 16k -N 4 --hardware h200 --kernel " + (cfg / "fa2-h100.json").string());
  unsetenv("STRIPESIM_CONFIG_DIR");
  EXPECT_EQ(tms.exit_code, 2);
  EXPECT_EQ(tms.err, "stripesim: error: --hardware 'h100': " + both + "\n");
  EXPECT_EQ(simulate.exit_code, 2);
  EXPECT_EQ(simulate.err, "stripesim: error: --hardware 'H100': " + both + "\n");
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(chained.exit_code, 2);
  EXPECT_EQ(chained.err, "stripesim: error: hardware h800-sxm field \"kernels_from\" = 'h100': " + both + "\n");
  EXPECT_EQ(experiment.exit_code, 2);
  EXPECT_EQ(experiment.err, chained.err);
  EXPECT_EQ(kernel_field.exit_code, 2);
  EXPECT_EQ(kernel_field.err, "stripesim: error: kernel fa2 field \"hardware\" = 'h100': " + both + "\n");
  fs::remove_all(cfg);
}

TEST(CliBadInput, MissingSubcommand) {
  const CliResult r = run_cli("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("subcommand"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stripesim::testing
