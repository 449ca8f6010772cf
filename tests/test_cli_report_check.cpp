#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <tuple>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bad_input_table.hpp"
#include "temp_path.hpp"

namespace stripesim::testing {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = temp_path(name);
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

// A ring past simulate's default size for per-round records has none in its JSON without
// --rounds: the report says how to get them, not that --summary-only (never given) left them out.
TEST(CliReport, ARingWithoutRoundsSaysHowToGetThem) {
  const auto dir = fresh_dir("stripesim_report_no_rounds");
  ASSERT_EQ(run_cli("simulate -n 16k -N 128 --topology ideal --layouts zigzag --format json -o '" + (dir / "s.json").string() + "'").exit_code, 0);
  ASSERT_EQ(run_cli("report '" + (dir / "s.json").string() + "' --out-dir '" + (dir / "out").string() + "'").exit_code, 0);
  const std::string md = slurp(dir / "out" / "report.md");
  EXPECT_NE(md.find("holds no per-round records to draw (`simulate --format json --rounds` writes them"), std::string::npos) << md;
  EXPECT_EQ(md.find("was written with `--summary-only`"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Two sweeps of the same hardware and model each get their figure: the first under the plain name,
// the second numbered (both were named tms-a100-80gb-1b.svg, and the report was refused as
// writing one file twice).
TEST(CliReport, TwoSweepsOfOneModelGetAFigureEach) {
  const auto dir = fresh_dir("stripesim_report_two_sweeps");
  ASSERT_EQ(run_cli("sweep --seq-lens 8k,16k --devices 2 --format json -o '" + (dir / "a.json").string() + "'").exit_code, 0);
  ASSERT_EQ(run_cli("sweep --seq-lens 8k,16k --devices 4 --format json -o '" + (dir / "b.json").string() + "'").exit_code, 0);
  const CliResult r = run_cli("report '" + (dir / "a.json").string() + "' '" + (dir / "b.json").string() + "' --out-dir '" +
                              (dir / "out").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = slurp(dir / "out" / "report.md");
  EXPECT_NE(md.find("](tms-a100-80gb-1b.svg)"), std::string::npos) << md;
  EXPECT_NE(md.find("](tms-a100-80gb-1b-1.svg)"), std::string::npos) << md;
  EXPECT_NE(slurp(dir / "out" / "tms-a100-80gb-1b.svg"), slurp(dir / "out" / "tms-a100-80gb-1b-1.svg"));
  std::filesystem::remove_all(dir);
}

// A sweep of two tiles draws a curve for each tile of each mesh (one curve a mesh zigzagged between
// the tiles' points at every length), its lengths labelled as -n takes them (256k, not 262k);
// with the tile column left out the rows of a mesh cannot be told apart, and the figure says so.
TEST(CliReport, TmsCurvesKeepTilesApartAndLabelLengthsInBinaryUnits) {
  const auto dir = fresh_dir("stripesim_report_tiles");
  ASSERT_EQ(run_cli("sweep --meshes 2x4 --seq-lens 8k,256k --tiles 128x128,2048x4096 --format json -o '" + (dir / "s.json").string() + "'")
                .exit_code,
            0);
  ASSERT_EQ(run_cli("report '" + (dir / "s.json").string() + "' --out-dir '" + (dir / "out").string() + "'").exit_code, 0);
  const std::string svg = slurp(dir / "out" / "tms-a100-80gb-1b.svg");
  for (const char* text : {">mesh 2x4, 128x128<", ">mesh 2x4, 2048x4096<", ">8k<", ">256k<"}) EXPECT_NE(svg.find(text), std::string::npos) << text;
  EXPECT_EQ(svg.find(">262k<"), std::string::npos);
  size_t dashed = 0;
  for (size_t at = svg.find("stroke-dasharray=\"5,4\""); at != std::string::npos; at = svg.find("stroke-dasharray=\"5,4\"", at + 1)) ++dashed;
  EXPECT_EQ(dashed, 2u) << "one dashed (tiles) curve a tile";
  ASSERT_EQ(run_cli("sweep --meshes 2x4 --seq-lens 8k,256k --tiles 128x128,2048x4096 --columns hardware,model,mesh,n_seq,tms "
                    "--format json -o '" + (dir / "c.json").string() + "'")
                .exit_code,
            0);
  ASSERT_EQ(run_cli("report '" + (dir / "c.json").string() + "' --out-dir '" + (dir / "out2").string() + "'").exit_code, 0);
  EXPECT_NE(slurp(dir / "out2" / "tms-a100-80gb-1b.svg").find("mesh 2x4 has two rows at n = 8k: keep the columns that tell them apart"),
            std::string::npos);
  // Columns left out: without hardware and model the rows are one figure; without mesh, the
  // report names that column alone (it said tms, mesh and n_seq were all missing).
  ASSERT_EQ(run_cli("sweep --meshes 2x4 --seq-lens 8k,256k --columns mesh,n_seq,tms --format json -o '" + (dir / "m.json").string() + "'")
                .exit_code,
            0);
  ASSERT_EQ(run_cli("report '" + (dir / "m.json").string() + "' --out-dir '" + (dir / "out3").string() + "'").exit_code, 0);
  EXPECT_NE(slurp(dir / "out3" / "tms.svg").find("TMS of striped over contiguous (solid"), std::string::npos);
  EXPECT_NE(slurp(dir / "out3" / "report.md").find("![TMS against sequence length](tms.svg)"), std::string::npos);
  ASSERT_EQ(run_cli("sweep --meshes 2x4 --seq-lens 8k,256k --columns model,hardware,n_seq,tms --format json -o '" + (dir / "n.json").string() + "'")
                .exit_code,
            0);
  ASSERT_EQ(run_cli("report '" + (dir / "n.json").string() + "' --out-dir '" + (dir / "out4").string() + "'").exit_code, 0);
  EXPECT_NE(slurp(dir / "out4" / "report.md").find("Not plotted: the sweep has no `mesh` column (its `--columns` left it out)."),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// At --scope step a result's time is the step's while its idle and exposed communication are one
// layer's attention: the report shows the two apart (a step table, then the layer's attention),
// and the timeline's axis spans the attention passes it draws, not the step. Without a ring the
// section names the algorithm and no K/V buffers.
TEST(CliReport, AStepIsShownApartFromItsLayersAttention) {
  const auto dir = fresh_dir("stripesim_report_step");
  const std::string step = (dir / "step.json").string();
  ASSERT_EQ(run_cli("simulate --model llama3-8b --hardware h100 -N 4 -n 16k --scope step --format json -o '" + step + "'").exit_code, 0);
  const CliResult r = run_cli("report '" + step + "' --out-dir '" + (dir / "out").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = slurp(dir / "out" / "report.md");
  EXPECT_NE(md.find("## Simulated training step, `--cp ring`"), std::string::npos) << md;
  EXPECT_NE(md.find("| layout | time (ms) | vs contiguous | tokens/s | MFU | memory (GiB) |"), std::string::npos) << md;
  EXPECT_NE(md.find("One layer's attention, every pass:"), std::string::npos) << md;
  const nlohmann::json doc = nlohmann::json::parse(slurp(step));
  double widest_us = 0;  // the latest end of the passes drawn
  for (const auto& result : doc["results"]) {
    double passes_us = 0;
    for (const auto& pass : result["passes"]) {
      passes_us += pass["time_us"].get<double>();
      widest_us = std::max(widest_us, pass["end_us"].get<double>());
    }
    EXPECT_LT(passes_us * 10, result["time_us"].get<double>());  // 32 layers, forward and backward
    EXPECT_NE(md.find(fmt::format("| {} | {:.3f} | {:.3f} | {:.3f} |", result["layout"].get<std::string>(), passes_us / 1e3,
                                  result["max_idle_us"].get<double>() / 1e3, result["max_exposed_comm_us"].get<double>() / 1e3)),
              std::string::npos)
        << md;
    EXPECT_NE(md.find(fmt::format("| {} | {:.3f} | {:.2f}x |", result["layout"].get<std::string>(),
                                  result["time_us"].get<double>() / 1e3, result["speedup_vs_contiguous"].get<double>())),
              std::string::npos)
        << md;
  }
  // The axis' last tick is the passes' span, which is not the step's tens of seconds.
  const std::string svg = slurp(dir / "out" / "timeline-0.svg");
  EXPECT_NE(svg.find("one layer's attention"), std::string::npos);
  EXPECT_LT(widest_us, 1e6);
  EXPECT_EQ(svg.find(fmt::format(">{:.0f}<", doc["results"][0]["time_us"].get<double>() / 1e3)), std::string::npos);

  const std::string ulysses = (dir / "ulysses.json").string();
  ASSERT_EQ(run_cli("simulate --cp ulysses -n 16k -N 4 --format json -o '" + ulysses + "'").exit_code, 0);
  ASSERT_EQ(run_cli("report '" + ulysses + "' --out-dir '" + (dir / "out2").string() + "'").exit_code, 0);
  const std::string md2 = slurp(dir / "out2" / "report.md");
  EXPECT_NE(md2.find("## Simulated `--cp ulysses`"), std::string::npos) << md2;
  EXPECT_EQ(md2.find("K/V buffers"), std::string::npos) << md2;
  std::filesystem::remove_all(dir);
}

// A hybrid's records follow one ring of R devices, not all N: the timeline draws those R (it
// read an eighth device's record that hybrid:2x4 never wrote, and refused the file).
TEST(CliReport, DrawsAHybridsRingOfItsOwnDevices) {
  const auto dir = fresh_dir("stripesim_report_hybrid");
  const std::string hybrid = (dir / "hybrid.json").string();
  ASSERT_EQ(run_cli("simulate --cp hybrid:2x4 -n 16k -N 8 --format json -o '" + hybrid + "'").exit_code, 0);
  const CliResult r = run_cli("report '" + hybrid + "' --out-dir '" + (dir / "out").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = slurp(dir / "out" / "timeline-0.svg");
  EXPECT_NE(svg.find(">d3</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">d4</text>"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Hand-edited inputs that broke the figures: a device count of 0 divided by zero (SIGFPE), a
// work matrix shorter than its devices was read past its end (SIGSEGV), a sweep row at n_seq 0
// put -inf on the log axis and never finished. Each is one line naming the file and the field
// (a JSON pointer into it), exit 2, no report.
TEST(CliReport, HandEditedInputsThatBrokeTheFiguresAreRefused) {
  const auto dir = fresh_dir("stripesim_report_edited");
  ASSERT_EQ(run_cli("analyze --seq-len 4k --devices 4 --tile 64x64 --format json -o '" + (dir / "a.json").string() + "'").exit_code, 0);
  ASSERT_EQ(run_cli("sweep --seq-lens 8k,16k --devices 2 --format json -o '" + (dir / "s.json").string() + "'").exit_code, 0);
  const auto edited = [&](const std::string& from, const std::string& name, const auto& edit) {
    nlohmann::json doc = nlohmann::json::parse(slurp(dir / from));
    edit(doc);
    std::ofstream(dir / name) << doc.dump();
    return (dir / name).string();
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {edited("a.json", "zero.json", [](nlohmann::json& d) { d["config"]["devices"] = 0; }),
       "field \"/config/devices\": expected at least 1, got 0 (not a complete analyze document)"},
      {edited("a.json", "short.json", [](nlohmann::json& d) { d["results"][0]["active_tiles"][2] = nlohmann::json::array(); }),
       "field \"/results/0/active_tiles/2/0\": missing (not a complete analyze document)"},
      {edited("s.json", "n0.json", [](nlohmann::json& d) { d["rows"][0]["n_seq"] = 0; }),
       "field \"/rows/0/n_seq\": expected at least 1, got 0 (not a complete sweep document)"},
      // A value of the wrong type is named where it sits, not only by its type.
      {edited("a.json", "type.json", [](nlohmann::json& d) { d["results"][1]["metrics"]["tiles"]["idle_fraction"] = "x"; }),
       "field \"/results/1/metrics/tiles/idle_fraction\": expected a number, got \"x\" (not a complete analyze document)"},
      {edited("a.json", "huge.json", [](nlohmann::json& d) { d["config"]["devices"] = 1e308; }),
       "field \"/config/devices\": expected an integer, got 1e+308 (not a complete analyze document)"},
      {edited("s.json", "rows.json", [](nlohmann::json& d) { d["rows"] = 5; }),
       "field \"/rows\": expected an array, got 5 (not a complete sweep document)"},
      // A row without a column the others hold is damaged, not a sweep of fewer --columns (it
      // drew no figure, saying the sweep had none of the columns).
      {edited("s.json", "no_n.json", [](nlohmann::json& d) { d["rows"][0].erase("n_seq"); }),
       "field \"/rows/0/n_seq\": missing (row 1 has it: every row holds the sweep's columns) (not a complete sweep document)"},
      {edited("s.json", "no_tms.json", [](nlohmann::json& d) { d["rows"][1].erase("tms"); }),
       "field \"/rows/1/tms\": missing (row 0 has it: every row holds the sweep's columns) (not a complete sweep document)"},
      // Nothing to draw, and a tile side of 0: no command writes either.
      {edited("a.json", "empty.json", [](nlohmann::json& d) { d["results"] = nlohmann::json::array(); }),
       "field \"/results\": expected at least one entry, got [] (not a complete analyze document)"},
      {edited("a.json", "tile0.json", [](nlohmann::json& d) { d["config"]["tile"]["query"] = 0; }),
       "field \"/config/tile/query\": expected at least 1, got 0 (not a complete analyze document)"}};
  for (const auto& [input, message] : cases) {
    const CliResult r = run_cli("report '" + input + "' --out-dir '" + (dir / "out").string() + "'");
    EXPECT_EQ(r.exit_code, 2) << input;
    EXPECT_EQ(r.err, "stripesim: error: report input '" + input + "': " + message + "\n");
    EXPECT_FALSE(std::filesystem::exists(dir / "out")) << input;
  }
  std::filesystem::remove_all(dir);
}

// A validator run that predicted nothing has nothing for the report's figure: it says which run
// would have, rather than that a field is missing.
TEST(CliReport, AValidateRunWithoutPredictionsSaysWhatWouldHaveThem) {
  const auto dir = fresh_dir("stripesim_report_plain_validate");
  ASSERT_EQ(run_cli("validate -n 256 -N 2 --tile 32x32 --iterations 1 --warmup 0 --layouts zigzag,striped --out-dir '" + (dir / "run").string() + "'")
                .exit_code,
            0);
  const std::string saved = (dir / "run" / "validate.json").string();
  const CliResult r = run_cli("report '" + saved + "' --out-dir '" + (dir / "out").string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("a validate run without --compare or --calibrate has no predictions"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  ASSERT_EQ(run_cli("validate --compare --from '" + saved + "' --out-dir '" + (dir / "compared").string() + "'").exit_code, 0);
  const CliResult compared = run_cli("report '" + (dir / "compared" / "validate.json").string() + "' --out-dir '" + (dir / "out").string() + "'");
  EXPECT_EQ(compared.exit_code, 0) << compared.err;
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

// The report says how tiles were cut: a varlen count is not a fixed one.
TEST(CliReport, SaysTheTiling) {
  const auto dir = fresh_dir("stripesim_report_tiling");
  for (const char* tiling : {"fixed", "varlen"}) {
    const std::string json = (dir / (std::string(tiling) + ".json")).string();
    ASSERT_EQ(run_cli(std::string("analyze -n 16k -N 4 --mask documents:lognormal:1024:1.0:seed=1 --format json -o '") + json +
                      "' --tiling " + tiling)
                  .exit_code,
              0);
    ASSERT_EQ(run_cli("report '" + json + "' --out-dir '" + (dir / tiling).string() + "'").exit_code, 0);
    EXPECT_NE(slurp(dir / tiling / "report.md").find(std::string("(") + tiling + " tiling)"), std::string::npos) << tiling;
  }
  std::filesystem::remove_all(dir);
}

// A balance sweep over two tiles: each tile has its own table, with its own ptrr (named for the
// tile), and the padding given with the lengths (V+P) is counted (the 64x64 rows once took the
// 256x256 rows' cells, and V+P padding showed 0.00%).
TEST(CliReport, BalanceTablesPerTileWithTheirPadding) {
  const auto dir = fresh_dir("stripesim_report_balance_tiles");
  {
    std::ofstream(dir / "e.json") << R"({"kind": "balance", "groups": [{"seq_lens": ["4k"], "devices": [4],
      "masks": ["documents:1000+24,3072"], "tiles": ["64x64", "256x256"], "layouts": ["contiguous", "zigzag", "ptrr"]}]})";
  }
  const std::string json = (dir / "s.json").string();
  ASSERT_EQ(run_cli("sweep --experiment '" + (dir / "e.json").string() + "' --format json -o '" + json + "'").exit_code, 0);
  const auto rows = nlohmann::json::parse(slurp(json)).at("rows");
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& row : rows) EXPECT_DOUBLE_EQ(row.at("padding_fraction").get<double>(), 24.0 / 4096) << row.dump();
  const CliResult r = run_cli("report '" + json + "' --out-dir '" + (dir / "r").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = slurp(dir / "r" / "report.md");
  const auto small = md.find("### n = 4096, N = 4, tiles 64x64");
  const auto large = md.find("### n = 4096, N = 4, tiles 256x256");
  ASSERT_NE(small, std::string::npos) << md;
  ASSERT_NE(large, std::string::npos) << md;
  const std::string small_table = md.substr(small, large - small);
  EXPECT_NE(small_table.find("| contiguous | zigzag | ptrr:64 |"), std::string::npos) << small_table;
  EXPECT_NE(small_table.find("| 0.59% | 1.976 / 1.976 | 1.195 / 1.585 |"), std::string::npos) << small_table;
  EXPECT_NE(md.substr(large).find("| contiguous | zigzag | ptrr:256 |"), std::string::npos) << md;
  std::filesystem::remove_all(dir);
}

// A report draws whatever analyze wrote: a stripe wider than the small example's blocks (here
// 16 > 32/4) enlarges the example instead of failing, and one too wide to draw is named.
TEST(CliReport, DrawsEveryBlockStripedWidth) {
  const auto dir = fresh_dir("stripesim_report_block_striped");
  const std::string json = (dir / "a.json").string();
  ASSERT_EQ(run_cli("analyze --seq-len 4k --devices 4 --layouts block-striped:16,zigzag,block-striped:64 --format json -o '" +
                    json + "'")
                .exit_code,
            0);
  const CliResult r = run_cli("report '" + json + "' --out-dir '" + (dir / "r").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = slurp(dir / "r" / "report.md");
  EXPECT_NE(md.find("small example with the same layouts (n = 64, N = 4"), std::string::npos) << md;
  EXPECT_NE(md.find("Not drawn: block-striped:64"), std::string::npos) << md;
  const std::string svg = slurp(dir / "r" / "attention-matrix-0.svg");
  EXPECT_NE(svg.find(">block-striped:16<"), std::string::npos);
  EXPECT_NE(svg.find(">zigzag<"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Layouts shaped by the workload (per-document, balanced) are not drawn in the small example, and
// the report says which, as it does for a stripe too wide.
TEST(CliReport, SaysWhichLayoutsTheSmallExampleLeavesOut) {
  const auto dir = fresh_dir("stripesim_report_workload_layouts");
  const std::string json = (dir / "a.json").string();
  ASSERT_EQ(run_cli("analyze -n 4k -N 4 --tile 64x64 --mask documents:1024,3072 --layouts contiguous,doc-zigzag,balanced "
                    "--format json -o '" + json + "'")
                .exit_code,
            0);
  ASSERT_EQ(run_cli("report '" + json + "' --out-dir '" + (dir / "r").string() + "'").exit_code, 0);
  const std::string md = slurp(dir / "r" / "report.md");
  EXPECT_NE(md.find("Not drawn: doc-zigzag, balanced (shaped by the analysed mask, tile or file"), std::string::npos) << md;
  EXPECT_NE(slurp(dir / "r" / "attention-matrix-0.svg").find(">contiguous<"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// The report's simulated-ring table shows simulate's own columns: over a forward and a backward
// pass a device's idle time adds up (the report once took the worst single pass instead).
TEST(CliReport, SimulatedRingColumnsAreSimulatesOwn) {
  const auto dir = fresh_dir("stripesim_report_fwdbwd");
  const std::string args = "simulate -n 32k -N 4 --hardware h100 --pass fwdbwd --layouts contiguous";
  const std::string json = (dir / "s.json").string();
  ASSERT_EQ(run_cli(args + " --format json -o '" + json + "'").exit_code, 0);
  const CliResult table = run_cli(args);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const auto row = table.out.substr(table.out.find("\ncontiguous ") + 1);
  std::istringstream cells(row.substr(0, row.find('\n')));
  std::string layout, time, speedup, busy, ms1, idle, ms2, exposed;
  cells >> layout >> time >> speedup >> busy >> ms1 >> idle >> ms2 >> exposed;
  const auto doc = nlohmann::json::parse(slurp(dir / "s.json"));
  const auto& result = doc.at("results")[0];
  EXPECT_EQ(fmt::format("{:.3f}", result.at("max_idle_us").get<double>() / 1e3), idle);
  EXPECT_EQ(fmt::format("{:.3f}", result.at("max_exposed_comm_us").get<double>() / 1e3), exposed);
  // Two passes: the summed idle exceeds either pass's worst device alone.
  double worst_single_pass = 0;
  for (const auto& pass : result.at("passes")) {
    for (const auto& d : pass.at("devices")) worst_single_pass = std::max(worst_single_pass, d.at("idle_us").get<double>());
  }
  EXPECT_GT(result.at("max_idle_us").get<double>(), worst_single_pass);
  ASSERT_EQ(run_cli("report '" + json + "' --out-dir '" + (dir / "r").string() + "'").exit_code, 0);
  EXPECT_NE(slurp(dir / "r" / "report.md").find(fmt::format("| contiguous | {} | 1.00x | {} | {} |", time, idle, exposed)),
            std::string::npos)
      << slurp(dir / "r" / "report.md");
  std::filesystem::remove_all(dir);
}

// A prefix keeps its share of the sequence in the small example: 2k of 8k tokens, 8 of its 32. Query
// 0 then reads key 7 (inside the prefix) and not key 8; under the causal mask it would read key 0 alone.
TEST(CliReport, SmallExampleKeepsThePrefixShare) {
  const auto dir = fresh_dir("stripesim_report_prefix");
  const std::string json = (dir / "a.json").string();
  ASSERT_EQ(run_cli("analyze --seq-len 8k --devices 4 --mask prefix:2k --format json -o '" + json + "'").exit_code, 0);
  const CliResult r = run_cli("report '" + json + "' --out-dir '" + (dir / "r").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(dir / "r" / "report.md").find("(n = 32, N = 4, prefix:8 mask)"), std::string::npos);
  const std::string svg = slurp(dir / "r" / "attention-matrix-0.svg");
  EXPECT_NE(svg.find("<title>q 0 k 7: device"), std::string::npos);
  EXPECT_EQ(svg.find("<title>q 0 k 8: device"), std::string::npos);
  // An edited prefix near 2^63 is the whole example, not an overflowed product.
  auto doc = nlohmann::json::parse(slurp(dir / "a.json"));
  doc["config"]["mask"]["prefix"] = 9000000000000000000LL;
  std::ofstream(dir / "big.json") << doc.dump();
  const CliResult big = run_cli("report '" + (dir / "big.json").string() + "' --out-dir '" + (dir / "r2").string() + "'");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  EXPECT_NE(slurp(dir / "r2" / "report.md").find("(n = 32, N = 4, prefix:32 mask)"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// An edited block-striped stripe that cannot lay out the analysed sequence is the file's field's
// fault, named where it sits (it was blamed on --seq-len, a flag report does not take).
TEST(CliReport, AnEditedLayoutIsNamedAtItsField) {
  const auto dir = fresh_dir("stripesim_report_layout_edit");
  const std::string json = (dir / "a.json").string();
  ASSERT_EQ(run_cli("analyze --seq-len 4k --devices 4 --layouts block-striped:64 --format json -o '" + json + "'").exit_code, 0);
  auto doc = nlohmann::json::parse(slurp(dir / "a.json"));
  doc["results"][0]["layout"] = "block-striped:7";
  std::ofstream(dir / "edited.json") << doc.dump();
  const CliResult r = run_cli("report '" + (dir / "edited.json").string() + "' --out-dir '" + (dir / "r").string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("field \"/results/0/layout\": 'block-striped:7' cannot lay out the analysed n = 4096 over N = 4"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--seq-len"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "r"));
  std::filesystem::remove_all(dir);
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

// Figures stay a size a browser opens whatever N. The heatmaps bin rounds and devices into at
// most 128 cells a side, each at the bin's mean (N = 192: 2 x 2 bins, checked against the
// analysis' own numbers). The timeline draws rounds too thin to tell apart as one bar: a ring of
// 1000 rounds of 1 us (0.72 px each on 720 px) comes out as bars of 3 rounds, covering them all,
// while the same ring's first 10 rounds alone keep a bar each.
TEST(CliReport, LargeRingsDrawBoundedFigures) {
  const auto dir = fresh_dir("stripesim_report_large");
  const std::string analysis = (dir / "a.json").string();
  ASSERT_EQ(run_cli("analyze -n 48k -N 192 --layouts contiguous,zigzag --format json -o '" + analysis + "'").exit_code, 0);
  ASSERT_EQ(run_cli("report '" + analysis + "' --out-dir '" + (dir / "a").string() + "'").exit_code, 0);
  const std::string heatmap = slurp(dir / "a" / "work-elements-0.svg");
  EXPECT_NE(heatmap.find("each cell the mean of 2 x 2"), std::string::npos);
  EXPECT_EQ(occurrences(heatmap, "<title>rounds "), 2u * 96 * 96);
  const nlohmann::json doc = nlohmann::json::parse(slurp(analysis));
  const auto& elements = doc.at("results").at(0).at("unmasked_elements");
  const auto at = [&](size_t round, size_t device) { return elements.at(round).at(device).get<double>(); };
  const double mean = (at(0, 0) + at(0, 1) + at(1, 0) + at(1, 1)) / 4;
  const double largest = std::max({at(0, 0), at(0, 1), at(1, 0), at(1, 1)});
  EXPECT_NE(heatmap.find(fmt::format("<title>rounds 0-1, devices 0-1: mean {:.0f}, largest {}</title>", mean,
                                     static_cast<long long>(largest))),
            std::string::npos);

  // A simulate document whose one ring is replaced by `rounds` rounds of 1 us on both devices.
  const std::string simulated = (dir / "s.json").string();
  ASSERT_EQ(run_cli("simulate -n 4k -N 2 --layouts zigzag --rounds --format json -o '" + simulated + "'").exit_code, 0);
  const nlohmann::json real = nlohmann::json::parse(slurp(simulated));
  const auto timeline_of = [&](int rounds) {
    nlohmann::json sim = real;
    nlohmann::json& ring = sim.at("results").at(0);
    ring["time_us"] = rounds;
    nlohmann::json cells = nlohmann::json::array();
    for (int r = 0; r < rounds; ++r) {
      const nlohmann::json cell = {{"arrival_us", r}, {"compute_start_us", r}, {"compute_end_us", r + 0.99},
                                   {"send_start_us", r}, {"send_end_us", r + 0.5}};
      cells.push_back({cell, cell});
    }
    ring.at("passes").at(0)["rounds"] = cells;
    const std::string file = (dir / fmt::format("s{}.json", rounds)).string();
    std::ofstream(file) << sim.dump();
    const std::string out = (dir / fmt::format("r{}", rounds)).string();
    EXPECT_EQ(run_cli("report '" + file + "' --out-dir '" + out + "'").exit_code, 0);
    return slurp(std::filesystem::path(out) / "timeline-0.svg");
  };
  const std::string thousand = timeline_of(1000);
  EXPECT_EQ(occurrences(thousand, "<title>forward rounds "), 2u * 333) << "333 bars of 3 rounds a device";
  EXPECT_EQ(occurrences(thousand, "<title>forward round "), 2u) << "round 999 alone, on each device";
  EXPECT_NE(thousand.find("<title>forward rounds 0-2 device 0: compute 0.0-3.0 us</title>"), std::string::npos);
  EXPECT_NE(thousand.find("<title>forward rounds 996-998 device 1: compute 996.0-999.0 us</title>"), std::string::npos);
  const std::string ten = timeline_of(10);
  EXPECT_EQ(occurrences(ten, "<title>forward round "), 2u * 10);
  EXPECT_EQ(occurrences(ten, "<title>forward rounds "), 0u);
  std::filesystem::remove_all(dir);
}

std::string baseline_file() { return std::string(STRIPESIM_SOURCE_DIR) + "/reports/baseline/imbalance.json"; }

// The metrics a baseline records, counted from the file: what check must say it checked.
size_t metric_count(const nlohmann::json& baseline) {
  size_t count = 0;
  for (const auto& entry : baseline.at("entries")) count += entry.at("metrics").size();
  return count;
}

TEST(CliCheck, PassesOnTheCommittedBaselineAndFailsWhenANumberMoves) {
  const std::string baseline = std::string(STRIPESIM_SOURCE_DIR) + "/reports/baseline/imbalance.json";
  const CliResult ok = run_cli("check --baseline '" + baseline + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("within tolerance"), std::string::npos);

  auto doc = nlohmann::json::parse(slurp(baseline));
  doc["entries"][0]["metrics"]["contiguous.elements.imbalance"] = 1.5;
  doc["entries"][0]["metrics"]["zigzag.elements.no_such_metric"] = 1.0;
  const auto moved = temp_path("stripesim_moved_baseline.json");
  std::ofstream(moved) << doc.dump();
  const CliResult bad = run_cli("check --baseline '" + moved.string() + "'");
  EXPECT_EQ(bad.exit_code, 1);
  // Every metric is checked: the committed ones and the one added.
  EXPECT_NE(bad.out.find(fmt::format("check: 2 of {} metrics checked got worse", metric_count(doc))), std::string::npos)
      << bad.out;
  EXPECT_NE(bad.out.find("contiguous.elements.imbalance"), std::string::npos);
  EXPECT_NE(bad.out.find("missing"), std::string::npos);
  // A loose tolerance lets a small drift through; it never hides a missing metric.
  EXPECT_EQ(run_cli("check --baseline '" + moved.string() + "' --tolerance 1").exit_code, 1);
  std::filesystem::remove(moved);
}

// A baseline's description is read for its form only: one left out is checked as the file's
// schema says (optional, default ""), one of another type refused naming the field.
TEST(CliCheck, ABaselinesDescriptionIsOptionalAsItsSchemaSays) {
  const auto schema = nlohmann::json::parse(slurp(std::string(STRIPESIM_SOURCE_DIR) + "/reports/schema/baseline.schema.json"));
  EXPECT_EQ(std::ranges::count(schema.at("required"), "description"), 0);
  EXPECT_EQ(schema.at("properties").at("description").at("default"), "");
  auto doc = nlohmann::json::parse(slurp(baseline_file()));
  doc.erase("description");
  const auto without = temp_path("stripesim_baseline_without_description.json");
  std::ofstream(without) << doc.dump();
  const CliResult ok = run_cli("check --baseline '" + without.string() + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  doc["description"] = nlohmann::json::array();
  std::ofstream(without) << doc.dump();
  const CliResult bad = run_cli("check --baseline '" + without.string() + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("field \"description\": expected a string, got []"), std::string::npos) << bad.err;
  std::filesystem::remove(without);
}

// Only a move the bad way fails: a recorded imbalance above today's (today is better) and a
// recorded speedup below today's pass and are listed as improvements.
TEST(CliCheck, ImprovementsPassAndAreListed) {
  const std::string baseline = std::string(STRIPESIM_SOURCE_DIR) + "/reports/baseline/imbalance.json";
  auto doc = nlohmann::json::parse(slurp(baseline));
  doc["entries"][0]["metrics"]["contiguous.elements.imbalance"] = 2.5;  // today 1.8746
  doc["entries"][0]["metrics"]["zigzag.elements.speedup"] = 4.0;        // today 8
  const auto improved = temp_path("stripesim_improved_baseline.json");
  std::ofstream(improved) << doc.dump();
  const CliResult ok = run_cli("check --baseline '" + improved.string() + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("within tolerance or improved (2 improved"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("contiguous.elements.imbalance"), std::string::npos);
  // The same metrics moved the other way fail, the improvements still listed beside them.
  doc["entries"][0]["metrics"]["contiguous.elements.spread"] = 0.5;  // today 1.749: worse
  std::ofstream(improved) << doc.dump();
  const CliResult bad = run_cli("check --baseline '" + improved.string() + "'");
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find(fmt::format("check: 1 of {} metrics checked got worse", metric_count(doc))), std::string::npos)
      << bad.out;
  EXPECT_NE(bad.out.find("2 more improved"), std::string::npos) << bad.out;
  std::filesystem::remove(improved);
}

// Files a baseline names (documents:FILE, permutation:FILE) are read beside the baseline, so it
// checks the same from any working directory.
TEST(CliCheck, RelativePathsAreReadBesideTheBaseline) {
  const auto dir = fresh_dir("stripesim_check_relative");
  std::ofstream(dir / "docs.txt") << "1024\n3072\n";
  std::filesystem::copy_file(std::string(STRIPESIM_SOURCE_DIR) + "/configs/layouts/example-n16-N2.json", dir / "perm.json");
  // The experiment names them relative to its own folder, and the baseline records them so.
  std::ofstream(dir / "exp.json") << R"({"analyze": [
      {"seq_len": 4096, "devices": 4, "tile": "64x64", "mask": "documents:docs.txt", "layouts": ["contiguous", "zigzag"]},
      {"seq_len": 16, "devices": 2, "tile": "2x2", "layouts": ["contiguous", "permutation:perm.json"]}]})";
  const CliResult written =
      run_cli("check --write-baseline '" + (dir / "b.json").string() + "' --experiment '" + (dir / "exp.json").string() + "'");
  ASSERT_EQ(written.exit_code, 0) << written.err;
  const auto doc = nlohmann::json::parse(slurp(dir / "b.json"));
  EXPECT_EQ(doc.at("entries")[0].at("config").at("mask"), "documents:docs.txt");
  EXPECT_TRUE(doc.at("entries")[1].at("metrics").contains("permutation:perm.json.elements.imbalance"));
  const CliResult r = run_cli("check --baseline '" + (dir / "b.json").string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("within tolerance"), std::string::npos) << r.out;

  // A baseline written into another folder names the same files relative to its own (it named
  // them as the experiment did, and check, reading them beside the baseline, found none); one
  // in the experiment's folder keeps them as written (above).
  std::filesystem::create_directories(dir / "ci");
  const CliResult elsewhere =
      run_cli("check --write-baseline '" + (dir / "ci" / "b.json").string() + "' --experiment '" + (dir / "exp.json").string() + "'");
  ASSERT_EQ(elsewhere.exit_code, 0) << elsewhere.err;
  const auto moved = nlohmann::json::parse(slurp(dir / "ci" / "b.json"));
  EXPECT_EQ(moved.at("entries")[0].at("config").at("mask"), "documents:../docs.txt");
  EXPECT_EQ(moved.at("entries")[1].at("config").at("layouts")[1], "permutation:../perm.json");
  EXPECT_EQ(moved.at("entries")[1].at("metrics").at("permutation:../perm.json.elements.imbalance"),
            doc.at("entries")[1].at("metrics").at("permutation:perm.json.elements.imbalance"));
  const CliResult checked = run_cli("check --baseline '" + (dir / "ci" / "b.json").string() + "'");
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  std::filesystem::remove_all(dir);
}

// analyze, simulate and sweep read an experiment's files from its folder too, as check does: run
// from another working folder, each gives what the flags give with the files' absolute paths.
TEST(CliExperiment, FilesAreReadBesideTheExperimentByEveryCommand) {
  const auto dir = fresh_dir("stripesim_experiment_relative");
  std::ofstream(dir / "docs.txt") << "1024\n3072\n";
  std::ofstream(dir / "hosts") << "node0 slots=2\nnode1 slots=2\n";
  std::filesystem::copy_file(std::string(STRIPESIM_SOURCE_DIR) + "/configs/models/1b.json", dir / "m.json");
  ASSERT_EQ(run_cli("layout --layout zigzag -n 4096 -N 4 --tile 64x64 -o '" + (dir / "perm.json").string() + "'").exit_code, 0);
  const std::string docs = "documents:" + (dir / "docs.txt").string();
  const std::string layouts = "contiguous,permutation:" + (dir / "perm.json").string();

  std::ofstream(dir / "analyze.json") << R"({"seq_len": 4096, "devices": 4, "tile": "64x64", "mask": "documents:docs.txt",
      "layouts": ["contiguous", "permutation:perm.json"]})";
  const CliResult analyzed = run_cli("analyze --format json --experiment '" + (dir / "analyze.json").string() + "'");
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  const CliResult analyzed_by_flags =
      run_cli("analyze --format json -n 4096 -N 4 --tile 64x64 --mask '" + docs + "' --layouts '" + layouts + "'");
  ASSERT_EQ(analyzed_by_flags.exit_code, 0) << analyzed_by_flags.err;
  EXPECT_EQ(analyzed.out, analyzed_by_flags.out);

  std::ofstream(dir / "simulate.json") << R"({"seq_len": 4096, "devices": 4, "tile": "64x64", "mask": "documents:docs.txt",
      "layouts": ["contiguous", "permutation:perm.json"], "model": "m.json", "topology": "hostfile:hosts"})";
  const CliResult simulated = run_cli("simulate --format json --experiment '" + (dir / "simulate.json").string() + "'");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
  const CliResult simulated_by_flags =
      run_cli("simulate --format json -n 4096 -N 4 --tile 64x64 --mask '" + docs + "' --layouts '" + layouts + "' --model '" +
              (dir / "m.json").string() + "' --topology 'hostfile:" + (dir / "hosts").string() + "'");
  ASSERT_EQ(simulated_by_flags.exit_code, 0) << simulated_by_flags.err;
  EXPECT_EQ(simulated.out, simulated_by_flags.out);

  std::ofstream(dir / "sweep.json") << R"({"kind": "balance", "groups": [{"seq_lens": [4096], "devices": [4],
      "masks": ["documents:docs.txt"], "tiles": ["64x64"], "layouts": ["contiguous", "zigzag"]}]})";
  const CliResult swept = run_cli("sweep --format json --experiment '" + (dir / "sweep.json").string() + "'");
  ASSERT_EQ(swept.exit_code, 0) << swept.err;
  const nlohmann::json sweep = nlohmann::json::parse(swept.out);
  ASSERT_FALSE(sweep.at("rows").empty());
  EXPECT_EQ(sweep.at("rows")[0].at("mask"), docs);
  std::filesystem::remove_all(dir);
}

// --metrics picks metrics by pattern; --limit judges what it matches against an absolute bound
// instead of the recorded value; --tolerance takes per-pattern values.
TEST(CliCheck, MetricsLimitsAndPerMetricTolerances) {
  const std::string baseline = baseline_file();
  // zigzag's tile imbalance under the 16k..128k documents mask is 1.4216: over 1.10, under 1.5.
  const CliResult over = run_cli("check --baseline '" + baseline + "' --metrics tiles.imbalance --limit 'zigzag.tiles.imbalance<=1.10'");
  EXPECT_EQ(over.exit_code, 1) << over.out << over.err;
  EXPECT_NE(over.out.find("check: 1 of 22 metrics checked got worse"), std::string::npos) << over.out;
  EXPECT_NE(over.out.find("mask=documents:16k,48k,64k,128k  zigzag.tiles.imbalance"), std::string::npos) << over.out;
  EXPECT_NE(over.out.find("zigzag.tiles.imbalance<=1.1"), std::string::npos) << over.out;
  const CliResult under = run_cli("check --baseline '" + baseline + "' --metrics tiles.imbalance --limit 'zigzag.tiles.imbalance<=1.5'");
  EXPECT_EQ(under.exit_code, 0) << under.out << under.err;
  EXPECT_NE(under.out.find("all 22 metrics checked"), std::string::npos) << under.out;
  EXPECT_NE(under.out.find("within tolerance, 7 within their limits"), std::string::npos) << under.out;
  // A >= limit: every striped TMS of the baseline is at least 1.
  EXPECT_EQ(run_cli("check --baseline '" + baseline + "' --metrics tms --limit 'tms>=1'").exit_code, 0);
  EXPECT_EQ(run_cli("check --baseline '" + baseline + "' --metrics tms --limit 'tms>=100'").exit_code, 1);

  // A spread 30 % worse fails at the default tolerance, passes with spread=0.5, and the
  // imbalance beside it is still held to the default.
  auto doc = nlohmann::json::parse(slurp(baseline));
  const double spread = doc["entries"][0]["metrics"]["contiguous.elements.spread"].get<double>();
  doc["entries"][0]["metrics"]["contiguous.elements.spread"] = spread / 1.3;
  const auto file = temp_path("stripesim_spread_baseline.json");
  std::ofstream(file) << doc.dump();
  EXPECT_EQ(run_cli("check --baseline '" + file.string() + "'").exit_code, 1);
  const CliResult loose = run_cli("check --baseline '" + file.string() + "' --tolerance 1e-6,spread=0.5");
  EXPECT_EQ(loose.exit_code, 0) << loose.out << loose.err;
  doc["entries"][0]["metrics"]["contiguous.elements.imbalance"] = 1.0;
  std::ofstream(file) << doc.dump();
  EXPECT_EQ(run_cli("check --baseline '" + file.string() + "' --tolerance spread=0.5").exit_code, 1);
  std::filesystem::remove(file);
}

// --junit writes a well-formed JUnit XML report: a suite per configuration, a case per metric,
// a failure for each metric that got worse.
TEST(CliCheck, WritesJUnitXml) {
  auto doc = nlohmann::json::parse(slurp(baseline_file()));
  doc["entries"][0]["metrics"]["contiguous.elements.imbalance"] = 1.5;  // today 1.87: worse
  const auto dir = fresh_dir("stripesim_check_junit");
  std::ofstream(dir / "b.json") << doc.dump();
  const CliResult r = run_cli("check --baseline '" + (dir / "b.json").string() + "' --junit '" + (dir / "check.xml").string() + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  boost::property_tree::ptree xml;
  boost::property_tree::read_xml((dir / "check.xml").string(), xml);
  const auto& root = xml.get_child("testsuites");
  EXPECT_EQ(root.get<size_t>("<xmlattr>.tests"), metric_count(doc));
  EXPECT_EQ(root.get<int>("<xmlattr>.failures"), 1);
  int suites = 0;
  int cases = 0;
  std::string failure;
  for (const auto& [tag, suite] : root) {
    if (tag != "testsuite") continue;
    ++suites;
    for (const auto& [case_tag, test] : suite) {
      if (case_tag != "testcase") continue;
      ++cases;
      if (const auto f = test.get_child_optional("failure")) {
        failure = test.get<std::string>("<xmlattr>.name") + ": " + f->get<std::string>("<xmlattr>.message");
      }
    }
  }
  EXPECT_EQ(suites, static_cast<int>(doc["entries"].size()));
  EXPECT_EQ(static_cast<size_t>(cases), metric_count(doc));
  EXPECT_EQ(failure, "contiguous.elements.imbalance: moved: baseline 1.5, now 1.874572962 (tolerance 1e-06)");
  std::filesystem::remove_all(dir);
}

// simulate entries: the predicted time and speedup of each layout are recorded and checked, a
// slower time fails, a faster one is an improvement.
TEST(CliCheck, SimulateEntries) {
  const auto dir = fresh_dir("stripesim_check_simulate");
  std::ofstream(dir / "exp.json") << R"({"simulate": [{"hardware": "h100", "seq_len": 32768, "devices": 4,
      "layouts": ["contiguous", "zigzag"], "pass": "fwdbwd"}]})";
  const CliResult written =
      run_cli("check --write-baseline '" + (dir / "b.json").string() + "' --experiment '" + (dir / "exp.json").string() + "'");
  ASSERT_EQ(written.exit_code, 0) << written.err;
  auto doc = nlohmann::json::parse(slurp(dir / "b.json"));
  const auto& metrics = doc.at("entries")[0].at("metrics");
  ASSERT_TRUE(metrics.contains("zigzag.time_us")) << metrics.dump();
  EXPECT_EQ(metrics.at("contiguous.speedup_vs_contiguous"), 1.0);
  EXPECT_GT(metrics.at("zigzag.speedup_vs_contiguous").get<double>(), 1.2);
  EXPECT_FALSE(metrics.contains("zigzag.devices"));
  // The same numbers as `simulate` prints, times to the nanosecond.
  const CliResult sim = run_cli("simulate --hardware h100 -n 32768 -N 4 --layouts contiguous,zigzag --pass fwdbwd --format json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NEAR(nlohmann::json::parse(sim.out).at("results")[1].at("time_us").get<double>(), metrics.at("zigzag.time_us").get<double>(),
              5e-4);
  EXPECT_EQ(run_cli("check --baseline '" + (dir / "b.json").string() + "'").exit_code, 0);

  const double time = metrics.at("zigzag.time_us").get<double>();
  doc["entries"][0]["metrics"]["zigzag.time_us"] = time * 0.9;  // recorded faster: today is slower
  std::ofstream(dir / "slower.json") << doc.dump();
  const CliResult slower = run_cli("check --baseline '" + (dir / "slower.json").string() + "'");
  EXPECT_EQ(slower.exit_code, 1) << slower.out;
  EXPECT_NE(slower.out.find("simulate h100"), std::string::npos) << slower.out;
  doc["entries"][0]["metrics"]["zigzag.time_us"] = time * 1.1;  // recorded slower: today is faster
  std::ofstream(dir / "faster.json") << doc.dump();
  const CliResult faster = run_cli("check --baseline '" + (dir / "faster.json").string() + "'");
  EXPECT_EQ(faster.exit_code, 0) << faster.out;
  EXPECT_NE(faster.out.find("1 improved"), std::string::npos) << faster.out;
  std::filesystem::remove_all(dir);
}

// Entries that differ only in a field the command's label does not show (the kernel here) are
// told apart by it: they were two rows of one label, and one JUnit suite with its cases twice.
TEST(CliCheck, EntriesOfOneKindHaveLabelsOfTheirOwn) {
  const auto dir = fresh_dir("stripesim_check_labels");
  std::ofstream(dir / "exp.json") << R"({"simulate": [
      {"hardware": "h100", "seq_len": 16384, "devices": 4, "layouts": ["contiguous", "zigzag"], "kernel": "fa2"},
      {"hardware": "h100", "seq_len": 16384, "devices": 4, "layouts": ["contiguous", "zigzag"], "kernel": "fa3"}],
    "analyze": [{"seq_len": 4096, "devices": 4, "tile": "64x64", "mask": "documents:1000,3096", "layouts": ["doc-zigzag"],
                 "pad_documents": true, "description": "not in the label"},
                {"seq_len": 2048, "devices": 4, "tile": "64x64", "layouts": ["contiguous", "zigzag"]},
                {"seq_len": "2k", "devices": 4, "tile": "64x64", "layouts": ["contiguous", "striped"]}]})";
  const std::string baseline = (dir / "b.json").string();
  ASSERT_EQ(run_cli("check --write-baseline '" + baseline + "' --experiment '" + (dir / "exp.json").string() + "'").exit_code, 0);
  const CliResult r = run_cli("check --baseline '" + baseline + "' --junit '" + (dir / "j.xml").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string junit = slurp(dir / "j.xml");
  EXPECT_NE(junit.find(R"(<testsuite name="simulate h100 nvswitch n=16384 N=4 fwd cp=ring mask=causal kernel=fa2")"), std::string::npos) << junit;
  EXPECT_NE(junit.find(R"(<testsuite name="simulate h100 nvswitch n=16384 N=4 fwd cp=ring mask=causal kernel=fa3")"), std::string::npos) << junit;
  EXPECT_NE(junit.find(R"(<testsuite name="analyze n=4096 N=4 tile=64x64 mask=documents:1000,3096 pad_documents=true")"), std::string::npos) << junit;
  // Entries of other layouts alone, or of a length spelled another way, say which entry they are.
  EXPECT_NE(junit.find(R"x(<testsuite name="analyze n=2048 N=4 tile=64x64 mask=causal (entries[1])")x"), std::string::npos) << junit;
  EXPECT_NE(junit.find(R"x(<testsuite name="analyze n=2048 N=4 tile=64x64 mask=causal (entries[2])")x"), std::string::npos) << junit;
  std::filesystem::remove_all(dir);
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
  // One configuration twice was written, and then refused by check (its metrics checked twice).
  std::ofstream(dir / "twice.json") << R"({"analyze": [{"seq_len": 2048, "devices": 8, "tile": "64x64"},
                                                       {"seq_len": 2048, "devices": 8, "tile": "64x64"}]})";
  const CliResult twice =
      run_cli("check --write-baseline '" + (dir / "t.json").string() + "' --experiment '" + (dir / "twice.json").string() + "'");
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("twice.json analyze[1]: the config of analyze[0] again (its metrics would be recorded and checked twice)"),
            std::string::npos)
      << twice.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "t.json"));
  // In the second command's list the index is that list's, not the file's entries'.
  std::ofstream(dir / "tms_twice.json") << R"({"analyze": [{"seq_len": 2048, "devices": 8, "tile": "64x64"}],
                                           "tms": [{"model": "1b", "hardware": "a100", "devices": 2, "seq_len": 8192},
                                                   {"model": "1b", "hardware": "a100", "devices": 4, "seq_len": 8192},
                                                   {"model": "1b", "hardware": "a100", "devices": 2, "seq_len": 8192}]})";
  const CliResult tms_twice =
      run_cli("check --write-baseline '" + (dir / "t.json").string() + "' --experiment '" + (dir / "tms_twice.json").string() + "'");
  EXPECT_EQ(tms_twice.exit_code, 2);
  EXPECT_NE(tms_twice.err.find("tms_twice.json tms[2]: the config of tms[0] again"), std::string::npos) << tms_twice.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "t.json"));
  // A TMS entry's names and tile are named at its fields, as a simulate entry's are: check has no
  // --hardware flag (the message named one until 2026-12-07), and an empty name is not unknown.
  for (const auto& [field, value, message] :
       {std::tuple{"hardware", "zz", R"(tms[0] field "hardware" = 'zz': unknown, expected one of)"},
        std::tuple{"hardware", "", R"(tms[0] field "hardware": must not be empty)"},
        std::tuple{"model", "", R"(tms[0] field "model": must not be empty)"},
        std::tuple{"tile", "12x", R"(tms[0] field "tile" = '12x': expected TQxTK)"}}) {
    nlohmann::json exp{{"tms", {{{"model", "1b"}, {"hardware", "a100"}, {"devices", 2}, {"seq_len", 8192}}}}};
    exp["tms"][0][field] = value;
    std::ofstream(dir / "bad_tms.json") << exp.dump();
    const CliResult bad =
        run_cli("check --write-baseline '" + (dir / "t.json").string() + "' --experiment '" + (dir / "bad_tms.json").string() + "'");
    EXPECT_EQ(bad.exit_code, 2) << field;
    EXPECT_NE(bad.err.find(message), std::string::npos) << bad.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "t.json"));
  }
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
  // pair metrics do not; a fixed entry without it still passes (the tms one: the analyze entry of
  // fixed tiling without its field would be the varlen one's configuration again, refused).
  doc["entries"][0]["config"].erase("tiling");
  doc["entries"][2]["config"].erase("tiling");
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

// A baseline's numbers are a contract: an entry given twice would be checked twice, a metric no
// count, time or ratio can be is an edited file, and a run whose JUnit file cannot be written
// prints nothing.
TEST(CliCheck, RefusesRepeatedEntriesAndImpossibleMetrics) {
  const auto dir = fresh_dir("stripesim_check_edited");
  const auto base = nlohmann::json::parse(slurp(baseline_file()));
  const std::string first_metric = base.at("entries")[0].at("metrics").begin().key();
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> edits{
      {[](nlohmann::json& d) { d["entries"].push_back(d["entries"][0]); },
       "the command and config of entries[0] again (its metrics would be checked twice)"},
      {[&](nlohmann::json& d) { d["entries"][0]["metrics"][first_metric] = 1e308; }, "= 1e+308 is outside [0, 1e+18]"},
      {[&](nlohmann::json& d) { d["entries"][0]["metrics"][first_metric] = -1; }, "= -1 is outside [0, 1e+18]"}};
  for (const auto& [edit, message] : edits) {
    auto edited = base;
    edit(edited);
    // Refused as the file is read, before any file its entries name is.
    const auto path = dir / "edited.json";
    std::ofstream(path) << edited.dump();
    const CliResult r = run_cli("check --baseline '" + path.string() + "'");
    EXPECT_EQ(r.exit_code, 2) << message;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  const CliResult full = run_cli("check --baseline '" + baseline_file() + "' --junit /dev/full");
  EXPECT_EQ(full.exit_code, 2);
  EXPECT_TRUE(full.out.empty()) << full.out;
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
        BadInput{"report_a_document_it_does_not_draw", "report " + baseline_file() + " --out-dir /tmp/stripesim_never_written",
                 "a stripesim.baseline/1 document, which report does not draw"},
        BadInput{"check_nothing", "check", "check: give --baseline FILE"},
        BadInput{"check_tolerance_empty_item", "check --baseline " + baseline_file() + " --tolerance '1e-6,'",
                 "--tolerance '1e-6,': empty item in a comma-separated list"},
        BadInput{"check_metrics_empty_item", "check --baseline " + baseline_file() + " --metrics 'imbalance,'",
                 "--metrics 'imbalance,': empty item in a comma-separated list"},
        BadInput{"check_limit_empty_item", "check --baseline " + baseline_file() + " --limit 'imbalance<=2,'",
                 "--limit 'imbalance<=2,': empty item in a comma-separated list"},
        BadInput{"check_missing_baseline", "check --baseline /nonexistent/b.json", "does not exist"},
        BadInput{"check_not_a_baseline", "check --baseline " + data("unknown_field_config.json"), "unknown field"},
        BadInput{"check_bad_tolerance", "check --baseline x.json --tolerance -1", "--tolerance '-1': must be a non-negative number"},
        // A tolerance for every metric where limits and patterns judge them all would change nothing.
        BadInput{"check_global_tolerance_decides_nothing", "check --baseline " + baseline_file() + " --limit '*<=1e12' --tolerance 0.5",
                 "--tolerance '0.5': decides no metric's tolerance (each checked metric is judged by a --limit or takes a PATTERN=T tolerance)"},
        BadInput{"check_global_tolerance_beside_catch_all", "check --baseline " + baseline_file() + " --tolerance '0.0001,*=0.2'",
                 "--tolerance '0.0001': decides no metric's tolerance"},
        BadInput{"check_write_without_experiment", "check --write-baseline /tmp/stripesim_never_written", "needs --experiment"},
        BadInput{"check_both", "check --baseline a.json --write-baseline b.json", "excludes"},
        BadInput{"check_experiment_with_baseline", "check --baseline a.json --experiment e.json", "excludes"},
        BadInput{"check_limit_when_writing", "check --write-baseline b.json --experiment e.json --limit 'imbalance<=1.1'", "excludes"},
        BadInput{"check_limit_syntax", "check --baseline " + baseline_file() + " --limit imbalance=1.1",
                 "--limit 'imbalance=1.1': expected METRIC<=VALUE or METRIC>=VALUE"},
        BadInput{"check_limit_value", "check --baseline " + baseline_file() + " --limit 'imbalance<=abc'", "limit 'abc': expected a number"},
        BadInput{"check_pattern_matches_nothing", "check --baseline " + baseline_file() + " --metrics imbalanse",
                 "--metrics 'imbalanse': matches no metric of the baseline"},
        // A pattern inside another selects nothing more: listed, it reads as a wider check.
        BadInput{"check_pattern_inside_another", "check --baseline " + baseline_file() + " --metrics tiles.imbalance,imbalance",
                 "--metrics 'tiles.imbalance': selects no metric the other patterns do not select too; drop it"},
        BadInput{"check_patterns_selecting_alike", "check --baseline " + baseline_file() + " --metrics 'imbalance,*imbalance'",
                 "--metrics 'imbalance': selects no metric the other patterns do not select too; drop it"},
        BadInput{"check_tolerance_pattern_matches_nothing", "check --baseline " + baseline_file() + " --tolerance spred=0.5",
                 "--tolerance 'spred': matches no metric"},
        BadInput{"check_tolerance_pattern_value", "check --baseline " + baseline_file() + " --tolerance spread=-2",
                 "--tolerance 'spread=-2': must be a non-negative number"}),
    bad_input_name);

}  // namespace
}  // namespace stripesim::testing
