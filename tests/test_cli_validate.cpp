// `stripesim validate` end to end on the CPU backend: the check, --calibrate, --compare and their
// files, a profile the simulator then accepts, failing devices (exit 3) and bad input (exit 2).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bad_input_table.hpp"
#include "temp_path.hpp"

namespace stripesim::testing {
namespace {

namespace fs = std::filesystem;

std::string measurements(const std::string& file) {
  return std::string(STRIPESIM_SOURCE_DIR) + "/configs/measurements/h100/" + file;
}

// " --measurements 'PATH'" for every file of a folder of configs/measurements/ ("h100/fa2"), in
// name order; with `names`, for those files only.
std::string measurement_flags(const std::string& folder, const std::set<std::string>& names = {}) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(std::string(STRIPESIM_SOURCE_DIR) + "/configs/measurements/" + folder)) {
    if (names.empty() || names.contains(entry.path().filename().string())) files.push_back(entry.path());
  }
  std::ranges::sort(files);
  std::string flags;
  for (const fs::path& file : files) flags += " --measurements '" + file.string() + "'";
  return flags;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = temp_path("stripesim_validate_" + name);
  fs::remove_all(dir);
  return dir;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CliValidate, DefaultChecksThreeLayoutsAgainstDenseAttention) {
  const CliResult r = run_cli("validate --seq-len 512 --iterations 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.out, " pass "), 3u) << r.out;
  for (const char* layout : {"contiguous n=512 N=4", "striped n=512 N=4", "zigzag n=512 N=4"}) {
    EXPECT_NE(r.out.find(layout), std::string::npos) << r.out;
  }
}

// all_passed speaks for the cases checked, which cases_checked counts: every case by default, none
// under --no-check (whose validate.md says so instead of an empty table). A float64 ring is held
// to 1e-10, against float64 dense attention, and lands far inside it.
TEST(CliValidate, CasesCheckedSayWhatAllPassedCoversAndFp64IsHeldTight) {
  const std::string args = "validate --seq-len 240 --devices 3 --layouts contiguous,zigzag --iterations 1";
  const CliResult checked = run_cli(args + " --dtype fp64 --mask window:50 --pass fwdbwd --format json");
  ASSERT_EQ(checked.exit_code, 0) << checked.err;
  const auto doc = nlohmann::json::parse(checked.out);
  EXPECT_TRUE(doc.at("all_passed").get<bool>());
  EXPECT_EQ(doc.at("cases_checked").get<int>(), 2);
  for (const auto& c : doc.at("cases")) {
    EXPECT_DOUBLE_EQ(c.at("correctness").at("tolerance").get<double>(), 1e-10);
    EXPECT_LT(c.at("correctness").at("relative_error").get<double>(), 1e-13);
  }
  const fs::path dir = fresh_dir("no_check");
  const CliResult unchecked = run_cli(args + " --no-check --format json --out-dir '" + dir.string() + "'");
  ASSERT_EQ(unchecked.exit_code, 0) << unchecked.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "validate.json")).at("cases_checked").get<int>(), 0);
  EXPECT_NE(slurp(dir / "validate.md").find("Not checked (--no-check): no case's output was compared."), std::string::npos);
}

// The command a report records runs again as it is: a value a shell would split or expand is
// quoted (a folder with a space and a quote in its name was recorded bare, and rerunning the
// line passed its halves as two arguments).
// A saved run read from another folder: a permutation file it named by a relative path is
// looked for from here, and the error names the case and says so (it named neither --from nor
// the case, only the file).
TEST(CliValidate, FromNamesTheCaseWhoseRelativeFileIsMissingHere) {
  const fs::path dir = fresh_dir("from_relative");
  fs::create_directories(dir);
  const CliResult perm = run_cli("layout -n 256 -N 2 --layout zigzag");
  ASSERT_EQ(perm.exit_code, 0) << perm.err;
  std::ofstream(dir / "perm.json") << perm.out;
  const std::string absolute = (dir / "perm.json").string();
  const CliResult r = run_cli("validate --seq-len 256 --devices 2 --tile 32x32 --warmup 0 --iterations 1 --layouts 'zigzag,permutation:" +
                              absolute + "' --out-dir '" + (dir / "run").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string saved = slurp(dir / "run" / "validate.json");
  for (size_t at; (at = saved.find(absolute)) != std::string::npos;) saved.replace(at, absolute.size(), "perm-not-here.json");
  std::ofstream(dir / "moved.json") << saved;
  const CliResult again = run_cli("validate --compare --from '" + (dir / "moved.json").string() + "'");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(again.err, "stripesim: error: --from " + (dir / "moved.json").string() +
                           " field \"cases[1]\" field \"layout\" = permutation:perm-not-here.json: file 'perm-not-here.json' does not exist (a saved run "
                           "names its files as its command gave them: a relative path is read from the folder this command runs in, "
                           "not the one the run ran in)\n");
  fs::remove_all(dir);
}

// A saved run, an exported layout and a kernel profile type their counts as integers (their
// schemas say so): "2" is refused naming the field, as 2.0 was, not read as the number.
TEST(CliValidate, CountsWrittenAsTextAreRefusedInFilesOfIntegers) {
  const fs::path dir = fresh_dir("counts_as_text");
  fs::create_directories(dir);
  const CliResult r = run_cli("validate --seq-len 256 --devices 2 --tile 32x32 --warmup 0 --iterations 1 --layouts zigzag --out-dir '" +
                              (dir / "run").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* field : {"devices", "seq_len", "heads", "handoff_bytes"}) {
    nlohmann::json saved = nlohmann::json::parse(slurp(dir / "run" / "validate.json"));
    saved.at("cases")[0][field] = std::to_string(saved.at("cases")[0].at(field).get<std::int64_t>());
    std::ofstream(dir / "text.json") << saved.dump();
    const CliResult again = run_cli("validate --compare --from '" + (dir / "text.json").string() + "'");
    EXPECT_EQ(again.exit_code, 2) << field;
    EXPECT_NE(again.err.find(fmt::format("field \"{}\": expected a positive integer, got \"", field)), std::string::npos) << again.err;
  }
  std::ofstream(dir / "perm.json") << R"({"seq_len": "16", "devices": 2, "blocks": [[0,1,2,3,12,13,14,15],[4,5,6,7,8,9,10,11]]})";
  const CliResult perm = run_cli("analyze -n 16 -N 2 --tile 2x2 --layouts 'permutation:" + (dir / "perm.json").string() + "'");
  EXPECT_EQ(perm.exit_code, 2);
  EXPECT_NE(perm.err.find("field \"seq_len\": expected a positive integer, got \"16\""), std::string::npos) << perm.err;
  nlohmann::json kernel = nlohmann::json::parse(slurp(fs::path(STRIPESIM_SOURCE_DIR) / "configs/kernels/h100/sdpa.json"));
  kernel["blocks_per_sm"] = "1";
  std::ofstream(dir / "kernel.json") << kernel.dump();
  const CliResult k = run_cli("simulate -n 16k -N 2 --kernel '" + (dir / "kernel.json").string() + "'");
  EXPECT_EQ(k.exit_code, 2);
  EXPECT_NE(k.err.find("field \"blocks_per_sm\": expected a positive integer, got \"1\""), std::string::npos) << k.err;
  fs::remove_all(dir);
}

// A hardware profile without a rate for the precision the cases ran in is what to change: the
// error names --hardware, not a --dtype the user never gave (it read "--dtype fp32: ...").
TEST(CliValidate, HardwareWithoutTheCasesRateIsNamedNotTheDefaultDtype) {
  const CliResult r = run_cli("validate --compare --seq-len 128,256 --devices 2 --tile 16x16 --warmup 0 --iterations 1 --hardware tpu-v4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "stripesim: error: --hardware tpu-v4: lists no peak rate for fp32, the precision the cases ran in (the cpu "
                   "backend's default), to price the kernel's calls in it; give a hardware profile that lists one\n");
  const CliResult given = run_cli("validate --compare --seq-len 128,256 --devices 2 --tile 16x16 --warmup 0 --iterations 1 "
                                  "--hardware tpu-v4 --dtype fp32");
  EXPECT_EQ(given.exit_code, 2);
  EXPECT_EQ(given.err, "stripesim: error: --dtype fp32: hardware tpu-v4 lists no peak rate for it\n");
}

TEST(CliValidate, RecordedCommandRunsAgainAsItIs) {
  const fs::path dir = fresh_dir("it's a folder");
  const CliResult r = run_cli("validate --seq-len 256 --devices 2 --layouts zigzag --tile 32x32 --warmup 0 --iterations 1 "
                              "--mask 'window:50' --out-dir \"" + (dir / "first run").string() + "\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string recorded = nlohmann::json::parse(slurp(dir / "first run" / "validate.json")).at("command");
  EXPECT_NE(recorded.find("--mask window:50 "), std::string::npos) << recorded;  // plain words stay bare
  const std::string quoted_dir = "'" + dir.string().substr(0, dir.string().find('\'')) ;
  EXPECT_NE(recorded.find(quoted_dir), std::string::npos) << recorded;
  ASSERT_TRUE(recorded.starts_with("stripesim "));
  fs::remove_all(dir / "first run");
  const CliResult again = run_cli(recorded.substr(std::string("stripesim ").size()));
  ASSERT_EQ(again.exit_code, 0) << again.err << "\n" << recorded;
  EXPECT_TRUE(fs::exists(dir / "first run" / "validate.json"));
  fs::remove_all(dir);
}

TEST(CliValidate, JsonRecordsEveryRoundAndDeviceWithTheWorkModelsCounts) {
  const CliResult r =
      run_cli("validate --seq-len 256 --devices 4 --layouts contiguous --tile 32x32 --iterations 2 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("schema"), "stripesim.validate/1");
  EXPECT_EQ(doc.at("command"), "stripesim validate --layouts contiguous --seq-len 256 --devices 4 --tile 32x32 --iterations 2 --format json");
  const auto& c = doc.at("cases").at(0);
  EXPECT_TRUE(c.at("correctness").at("passed").get<bool>());
  ASSERT_EQ(c.at("rounds").size(), 16u);
  // Contiguous causal, c = 64, 32x32 tiles: device 3 holds its own block in round 0 (3 of 4 tiles
  // active, 2 of them partial on the diagonal) and full earlier blocks after; device 0 sees
  // nothing after round 0, so nothing ran there.
  const auto& round0_device3 = c.at("rounds").at(3);
  EXPECT_EQ(round0_device3.at("active_tiles"), 3);
  EXPECT_EQ(round0_device3.at("partial_tiles"), 2);
  EXPECT_EQ(round0_device3.at("unmasked_pairs"), 64 * 65 / 2);
  const auto& round1_device0 = c.at("rounds").at(4);
  EXPECT_EQ(round1_device0.at("device"), 0);
  EXPECT_EQ(round1_device0.at("active_tiles"), 0);
  EXPECT_EQ(round1_device0.at("kernel_us").at("max"), 0.0);
  EXPECT_GT(round0_device3.at("kernel_us").at("median").get<double>(), 0.0);
  EXPECT_EQ(c.at("unmasked_pairs"), 256 * 257 / 2);
}

TEST(CliValidate, CompareCalibratesOnHalfAndWritesFilesTheSimulatorAccepts) {
  const fs::path dir = fresh_dir("compare");
  const CliResult r = run_cli("validate --compare --seq-len 256 --devices 2,4 --tile 16x16,32x32 --warmup 0 "
                              "--iterations 1 --out-dir '" + dir.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("held-out cases: total error median"), std::string::npos) << r.out;
  const auto doc = nlohmann::json::parse(slurp(dir / "validate.json"));
  ASSERT_EQ(doc.at("cases").size(), 12u);  // 3 layouts x 2 N x 2 tiles
  ASSERT_EQ(doc.at("comparisons").size(), 12u);
  // Order: N, tile, layout. Each (tile, layout) family alternates over N, each family starting
  // where the one before it did not: every tile's fit sees every layout.
  for (size_t i = 0; i < 12; ++i) {
    const bool held_out = (i % 6 + i / 6) % 2 == 1;
    EXPECT_EQ(doc.at("comparisons").at(i).at("role"), held_out ? "held-out" : "calibration") << i;
  }
  EXPECT_EQ(doc.at("errors").at("held-out").at("cases"), 6);
  EXPECT_NE(slurp(dir / "validate.md").find("| held-out | 6 |"), std::string::npos);
  // The fitted profile is a hardware profile like the shipped ones.
  const auto profile = nlohmann::json::parse(slurp(dir / "profile.json"));
  EXPECT_EQ(profile.at("name"), "cpu-calibrated");
  const CliResult sim = run_cli("simulate --hardware '" + (dir / "profile.json").string() + "' --kernel '" +
                                (dir / "kernel.json").string() + "' --seq-len 2048 --devices 4 --heads 2 --head-dim 32 --tile 32x32");
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  // The pair one fit wrote is one device's: no note that the kernel was measured elsewhere (the
  // profile, cpu-calibrated, runs the kernels of cpu, where the kernel says it was measured).
  EXPECT_EQ(sim.out.find("note:"), std::string::npos) << sim.out;
  EXPECT_EQ(profile.at("kernels_from"), "cpu");
  // And the report draws it.
  const CliResult report = run_cli("report '" + (dir / "validate.json").string() + "' --out-dir '" + (dir / "report").string() + "'");
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(slurp(dir / "report" / "report.md").find("| held-out | 6 |"), std::string::npos);
  fs::remove_all(dir);
}

// fp64, the cpu backend's other precision, is fitted and scored like fp32: the simulator that
// predicts the calls prices K/V in 8-byte elements (it refused "fp64" until 2026-12-06, so
// --compare and --calibrate on an fp64 run exited 2 after timing every case), and read back with
// --from. The fitted costs
// stay in the starting profile's precision, the fp64 calls converted by the peaks' ratio.
TEST(CliValidate, Fp64RunsAreComparedAndTheirFitPricesFp64) {
  const fs::path dir = fresh_dir("compare_fp64");
  const CliResult r = run_cli("validate --compare --dtype fp64 --seq-len 256 --devices 2,4 --tile 32x32 --warmup 0 "
                              "--iterations 1 --out-dir '" + dir.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("held-out cases: total error median"), std::string::npos) << r.out;
  // Its saved run is read back, errors of 1e-16 and the fp64 tolerance 1e-10 included (they were
  // refused as below the 1e-9 a physical quantity may take).
  const CliResult again = run_cli("validate --compare --from '" + (dir / "validate.json").string() + "'");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("held-out cases: total error median"), std::string::npos) << again.out;
  const std::string priced = "simulate --hardware '" + (dir / "profile.json").string() + "' --kernel '" +
                             (dir / "kernel.json").string() + "' --seq-len 2048 --devices 4 --heads 2 --head-dim 32 --tile 32x32 "
                             "--format json --dtype ";
  const CliResult fp64 = run_cli(priced + "fp64");
  ASSERT_EQ(fp64.exit_code, 0) << fp64.err;
  // A K/V block of 512 tokens x 2 heads x 32 dims, K and V, in 8 bytes an element.
  EXPECT_EQ(nlohmann::json::parse(fp64.out).at("kv_bytes_per_hop"), 2 * 512 * 2 * 32 * 8);
  const CliResult fp32 = run_cli(priced + "fp32");
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  EXPECT_EQ(nlohmann::json::parse(fp32.out).at("kv_bytes_per_hop"), 2 * 512 * 2 * 32 * 4);
  fs::remove_all(dir);
}

// --pass fwdbwd: the backward ring runs after the forward, its gradients are checked against
// dense ones, its calls are timed where the work model counts tiles, and the fit takes the
// kernel's backward costs from them.
TEST(CliValidate, FwdbwdChecksGradientsAndFitsTheBackwardCosts) {
  const fs::path dir = fresh_dir("fwdbwd");
  const CliResult r = run_cli("validate --pass fwdbwd --compare --seq-len 256 --devices 2,4 --tile 32x32 --warmup 0 "
                              "--iterations 1 --out-dir '" + dir.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(slurp(dir / "validate.json"));
  ASSERT_EQ(doc.at("cases").size(), 6u);  // 3 layouts x 2 N
  for (const auto& c : doc.at("cases")) {
    EXPECT_EQ(c.at("pass"), "fwdbwd");
    for (const char* part : {"dq_relative_error", "dk_relative_error", "dv_relative_error"}) {
      EXPECT_LT(c.at("correctness").at("gradients").at(part).get<double>(), 1e-5) << c.at("label") << " " << part;
    }
    for (const auto& cell : c.at("rounds")) {
      const bool active = cell.at("active_tiles").get<int>() > 0;
      EXPECT_EQ(cell.at("backward_kernel_us").at("max").get<double>() > 0, active) << c.at("label");
    }
  }
  const auto kernel = nlohmann::json::parse(slurp(dir / "kernel.json"));
  EXPECT_EQ(kernel.at("fit").at("backward"), "fitted");
  EXPECT_GT(kernel.at("fit").at("backward_samples").get<int>(), 0);
  // The backward call does 2.5 times the forward's matrix products on a tile (and more exps).
  // A tile's cost is on one of blocks_per_sm places of an SM; each pass may have its own.
  const auto per_sm = [&](const char* pass) {
    const auto& placement = std::string(pass) == "backward" && kernel.contains("backward_placement") ? kernel.at("backward_placement") : kernel;
    return kernel.at(pass).at("full_tile_us").get<double>() / placement.at("blocks_per_sm").get<double>();
  };
  EXPECT_GT(per_sm("backward"), 1.5 * per_sm("forward")) << kernel.dump();
  EXPECT_NE(slurp(dir / "validate.md").find("| dQ | dK | dV |"), std::string::npos);
  fs::remove_all(dir);
}

// A CPU calibration at n = 256 on 2 and 4 devices at `tiles`, its hardware and kernel profiles
// written into `dir`; then a comparison at n = 256 on 2 devices at `tile` that uses them.
struct CpuCalibration {
  std::string profile, kernel;
  CliResult fit;
};
CpuCalibration calibrate_cpu(const fs::path& dir, const std::string& tiles) {
  fs::create_directories(dir);
  CpuCalibration c{(dir / "cpu.json").string(), (dir / "cpu-kernel.json").string(), {}};
  c.fit = run_cli("validate --calibrate --seq-len 256 --devices 2,4 --tile " + tiles + " --warmup 0 --iterations 1 "
                  "--profile-out '" + c.profile + "' --kernel-out '" + c.kernel + "'");
  return c;
}
CliResult compare_with(const CpuCalibration& c, const std::string& tile) {
  return run_cli("validate --compare --profile '" + c.profile + "' --kernel '" + c.kernel + "' --seq-len 256 --devices 2 --tile " +
                 tile + " --layouts zigzag --iterations 1 --format json");
}

TEST(CliValidate, CalibrateWritesAProfileAndCompareCanUseIt) {
  const fs::path dir = fresh_dir("calibrate");
  const CpuCalibration cal = calibrate_cpu(dir, "16x16");
  ASSERT_EQ(cal.fit.exit_code, 0) << cal.fit.err;
  const auto doc = nlohmann::json::parse(slurp(cal.profile));
  EXPECT_TRUE(doc.contains("link_latency_us"));
  // It names the fitted kernel as its default, and says where that kernel went.
  EXPECT_EQ(doc.at("sources").at("kernel"), "the fitted kernel profile is " + cal.kernel);
  const auto fitted = nlohmann::json::parse(slurp(cal.kernel));
  EXPECT_GT(fitted.at("forward").at("full_tile_us").get<double>(), 0.0);
  EXPECT_GE(fitted.at("forward").at("partial_tile_us").get<double>(), fitted.at("forward").at("full_tile_us").get<double>());
  EXPECT_TRUE(fitted.at("calibrated").get<bool>());
  const CliResult use = compare_with(cal, "16x16");
  ASSERT_EQ(use.exit_code, 0) << use.err;
  const auto out = nlohmann::json::parse(use.out);
  EXPECT_EQ(out.at("comparisons").at(0).at("role"), "checked");
  EXPECT_FALSE(out.contains("calibration"));
  // A hardware profile written without its kernel says so (it said the kernel was beside it).
  const std::string alone = (dir / "alone.json").string();
  const CliResult fit_alone = run_cli("validate --calibrate --seq-len 256 --devices 2 --tile 16x16 --warmup 0 --iterations 1 "
                                      "--layouts zigzag --profile-out '" + alone + "'");
  ASSERT_EQ(fit_alone.exit_code, 0) << fit_alone.err;
  EXPECT_NE(nlohmann::json::parse(slurp(alone)).at("sources").at("kernel").get<std::string>().find("was not written"), std::string::npos);
  fs::remove_all(dir);
}

// One device a case times no hand-off: the links are not fitted and nothing says they were (it
// printed the profile's 10 GB/s as a fit of 0 hops, and the profile credited the fit for it).
TEST(CliValidate, CalibrationWithoutHandOffsLeavesTheLinksAsTheyWere) {
  const fs::path dir = fresh_dir("calibrate-one-device");
  fs::create_directories(dir);
  const std::string profile = (dir / "p.json").string();
  const CliResult r = run_cli("validate --calibrate --seq-len 256 --devices 1 --tile 32x32 --warmup 0 --iterations 1 --profile-out '" +
                              profile + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hand-off: not fitted (no hand-off was timed: one device a case)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("hand-off fit"), std::string::npos) << r.out;
  const auto doc = nlohmann::json::parse(slurp(profile));
  EXPECT_TRUE(doc.at("sources").at("link_bandwidth_gbps").get<std::string>().starts_with("not fitted (no hand-off inside a node timed): "));
  fs::remove_all(dir);
}

// Calls timed at two tile shapes, neither the CPU profile's own (64x64): the fitted profile keeps
// its main tile and lists both measured shapes with their own costs, which a comparison then uses.
TEST(CliValidate, CalibrateOverTwoTileShapesFitsEachOnItsOwnCalls) {
  const fs::path dir = fresh_dir("calibrate-tiles");
  const CpuCalibration cal = calibrate_cpu(dir, "16x16,32x32");
  ASSERT_EQ(cal.fit.exit_code, 0) << cal.fit.err;
  const auto fitted = nlohmann::json::parse(slurp(cal.kernel));
  EXPECT_EQ(fitted.at("tile"), "64x64");
  const auto& others = fitted.at("other_tiles");
  ASSERT_EQ(others.size(), 2u);
  EXPECT_EQ(others.at(0).at("tile"), "16x16");
  EXPECT_EQ(others.at(1).at("tile"), "32x32");
  for (const auto& v : others) EXPECT_GT(v.at("forward").at("full_tile_us").get<double>(), 0.0);
  ASSERT_EQ(fitted.at("fit").at("tiles").size(), 2u);
  EXPECT_GT(fitted.at("fit").at("tiles").at(0).at("samples").get<int>(), 0);
  const CliResult use = compare_with(cal, "32x32");
  ASSERT_EQ(use.exit_code, 0) << use.err;
  EXPECT_EQ(nlohmann::json::parse(use.out).at("kernel").at("other_tiles").size(), 2u);
  fs::remove_all(dir);
}

// --from: a saved run is fitted and scored again without running. On the run's own file the
// refit is the run's fit, bit for bit; a file whose counts this stripesim would not give, or
// flags that would run something, are refused.
TEST(CliValidate, FromASavedRunFitsAndPredictsWhatTheRunDid) {
  const fs::path dir = fresh_dir("from-saved");
  const CliResult run = run_cli("validate --compare --pass fwdbwd --seq-len 256 --devices 2,4 --tile 16x16 --warmup 0 --iterations 1 "
                                "--out-dir '" + (dir / "run").string() + "'");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const fs::path saved = dir / "run" / "validate.json";
  const CliResult again = run_cli("validate --compare --from '" + saved.string() + "' --out-dir '" + (dir / "again").string() + "'");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto a = nlohmann::json::parse(slurp(saved));
  const auto b = nlohmann::json::parse(slurp(dir / "again" / "validate.json"));
  EXPECT_EQ(a.at("concurrent_devices"), false);
  EXPECT_EQ(b.at("kernel"), a.at("kernel"));
  EXPECT_EQ(b.at("errors"), a.at("errors"));
  ASSERT_EQ(b.at("cases").size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(b.at("cases").at(i).at("predicted_us"), a.at("cases").at(i).at("predicted_us")) << i;
    EXPECT_EQ(b.at("cases").at(i).at("rounds"), a.at("cases").at(i).at("rounds")) << i;
    EXPECT_GT(b.at("cases").at(i).at("gradient_handoff_bytes").get<double>(), 0.0);
  }
  EXPECT_NE(b.at("command").get<std::string>().find("--from"), std::string::npos);
  // --calibrate --from writes the profile a run would have.
  const CliResult fit = run_cli("validate --calibrate --from '" + saved.string() + "' --kernel-out '" + (dir / "k.json").string() + "'");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_GT(nlohmann::json::parse(slurp(dir / "k.json")).at("backward").at("full_tile_us").get<double>(), 0.0);
  // Refitted from its own fit, a profile keeps its name ("-calibrated" once).
  const CliResult refit = run_cli("validate --calibrate --from '" + saved.string() + "' --kernel '" + (dir / "k.json").string() +
                                  "' --kernel-out '" + (dir / "k2.json").string() + "'");
  ASSERT_EQ(refit.exit_code, 0) << refit.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "k2.json")).at("name"), nlohmann::json::parse(slurp(dir / "k.json")).at("name"));
  EXPECT_TRUE(nlohmann::json::parse(slurp(dir / "k.json")).at("name").get<std::string>().ends_with("-calibrated"));

  auto tampered = a;
  tampered["cases"][1]["rounds"][1]["partial_tiles"] = 999;
  std::ofstream(dir / "tampered.json") << tampered.dump();
  const CliResult bad = run_cli("validate --compare --from '" + (dir / "tampered.json").string() + "' --out-dir '" + (dir / "bad").string() + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("field \"cases[1]\" field \"rounds[1]\" field \"partial_tiles\": 999 in the file"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir / "bad")) << "no partial output";
  // The fields a reader sees but the fit recomputes: a total that is not its rounds' sum, or a
  // value of the wrong type, is refused too.
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> edits = {
      {[](nlohmann::json& d) { d["cases"][0]["active_tiles"] = d["cases"][0]["active_tiles"].get<int>() + 1; },
       "field \"cases[0]\" field \"active_tiles\": "},
      {[](nlohmann::json& d) { d["cases"][2]["unmasked_pairs"] = "12"; },
       "field \"cases[2]\" field \"unmasked_pairs\": expected a non-negative integer, got \"12\""},
      // Counts and indices are integers: 1.5 was read as 1.
      {[](nlohmann::json& d) { d["cases"][1]["rounds"][2]["partial_tiles"] = 1.5; },
       "field \"cases[1]\" field \"rounds[2]\" field \"partial_tiles\": expected a non-negative integer, got 1.5"},
      {[](nlohmann::json& d) { d["cases"][0]["rounds"][0]["round"] = 0.5; },
       "field \"cases[0]\" field \"rounds[0]\" field \"round\": expected a non-negative integer, got 0.5"},
      // A case listed twice would weigh twice in a fit.
      {[](nlohmann::json& d) { d["cases"].push_back(d["cases"][1]); }, "\": the same case as cases[1] (striped n=256 N=2 causal 16x16 fwdbwd): a run measures each case once"},
      {[](nlohmann::json& d) { d["cases"][0]["label"] = nullptr; }, "field \"label\": expected a string, got null"},
      {[](nlohmann::json& d) { d["all_passed"] = "true"; }, "field \"all_passed\": expected true or false"},
      // A verdict its errors do not give, and values the flags' checks refuse, named at their fields.
      {[](nlohmann::json& d) { d["cases"][0]["correctness"]["relative_error"] = 1.0; },
       "field \"cases[0]\" field \"correctness\" field \"passed\": true, but the errors recorded beside it are not below the "
       "tolerance"},
      {[](nlohmann::json& d) { d["cases"][0]["layout"] = "zigzg"; },
       "field \"cases[0]\" field \"layout\" = 'zigzg': unknown layout (did you mean 'zigzag'?)"},
      {[](nlohmann::json& d) { d["cases"][1]["tile"] = "0x4"; }, "field \"cases[1]\" field \"tile\" = '0x4': both tile sides"},
      // A tolerance the file picks itself would let a wrong output pass; an empty hand-off would
      // price every hop at an infinite rate.
      {[](nlohmann::json& d) {
         auto& c = d["cases"][0]["correctness"];
         c["relative_error"] = 0.5;
         c["tolerance"] = 1.0;
       },
       "field \"cases[0]\" field \"correctness\" field \"tolerance\": 1 in the file, but a case in this precision is checked to"},
      {[](nlohmann::json& d) { d["cases"][0]["handoff_bytes"] = 0; }, "field \"cases[0]\" field \"handoff_bytes\": must be at least 1, got 0"},
      {[](nlohmann::json& d) { d["concurrent_devices"] = true; }, "field \"concurrent_devices\": true on backend cpu, which runs its devices in turn"},
      // A ring calls its kernel where a tile is active and nowhere else: a 0 there scored as an
      // exact prediction (and was left out of the fit), a time elsewhere is a call never made;
      // a case cannot run in no time.
      {[](nlohmann::json& d) { d["cases"][0]["wall_us"] = {{"median", 0}, {"min", 0}, {"max", 0}}; },
       "field \"cases[0]\" field \"wall_us\": a median of 0"},
      {[](nlohmann::json& d) {
         for (auto& cell : d["cases"][0]["rounds"]) {
           if (cell["active_tiles"].get<int>() > 0) {
             cell["kernel_us"] = {{"median", 0}, {"min", 0}, {"max", 0}};
             return;
           }
         }
       },
       "field \"kernel_us\": a median of 0 where "},
      {[](nlohmann::json& d) {
         for (auto& c : d["cases"]) {
           for (auto& cell : c["rounds"]) {
             if (cell["active_tiles"].get<int>() == 0) {
               cell["kernel_us"] = {{"median", 5}, {"min", 5}, {"max", 5}};
               return;
             }
           }
         }
       },
       "field \"kernel_us\": a time where no tile is active (the ring makes no call there)"},
      // A cpu run relabelled as a GPU one: cases in a precision no GPU backend computes in.
      {[](nlohmann::json& d) { d["backend"] = "cuda"; }, "field \"cases[0]\" field \"dtype\" = fp32: the cuda backend computes in bf16 or fp16"},
      // The earlier run's prediction and the profiles it predicted with, recomputed here: an
      // edited value is refused, not passed over.
      {[](nlohmann::json& d) { d["cases"][1]["measured_us"] = "zz"; }, "field \"cases[1]\" field \"measured_us\": expected a number, got \"zz\""},
      {[](nlohmann::json& d) { d["cases"][0]["predicted_us"] = -4; }, "field \"cases[0]\" field \"predicted_us\": must not be negative, got -4"},
      {[](nlohmann::json& d) { d["cases"][0]["role"] = "maybe"; },
       "field \"cases[0]\" field \"role\" 'maybe': expected checked, calibration or held-out"},
      {[](nlohmann::json& d) { d["cases"][0]["round_times"][0]["measured_us"] = -1; },
       "field \"cases[0]\" field \"round_times[0]\" field \"measured_us\": must not be negative, got -1"},
      {[](nlohmann::json& d) { d["profile"] = "zz"; }, "field \"profile\": expected a JSON object"},
      {[](nlohmann::json& d) { d["profile"]["sms"] = 5e-324; }, "field \"profile\" field \"sms\": expected a positive integer"},
      {[](nlohmann::json& d) { d["kernel"]["backward"]["launch_us"] = "zz"; },
       "field \"kernel\" field \"backward\" field \"launch_us\": expected a number, got \"zz\""},
  };
  for (const auto& [edit, message] : edits) {
    auto edited = a;
    edit(edited);
    std::ofstream(dir / "edited.json") << edited.dump();
    const CliResult refused = run_cli("validate --compare --from '" + (dir / "edited.json").string() + "'");
    EXPECT_EQ(refused.exit_code, 2) << message;
    EXPECT_NE(refused.err.find(message), std::string::npos) << refused.err;
  }
  // One run given twice, by its path or as a copy, would count its timings twice.
  fs::copy_file(saved, dir / "copy.json");
  const CliResult twice = run_cli("validate --compare --from '" + saved.string() + "' --from '" + saved.string() + "'");
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("given twice (its timings would count twice)"), std::string::npos) << twice.err;
  const CliResult copied = run_cli("validate --compare --from '" + saved.string() + "' --from '" + (dir / "copy.json").string() + "'");
  EXPECT_EQ(copied.exit_code, 2);
  EXPECT_NE(copied.err.find("copy.json: the same contents as "), std::string::npos) << copied.err;
  // Flags a saved run would not read are refused, not ignored.
  const std::vector<std::pair<std::string, std::string>> unread{
      {"--block-costs-kernel flex", "--block-costs-kernel: only with --block-costs"},
      {"--profile '" + (dir / "run" / "profile.json").string() + "' --hardware h100",
       "--hardware, --profile: --profile is the hardware profile --compare predicts with"}};
  for (const auto& [flags, message] : unread) {
    const CliResult refused = run_cli("validate --compare --from '" + saved.string() + "' " + flags);
    EXPECT_EQ(refused.exit_code, 2) << flags;
    EXPECT_NE(refused.err.find(message), std::string::npos) << refused.err;
  }
  const CliResult runs = run_cli("validate --compare --from '" + saved.string() + "' --tile 32x32");
  EXPECT_EQ(runs.exit_code, 2);
  EXPECT_NE(runs.err.find("--tile: not with --from"), std::string::npos) << runs.err;
  fs::remove_all(dir);
}

// FlashAttention-3 has not been timed here: both Hopper profiles are the fit of the calls
// MagiAttention's kernel benchmark published for an H100 (block-costs-fa3-magiattention.json, GQA
// rows of 48 heads over 8), each refitted here from itself to the same costs (a fit that moved
// shows up), fitting those calls within 2 % at the median with the placement FlashAttention-3's
// causal scheduler uses (longest blocks first), and every cost physical: a partial tile between 1x
// and a few x a full tile, no negative time.
TEST(CliValidate, Fa3ProfilesAreTheFitOfThePublishedCalls) {
  const std::string source = std::string(STRIPESIM_SOURCE_DIR) + "/";
  for (const char* gpu : {"h100", "h200"}) {
    const fs::path out = temp_path(std::string("stripesim_fa3_refit_") + gpu + ".json");
    const CliResult r = run_cli(fmt::format("validate --calibrate --hardware {} --kernel fa3 --block-costs '{}' --block-costs-kernel fa3 "
                                            "--kernel-out '{}'",
                                            gpu, source + "configs/measurements/h100/block-costs-fa3-magiattention.json", out.string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto refit = nlohmann::json::parse(slurp(out.string()));
    const auto shipped = nlohmann::json::parse(slurp(source + "configs/kernels/" + gpu + "/fa3.json"));
    fs::remove(out);
    EXPECT_EQ(refit.at("block_order"), "longest_first") << gpu;
    EXPECT_EQ(refit.at("block_order"), shipped.at("block_order")) << gpu;
    EXPECT_EQ(refit.at("blocks_per_sm"), shipped.at("blocks_per_sm")) << gpu;
    for (const char* pass : {"forward", "backward"}) {
      for (const auto& [field, value] : shipped.at(pass).items()) {
        EXPECT_NEAR(refit.at(pass).at(field).get<double>(), value.get<double>(), 1e-4 * std::max(1.0, std::abs(value.get<double>())))
            << gpu << " " << pass << "." << field;
        EXPECT_GE(value.get<double>(), 0.0) << gpu << " " << pass << "." << field;
      }
      const double partial = shipped.at(pass).at("partial_tile_us").get<double>() / shipped.at(pass).at("full_tile_us").get<double>();
      EXPECT_GE(partial, 1.0) << gpu << " " << pass;
      EXPECT_LE(partial, 4.0) << gpu << " " << pass;
    }
    EXPECT_EQ(refit.at("fit").at("samples"), 24) << gpu;
    EXPECT_LE(refit.at("fit").at("median_abs_error").get<double>(), 0.02) << gpu;
  }
}

// A block-costs file is one record: every kernel's columns and a row's device and torch are
// checked, not only --block-costs-kernel's columns (another kernel's -5 us or "NaN" was taken).
TEST(CliValidate, BlockCostsCheckEveryKernelsColumns) {
  const fs::path file = temp_path("stripesim_block_costs_columns.json");
  const fs::path out = temp_path("stripesim_block_costs_columns_kernel.json");
  const std::string row = R"("c": 1024, "heads": 48, "kv_heads": 8, "head_dim": 128, "fa3_full_fwd_us": 46.2, "fa3_full_fwdbwd_us": 238.5,
                             "fa3_causal_fwd_us": 45.6, "fa3_causal_fwdbwd_us": 199.9)";
  for (const auto& [extra, message] : {std::pair{R"("flex_full_fwd_us": -5)", R"(rows[0] field "flex_full_fwd_us": must be positive)"},
                                       std::pair{R"("flex_causal_fwd_us": "NaN")", R"(rows[0] field "flex_causal_fwd_us": expected a number)"},
                                       std::pair{R"("torch": "")", R"(rows[0] field "torch": must not be empty)"},
                                       std::pair{R"("device": [])", R"(rows[0] field "device": expected a string)"}}) {
    std::ofstream(file) << R"({"schema": "stripesim.block-costs/1", "device": "NVIDIA H100", "method": "test", "rows": [{)" + row + ", " +
                               extra + "}]}";
    const CliResult r = run_cli("validate --calibrate --hardware h100 --kernel fa3 --block-costs '" + file.string() +
                                "' --block-costs-kernel fa3 --kernel-out '" + out.string() + "'");
    EXPECT_EQ(r.exit_code, 2) << extra;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
  fs::remove(file);
}

// A block-costs row may give its K/V heads (grouped-query attention); ones that do not divide the
// query heads are refused, one line naming the row, exit 2, nothing written.
TEST(CliValidate, BlockCostsKvHeadsMustDivideTheHeads) {
  const fs::path file = temp_path("stripesim_block_costs_kv.json");
  const fs::path out = temp_path("stripesim_block_costs_kv_kernel.json");
  std::ofstream(file) << R"({"schema": "stripesim.block-costs/1", "device": "NVIDIA H100", "method": "test",
    "rows": [{"c": 1024, "heads": 48, "kv_heads": 5, "head_dim": 128, "fa3_full_fwd_us": 46.2, "fa3_full_fwdbwd_us": 238.5,
              "fa3_causal_fwd_us": 45.6, "fa3_causal_fwdbwd_us": 199.9}]})";
  const CliResult r = run_cli("validate --calibrate --hardware h100 --kernel fa3 --block-costs '" + file.string() +
                              "' --block-costs-kernel fa3 --kernel-out '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("rows[0] field \"kv_heads\" = 5: must divide the 48 heads"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove(file);
}

// A GPU run committed with the project (one H200, fitted there with fixed slots and one placement
// for both passes), fitted again here: the refit tries SMs that share and the backward's own
// placement, and predicts the held-out cases no worse than the GPU node's fit did; its profile is
// the one committed beside the run (shared-sm/), so a change in the fit shows up here.
TEST(CliValidate, FromTheCommittedH200RunRefitsAtLeastAsWell) {
  const std::string runs = std::string(STRIPESIM_SOURCE_DIR) + "/reports/validation/h200-2026-11-25/";
  const std::string file = runs + "cuda-fwdbwd/validate.json";
  const CliResult r = run_cli("validate --compare --from '" + file + "' --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto refit = nlohmann::json::parse(r.out);
  const auto saved = nlohmann::json::parse(slurp(file));
  EXPECT_EQ(refit.at("device"), "NVIDIA H200");
  for (const char* error : {"median_abs_total_error", "max_abs_total_error"}) {
    EXPECT_LE(refit.at("errors").at("held-out").at(error).get<double>(), saved.at("errors").at("held-out").at(error).get<double>())
        << error;
  }
  // The costs within 1e-4 of the committed ones: the fit starts from the shipped profile, and a
  // new start moves a converged fit by rounding only.
  const auto committed = nlohmann::json::parse(slurp(runs + "shared-sm/cuda-fwdbwd/kernel.json"));
  std::function<void(const nlohmann::json&, const nlohmann::json&, const std::string&)> near;
  near = [&](const nlohmann::json& got, const nlohmann::json& want, const std::string& where) {
    if (want.is_number() && got.is_number()) {
      EXPECT_NEAR(got.get<double>(), want.get<double>(), 1e-4 * std::max(1.0, std::abs(want.get<double>()))) << where;
    } else if (want.is_structured() && got.is_structured() && want.size() == got.size()) {
      for (auto it = want.begin(); it != want.end(); ++it) {
        const std::string key = want.is_object() ? it.key() : std::to_string(std::distance(want.begin(), it));
        near(want.is_object() ? got.at(it.key()) : got.at(std::stoul(key)), it.value(), where + "." + key);
      }
    } else {
      EXPECT_EQ(got, want) << where;
    }
  };
  for (const char* field : {"blocks_per_sm", "block_order", "lone_block_speedup", "backward_placement", "forward", "backward", "other_tiles"}) {
    near(refit.at("kernel").value(field, nlohmann::json()), committed.value(field, nlohmann::json()), field);
  }
  // The forward and the backward kernels run on placements of their own.
  EXPECT_NE(refit.at("kernel").at("backward_placement"), nlohmann::json());
  // The forward matrix: the 128x128 kernel (106 KB of shared memory a block) holds 2 blocks per
  // SM, and the refit finds that occupancy with an SM that shares, where fixed slots took 1.
  const std::string forward = runs + "cuda-2/validate.json";
  const CliResult f = run_cli("validate --compare --from '" + forward + "' --format json");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const auto forward_refit = nlohmann::json::parse(f.out);
  const auto forward_saved = nlohmann::json::parse(slurp(forward));
  EXPECT_EQ(forward_saved.at("kernel").at("blocks_per_sm"), 1);
  EXPECT_EQ(forward_refit.at("kernel").at("blocks_per_sm"), 2);
  EXPECT_GT(forward_refit.at("kernel").value("lone_block_speedup", 1.0), 1.0);
  for (const char* error : {"median_abs_total_error", "max_abs_total_error", "median_abs_kernel_error", "max_abs_kernel_error"}) {
    EXPECT_LE(forward_refit.at("errors").at("held-out").at(error).get<double>(),
              forward_saved.at("errors").at("held-out").at(error).get<double>() + 1e-3)
        << error;
  }
}

// The H100 run of 2026-11-27 (committed): the default GPU matrix refitted here gives the GPU
// node's figures (held-out 1.5 % / 6.8 %, the issue's 5 % / 10 %), and the ring, all-gather and
// Ulysses run side by side reports each algorithm's errors apart, recomputed here from its cases:
// fitted on ring cases, the collectives' kernel calls are predicted about as well as the ring's
// while their totals, which carry the one-GPU emulation's own copies, are not, as the note says.
TEST(CliValidate, TheH100RunsErrorsPerContextParallelism) {
  const std::string runs = std::string(STRIPESIM_SOURCE_DIR) + "/reports/validation/h100-2026-11-27/";
  const CliResult d = run_cli("validate --compare --from '" + runs + "cuda/validate.json' --format json");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const auto ring_only = nlohmann::json::parse(d.out);
  EXPECT_EQ(ring_only.at("device"), "NVIDIA H100 80GB HBM3");
  EXPECT_LT(ring_only.at("errors").at("held-out").at("median_abs_total_error").get<double>(), 0.02);
  EXPECT_LT(ring_only.at("errors").at("held-out").at("max_abs_total_error").get<double>(), 0.07);
  EXPECT_FALSE(ring_only.contains("errors_by_cp")) << "one context parallelism: the errors above are its own";
  EXPECT_FALSE(ring_only.contains("notes"));

  const fs::path dir = fresh_dir("h100_cp");
  const CliResult r = run_cli("validate --compare --from '" + runs + "cuda-cp/validate.json' --out-dir '" + dir.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(slurp(dir / "validate.json"));
  const auto& by_cp = doc.at("errors_by_cp");
  ASSERT_EQ(by_cp.size(), 3u);
  // Each algorithm's held-out totals recomputed from its cases.
  std::map<std::string, std::vector<double>> totals;
  for (size_t i = 0; i < doc.at("cases").size(); ++i) {
    const auto& point = doc.at("comparisons").at(i);
    if (point.at("role") != "held-out") continue;
    const double measured = point.at("measured_us"), predicted = point.at("predicted_us");
    totals[doc.at("cases").at(i).at("cp")].push_back(std::abs(predicted - measured) / measured);
  }
  for (const char* cp : {"ring", "allgather", "ulysses"}) {
    std::vector<double>& t = totals.at(cp);
    const auto& held_out = by_cp.at(cp).at("held-out");
    EXPECT_EQ(held_out.at("cases"), t.size()) << cp;
    EXPECT_DOUBLE_EQ(held_out.at("max_abs_total_error").get<double>(), *std::ranges::max_element(t)) << cp;
    EXPECT_NE(r.out.find(fmt::format("  held-out {} ({}): total error median", cp, t.size())), std::string::npos) << r.out;
  }
  EXPECT_FALSE(by_cp.at("allgather").contains("calibration")) << "the fit sees ring cases only";
  const auto kernel_median = [&](const char* cp) { return by_cp.at(cp).at("held-out").at("median_abs_kernel_error").get<double>(); };
  const auto total_median = [&](const char* cp) { return by_cp.at(cp).at("held-out").at("median_abs_total_error").get<double>(); };
  EXPECT_LT(total_median("ring"), 0.03);
  EXPECT_LT(kernel_median("allgather"), 0.04);
  EXPECT_LT(kernel_median("ulysses"), 0.07);
  // Priced as one processor copies them (every part, its own included): all-gather 4.7 %, Ulysses
  // 11.7 % (6.9 % and 17.1 % with the parts devices at once would move); the rest, the note's launches.
  EXPECT_LT(total_median("allgather"), 0.06);
  EXPECT_LT(total_median("ulysses"), 0.13);
  EXPECT_GT(total_median("ulysses"), 0.05) << "the launches the note names";
  ASSERT_EQ(doc.at("notes").size(), 1u);
  EXPECT_NE(doc.at("notes")[0].get<std::string>().find("cuda plays the devices in turn"), std::string::npos);
  EXPECT_NE(r.out.find("\nnote: cuda plays the devices in turn"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir / "validate.md").find("| held-out, ulysses | 18 |"), std::string::npos);
  // A report that carries them is read again (they are recomputed, not trusted) to the same.
  const CliResult again = run_cli("validate --compare --from '" + (dir / "validate.json").string() + "' --format json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out).at("errors_by_cp"), by_cp);
}

// The H200's FlashAttention-2 profile, fitted on H200 ring files and H100 single calls, never on
// an H100 ring: the six H100 ring files timed on 2026-11-27 score it as shipped (--no-fit). The
// same SMs and clocks run the same kernel: its speedups land as close as a fit on the H100's own
// files, each held out, does, and its call times within 1 % median, 6 % worst.
TEST(CliValidate, NoFitScoresTheH200Fa2ProfileOnH100FilesItNeverSaw) {
  const std::string files = measurement_flags("h100/fa2");
  const std::string h200 = std::string(STRIPESIM_SOURCE_DIR) + "/configs/kernels/h200/fa2.json";
  const fs::path dir = fresh_dir("no_fit");
  const CliResult as_given = run_cli("validate --compare --no-fit --hardware h100 --kernel '" + h200 + "'" + files + " --out-dir '" +
                                     dir.string() + "' --format json");
  ASSERT_EQ(as_given.exit_code, 0) << as_given.err;
  const auto doc = nlohmann::json::parse(as_given.out);
  EXPECT_NE(doc.at("method").get<std::string>().find("as given (--no-fit)"), std::string::npos);
  EXPECT_FALSE(doc.contains("fit")) << "nothing was fitted";
  EXPECT_FALSE(fs::exists(dir / "kernel.json")) << "no fitted profile to write";
  EXPECT_TRUE(fs::exists(dir / "accuracy.md"));
  const auto shipped = nlohmann::json::parse(slurp(h200));
  EXPECT_EQ(doc.at("kernel").at("forward"), shipped.at("forward")) << "the profile as shipped";
  EXPECT_EQ(shipped.at("sources").at("costs").get<std::string>().find("measurements/h100/fa2"), std::string::npos) << "not fitted on them";
  const auto& s = doc.at("summary");
  EXPECT_EQ(s.at("speedups"), 12);
  EXPECT_LT(s.at("mean_abs_speedup_error").get<double>(), 0.03);
  EXPECT_LT(s.at("max_abs_speedup_error").get<double>(), 0.08);
  EXPECT_LT(s.at("median_abs_call_error").get<double>(), 0.01);
  EXPECT_LT(s.at("max_abs_call_error").get<double>(), 0.06);
  for (const auto& w : doc.at("workloads")) EXPECT_TRUE(w.at("held_out").get<bool>()) << w.at("group");
  const CliResult refit = run_cli("validate --compare --hardware h100 --kernel fa2" + files + " --format json");
  ASSERT_EQ(refit.exit_code, 0) << refit.err;
  const auto refit_doc = nlohmann::json::parse(refit.out);
  const auto& held_out = refit_doc.at("summary");
  EXPECT_NEAR(s.at("mean_abs_speedup_error").get<double>(), held_out.at("mean_abs_speedup_error").get<double>(), 0.01);
}

// --no-fit scores a profile on files it may have been fitted on: the shipped H100 sdpa profile was
// fitted on four of the six sdpa ring files (its sources.costs names them), not on the 64k x 8 and
// 16k x 2 ones, nor on the retimed 64k x 4 file of the same name in another folder. Those four
// are in-sample, said so in the report, the others held out; an absolute path names the same file
// as the relative one the fit was run with.
TEST(CliValidate, NoFitTellsInSampleFilesFromHeldOutOnes) {
  const CliResult r = run_cli("validate --compare --no-fit --hardware h100 --kernel sdpa" + measurement_flags("h100/sdpa") +
                              " --measurements '" + measurements("sdpa-retimed/causal-fwd-n65536-N4.json") + "' --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  std::map<std::string, bool> held_out;
  for (const auto& w : doc.at("workloads")) held_out[w.at("group").get<std::string>()] = w.at("held_out").get<bool>();
  const std::map<std::string, bool> expected{{"causal-fwd-n16384-N2.json", true},
                                             {"causal-fwd-n32768-N4.json", false},
                                             {"sdpa/causal-fwd-n65536-N4.json", false},
                                             {"causal-fwd-n65536-N8.json", true},
                                             {"causal-fwdbwd-n32768-N4.json", false},
                                             {"causal-fwdbwd-n65536-N4.json", false},
                                             {"sdpa-retimed/causal-fwd-n65536-N4.json", true}};
  EXPECT_EQ(held_out, expected);
  const CliResult md = run_cli("validate --compare --no-fit --hardware h100 --kernel sdpa" + measurement_flags("h100/sdpa"));
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("- in-sample: the profile was fitted on 4 of these 6 groups"), std::string::npos) << md.out.substr(0, 800);
}

// A profile fitted on files in a folder whose name a shell would split records their paths
// quoted, and --no-fit still tells them in-sample from the file it was not fitted on.
TEST(CliValidate, NoFitFindsQuotedFilesTheFitRecorded) {
  const fs::path dir = fresh_dir("quoted fit");
  fs::create_directories(dir);
  for (const char* file : {"causal-fwd-n32768-N4.json", "causal-fwdbwd-n32768-N4.json"}) {
    fs::copy_file(measurements(std::string("sdpa/") + file), dir / file);
  }
  const std::string fitted = " --measurements \"" + (dir / "causal-fwd-n32768-N4.json").string() + "\" --measurements \"" +
                             (dir / "causal-fwdbwd-n32768-N4.json").string() + "\"";
  const CliResult fit = run_cli("validate --calibrate --hardware h100 --kernel sdpa" + fitted + " --kernel-out \"" +
                                (dir / "k.json").string() + "\"");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const CliResult r = run_cli("validate --compare --no-fit --hardware h100 --kernel \"" + (dir / "k.json").string() + "\"" + fitted +
                              " --measurements '" + measurements("sdpa/causal-fwd-n65536-N4.json") + "' --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, bool> held_out;
  const auto doc = nlohmann::json::parse(r.out);
  for (const auto& w : doc.at("workloads")) held_out[w.at("group").get<std::string>()] = w.at("held_out").get<bool>();
  const std::map<std::string, bool> expected{{"causal-fwd-n32768-N4.json", false},
                                             {"causal-fwdbwd-n32768-N4.json", false},
                                             {"causal-fwd-n65536-N4.json", true}};
  EXPECT_EQ(held_out, expected) << r.out.substr(0, 400);
  fs::remove_all(dir);
}

// Fits `files` from `start` (a --kernel argument) into DIR/a.json, then from a.json into b.json:
// the two must agree to rounding (1e-9 relative; the wandering this guards against moved the loss
// by 3 %). Not to the last digit: a fit stops where a step no longer moves the costs, and the
// shares a placement charges each block are sums whose last bits follow the costs, so two such
// stopping points can lie a few ulps apart. Returns a.json.
nlohmann::json expect_refit_unchanged(const std::string& start, const std::string& files, const fs::path& dir) {
  const CliResult first = run_cli("validate --calibrate --hardware h100 --kernel " + start + files + " --kernel-out '" + (dir / "a.json").string() + "'");
  EXPECT_EQ(first.exit_code, 0) << first.err;
  const CliResult again = run_cli("validate --calibrate --hardware h100 --kernel '" + (dir / "a.json").string() + "'" + files +
                                  " --kernel-out '" + (dir / "b.json").string() + "'");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  const auto a = nlohmann::json::parse(slurp(dir / "a.json")), b = nlohmann::json::parse(slurp(dir / "b.json"));
  const auto near = [](const nlohmann::json& x, const nlohmann::json& y, const std::string& where) {
    EXPECT_NEAR(x.get<double>(), y.get<double>(), 1e-9 * std::max(1.0, std::abs(y.get<double>()))) << where;
  };
  for (const char* pass : {"forward", "backward"}) {
    EXPECT_EQ(a.at(pass).size(), b.at(pass).size()) << pass;
    for (auto it = a.at(pass).begin(); it != a.at(pass).end(); ++it) near(it.value(), b.at(pass).at(it.key()), std::string(pass) + "." + it.key());
  }
  for (const char* field : {"blocks_per_sm", "block_order", "lone_block_speedup", "backward_placement"}) {
    EXPECT_EQ(a.value(field, nlohmann::json()), b.value(field, nlohmann::json())) << field;
  }
  near(a.at("fit").at("median_abs_error"), b.at("fit").at("median_abs_error"), "median_abs_error");
  return a;
}

// A fit starts from --kernel's costs, and the calls' placement moves with the costs being fitted,
// so a chain of placements could end worse than the profile it was given: refitting the H100 fa2
// files from a fit's own output wandered from one nearly equal fit to another. A fit also refines
// its start at the start's own placement and keeps the better, so a fitted profile is a fixed point:
// fitted again from itself it comes back unchanged.
TEST(CliValidate, AFittedProfileComesBackUnchangedWhenFittedAgainFromItself) {
  const fs::path dir = fresh_dir("fixed_point");
  fs::create_directories(dir);
  expect_refit_unchanged("fa2", measurement_flags("h100/fa2") + " --block-order launch,longest_first", dir);
  fs::remove_all(dir);
}

// The case that made a fit refit from its own result: the H100 sdpa files, the backward priced on
// its key tiles, fitted from the shipped profile so switched, ended at one block an SM; fitted
// again from that, at two, with a lower loss. Refitting until nothing better comes back, one fit
// now returns the second, and it is a fixed point.
TEST(CliValidate, AFitFromCostsFittedUnderAnotherGridIsAFixedPointToo) {
  const fs::path dir = fresh_dir("fixed_point_key_tiles");
  fs::create_directories(dir);
  auto start = nlohmann::json::parse(slurp(std::string(STRIPESIM_SOURCE_DIR) + "/configs/kernels/h100/sdpa.json"));
  ASSERT_FALSE(start.contains("backward_blocks")) << "the shipped profile's grid changed: pick another start";
  start["backward_blocks"] = "key_tiles";
  std::ofstream(dir / "start.json") << start.dump(2);
  const std::string files =
      measurement_flags("h100/sdpa", {"causal-fwd-n32768-N4.json", "causal-fwd-n65536-N4.json", "causal-fwdbwd-n32768-N4.json",
                                      "causal-fwdbwd-n65536-N4.json"}) +
      " --block-costs '" + std::string(STRIPESIM_SOURCE_DIR) + "/configs/measurements/h100/block-costs-sdpa-flex.json' --block-costs-kernel sdpa";
  const auto fitted = expect_refit_unchanged("'" + (dir / "start.json").string() + "'", files, dir);
  EXPECT_EQ(fitted.at("backward_blocks"), "key_tiles");
  fs::remove_all(dir);
}

// Leave-one-out fits start cold, from tile counts: the shipped profile they would otherwise start
// from was fitted on the very files they hold out, and a fit ends near where it starts. Two
// starting profiles that differ only in their costs (the shipped fa2 and one three times dearer
// with a diagonal at four full tiles) score the held-out files alike, to the last digit.
TEST(CliValidate, LeaveOneOutScoresDoNotDependOnTheStartingProfilesCosts) {
  const std::string files =
      measurement_flags("h100/fa2", {"causal-fwd-n16384-N2.json", "causal-fwd-n32768-N4.json", "causal-fwd-n65536-N8.json"});
  const fs::path dir = fresh_dir("cold_start");
  fs::create_directories(dir);
  auto dear = nlohmann::json::parse(slurp(std::string(STRIPESIM_SOURCE_DIR) + "/configs/kernels/h100/fa2.json"));
  for (const char* pass : {"forward", "backward"}) {
    auto& c = dear.at(pass);
    for (const char* cost : {"launch_us", "block_us", "full_tile_us"}) c[cost] = 3 * c.at(cost).get<double>();
    c["partial_tile_us"] = 4 * c.at("full_tile_us").get<double>();
  }
  std::ofstream(dir / "dear.json") << dear.dump(2);
  std::vector<nlohmann::json> scored;
  for (const std::string& kernel : {std::string("fa2"), "'" + (dir / "dear.json").string() + "'"}) {
    const CliResult r = run_cli("validate --compare --hardware h100 --kernel " + kernel + files + " --format json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    scored.push_back(nlohmann::json::parse(r.out));
  }
  EXPECT_EQ(scored[0].at("summary"), scored[1].at("summary"));
  ASSERT_EQ(scored[0].at("workloads").size(), scored[1].at("workloads").size());
  for (size_t i = 0; i < scored[0].at("workloads").size(); ++i) {
    EXPECT_TRUE(scored[0].at("workloads")[i].at("held_out").get<bool>());
    EXPECT_EQ(scored[0].at("workloads")[i].at("predicted_us"), scored[1].at("workloads")[i].at("predicted_us")) << i;
  }
  fs::remove_all(dir);
}

// The CPU backend's ring measured at head sizes 16, 32, 64 and 128 (committed with the project):
// fitted on the three smaller, the 128 run (above them: FLOPs from 64) is predicted within 6 %
// per case, where the same costs with a tile scaled by FLOPs alone from the profile's 32 miss it
// by 5 points more (the exponential costs about 9 head dims of multiply-adds per score, a share
// the smaller sizes show).
TEST(CliValidate, AHeadSizeHeldOutIsPredictedFromTheOthers) {
  const std::string runs = std::string(STRIPESIM_SOURCE_DIR) + "/reports/validation/cpu-head-dims/";
  const fs::path dir = fresh_dir("head_dims");
  fs::create_directories(dir);
  const std::string kernel = (dir / "k.json").string(), hardware = (dir / "h.json").string();
  const CliResult fit = run_cli("validate --calibrate --from '" + runs + "d16/validate.json' --from '" + runs + "d32/validate.json' --from '" +
                                runs + "d64/validate.json' --kernel-out '" + kernel + "' --profile-out '" + hardware + "'");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto profile = nlohmann::json::parse(slurp(kernel));
  const double s = profile.at("forward").at("score_head_dims").get<double>();
  EXPECT_GT(s, 3.0);
  EXPECT_LT(s, 20.0);
  EXPECT_EQ(profile.at("fit").at("score_head_dims").at("forward"), "fitted on head sizes 16, 32, 64");
  const auto held_out = [&](const std::string& kernel_file) {
    const CliResult r = run_cli("validate --compare --from '" + runs + "d128/validate.json' --profile '" + hardware + "' --kernel '" +
                                kernel_file + "' --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out).at("errors").at("checked");
  };
  const auto with_share = held_out(kernel);
  EXPECT_LE(with_share.at("median_abs_total_error").get<double>(), 0.04);
  EXPECT_LE(with_share.at("max_abs_total_error").get<double>(), 0.06);
  nlohmann::json flops = profile;
  EXPECT_EQ(profile.at("forward").at("score_head_dims_up_to"), 64) << "the share holds as far as it was timed";
  for (auto* costs : {&flops.at("forward")}) costs->erase("score_head_dims"), costs->erase("score_head_dims_up_to");
  for (auto& variant : flops.at("other_tiles")) variant.at("forward").erase("score_head_dims"), variant.at("forward").erase("score_head_dims_up_to");
  const std::string flops_file = (dir / "flops.json").string();
  std::ofstream(flops_file) << flops.dump();
  const auto by_flops = held_out(flops_file);
  EXPECT_GT(by_flops.at("median_abs_total_error").get<double>(), with_share.at("median_abs_total_error").get<double>() + 0.05);
  fs::remove_all(dir);
}

// Several saved runs of one device fitted together: their cases side by side (a forward run and
// a forward+backward one), the report's iteration count the fewest either used; runs of two
// devices are refused with one line naming both files.
TEST(CliValidate, FromSeveralRunsFitsThemTogether) {
  const std::string runs = std::string(STRIPESIM_SOURCE_DIR) + "/reports/validation/h200-2026-11-25/";
  const std::string forward = runs + "cuda-64k/validate.json", fwdbwd = runs + "cuda-fwdbwd-4k/validate.json";
  const CliResult r = run_cli("validate --compare --from '" + forward + "' --from '" + fwdbwd + "' --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto a = nlohmann::json::parse(slurp(forward)), b = nlohmann::json::parse(slurp(fwdbwd));
  ASSERT_EQ(doc.at("cases").size(), a.at("cases").size() + b.at("cases").size());
  EXPECT_EQ(doc.at("cases").front().at("pass"), "fwd");
  EXPECT_EQ(doc.at("cases").back().at("pass"), "fwdbwd");
  EXPECT_EQ(doc.at("iterations").get<int>(), std::min(a.at("iterations").get<int>(), b.at("iterations").get<int>()));
  EXPECT_EQ(doc.at("kernel").at("fit").at("backward"), "fitted");
  EXPECT_GT(doc.at("kernel").at("fit").at("forward_samples").get<int>(), doc.at("kernel").at("fit").at("backward_samples").get<int>());

  const fs::path dir = fresh_dir("from-two-devices");
  fs::create_directories(dir);
  auto other = b;
  other["device"] = "NVIDIA H100 80GB HBM3";
  std::ofstream(dir / "other.json") << other.dump();
  const CliResult bad = run_cli("validate --calibrate --from '" + forward + "' --from '" + (dir / "other.json").string() + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("other.json: device 'NVIDIA H100 80GB HBM3', --from " + forward + " 'NVIDIA H200'"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << "one line: " << bad.err;

  // One fit, one backward kernel: the same run as if its backward had been the tensor-core one
  // is fitted alone (its blocks of 64 keys), refused beside the scalar run and with --profile.
  auto wmma = b;
  for (auto& c : wmma.at("cases")) c["gpu_backward_kernel"] = "wmma";
  std::ofstream(dir / "wmma.json") << wmma.dump();
  const CliResult alone = run_cli("validate --compare --from '" + (dir / "wmma.json").string() + "' --format json");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const auto fitted = nlohmann::json::parse(alone.out);
  EXPECT_EQ(fitted.at("kernel").at("backward_block_keys"), 64);
  EXPECT_EQ(fitted.at("cases").front().at("gpu_backward_kernel"), "wmma");
  const CliResult mixed = run_cli("validate --compare --from '" + fwdbwd + "' --from '" + (dir / "wmma.json").string() + "'");
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("wmma.json: ran the backward kernel wmma, --from " + fwdbwd + " scalar: runs merged for one fit must share it"),
            std::string::npos)
      << mixed.err;
  const CliResult shipped =
      run_cli("validate --compare --from '" + (dir / "wmma.json").string() + "' --profile " + STRIPESIM_SOURCE_DIR + "/configs/hardware/h200.json");
  EXPECT_EQ(shipped.exit_code, 2);
  EXPECT_NE(shipped.err.find("--profile with --gpu-backward-kernel wmma"), std::string::npos) << shipped.err;
  // Behind a forward-only run the wmma run's backward still decides the blocks and the refusal.
  const CliResult behind = run_cli("validate --compare --from '" + forward + "' --from '" + (dir / "wmma.json").string() + "' --format json");
  ASSERT_EQ(behind.exit_code, 0) << behind.err;
  EXPECT_EQ(nlohmann::json::parse(behind.out).at("kernel").at("backward_block_keys"), 64);
  const CliResult behind_shipped = run_cli("validate --compare --from '" + forward + "' --from '" + (dir / "wmma.json").string() +
                                           "' --profile " + STRIPESIM_SOURCE_DIR + "/configs/hardware/h200.json");
  EXPECT_EQ(behind_shipped.exit_code, 2);
  EXPECT_NE(behind_shipped.err.find("--profile with --gpu-backward-kernel wmma"), std::string::npos) << behind_shipped.err;
  auto half = b;  // a hand-edited run whose cases ran different backward kernels
  half.at("cases").front()["gpu_backward_kernel"] = "wmma";
  std::ofstream(dir / "half.json") << half.dump();
  const CliResult both = run_cli("validate --compare --from '" + (dir / "half.json").string() + "'");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("half.json: cases of the wmma and the scalar backward kernel in one run"), std::string::npos) << both.err;
  fs::remove_all(dir);
}

// The validator's own kernel profile shipped for the H200 predicts calls it was not fitted on: its
// forward, fitted on the calibration half of the 2026-11-27 run, that run's held-out half; its
// backward (a kernel unchanged since), fitted on two 2026-11-25 runs, a third one (4k fwdbwd).
// A saved validator run (`validate --compare`) rescored with a shipped H200 profile: the relative
// error of every timed call of the cases the run held out of its fit, sorted.
std::vector<double> held_out_call_errors(const std::string& run, const std::string& profile,
                                         const std::string& hardware = "h200") {
  const std::string source = STRIPESIM_SOURCE_DIR;
  const auto saved = nlohmann::json::parse(slurp(run));
  std::set<std::string> held_out;
  for (const auto& c : saved.at("cases")) {
    if (c.at("role") == "held-out") held_out.insert(c.at("label").get<std::string>());
  }
  EXPECT_EQ(held_out.size(), 18u) << run;
  const CliResult r = run_cli("validate --compare --from '" + run + "' --kernel '" + profile + "' --profile '" + source +
                              "/configs/hardware/" + hardware + ".json' --format json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<double> errors;
  if (r.exit_code != 0) return errors;
  for (const auto& c : nlohmann::json::parse(r.out).value("cases", nlohmann::json::array())) {
    if (!held_out.contains(c.at("label").get<std::string>())) continue;
    for (const auto& round : c.at("rounds")) {
      const double measured = round.at("kernel_us").at("median").get<double>();
      if (measured > 0) errors.push_back(std::abs(round.at("predicted_kernel_us").get<double>() / measured - 1));
    }
  }
  std::ranges::sort(errors);
  return errors;
}

TEST(CliValidate, ShippedH200ValidatorProfilePredictsRunsItWasNotFittedOn) {
  const std::string source = STRIPESIM_SOURCE_DIR;
  const std::string profile = source + "/configs/kernels/h200/stripesim-flash.json";
  const auto shipped = nlohmann::json::parse(slurp(profile));
  const auto score = [&](const std::string& run) {
    const CliResult r = run_cli("validate --compare --from '" + run + "' --kernel '" + profile + "' --profile '" + source +
                                "/configs/hardware/h200.json' --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };

  const std::vector<double> errors =
      held_out_call_errors(source + "/reports/validation/h200-2026-11-27/cuda/validate.json", profile);
  ASSERT_EQ(errors.size(), 434u);
  EXPECT_LE(errors[errors.size() / 2], 0.02) << "median forward call";
  EXPECT_LE(errors.back(), 0.06) << "worst forward call";
  // A later run of the same kernel (its rows' code moved to flash_rows.cuh), on another H200
  // lease: none of it was fitted on.
  const std::vector<double> later =
      held_out_call_errors(source + "/reports/validation/h200-2026-11-27-wgmma/call1/cuda-flash/validate.json", profile);
  ASSERT_EQ(later.size(), 434u);
  EXPECT_LE(later[later.size() / 2], 0.03) << "median forward call, later run";
  EXPECT_LE(later.back(), 0.09) << "worst forward call, later run";

  EXPECT_EQ(shipped.at("sources").at("costs").get<std::string>().find("cuda-fwdbwd-4k"), std::string::npos) << "held out";
  const auto backward = score(source + "/reports/validation/h200-2026-11-25/cuda-fwdbwd-4k/validate.json");
  ASSERT_TRUE(backward.contains("errors"));
  EXPECT_LE(backward.at("errors").at("checked").at("median_abs_kernel_error").get<double>(), 0.02);
  EXPECT_LE(backward.at("errors").at("checked").at("max_abs_kernel_error").get<double>(), 0.06);
}

// The wgmma kernel's profile, fitted on the calibration half of its first default-matrix run
// (from the flash profile), predicts the 434 calls of the 18 cases that run held out.
TEST(CliValidate, ShippedH200WgmmaProfilePredictsTheCasesItWasNotFittedOn) {
  const std::string source = STRIPESIM_SOURCE_DIR;
  const std::vector<double> errors =
      held_out_call_errors(source + "/reports/validation/h200-2026-11-27-wgmma/call3/cuda-wgmma/validate.json",
                           source + "/configs/kernels/h200/stripesim-wgmma.json");
  ASSERT_EQ(errors.size(), 434u);
  EXPECT_LE(errors[errors.size() / 2], 0.025) << "median forward call";
  EXPECT_LE(errors.back(), 0.08) << "worst forward call";
}

// The H100's validator profiles, fitted on the calibration half of the default matrix of each
// kernel (the second H100 lease of 2026-11-27), predict the 434 calls of the 18 cases held out.
TEST(CliValidate, ShippedH100ValidatorProfilesPredictTheCasesTheyWereNotFittedOn) {
  const std::string source = STRIPESIM_SOURCE_DIR;
  const std::string run = source + "/reports/validation/h100-2026-11-27-wgmma/";
  const std::vector<double> flash =
      held_out_call_errors(run + "cuda/validate.json", source + "/configs/kernels/h100/stripesim-flash.json", "h100-sxm");
  ASSERT_EQ(flash.size(), 434u);
  EXPECT_LE(flash[flash.size() / 2], 0.015) << "median forward call";
  EXPECT_LE(flash.back(), 0.09) << "worst forward call";
  const std::vector<double> wgmma =
      held_out_call_errors(run + "cuda-wgmma/validate.json", source + "/configs/kernels/h100/stripesim-wgmma.json", "h100-sxm");
  ASSERT_EQ(wgmma.size(), 434u);
  EXPECT_LE(wgmma[wgmma.size() / 2], 0.025) << "median forward call";
  EXPECT_LE(wgmma.back(), 0.08) << "worst forward call";
}

// Two runs of one workload keep their file's name: each is its own workload, named by as much of
// its path as tells them apart, and each layout's speedup comes from its own file's contiguous
// (taken for one workload, the second file's calls were scored against the first's). The same
// file given twice would count its timings twice: refused.
TEST(CliValidate, SameNamedMeasurementFilesStayApart) {
  const std::string shared = measurements("sdpa/causal-fwd-n65536-N4.json");
  const std::string retimed = measurements("sdpa-retimed/causal-fwd-n65536-N4.json");
  const CliResult r = run_cli("validate --compare --no-fit --hardware h100 --kernel sdpa --measurements '" + shared +
                              "' --measurements '" + retimed + "' --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  std::map<std::string, double> striped;
  for (const auto& w : doc.at("workloads")) {
    if (w.at("layout") == "striped") striped[w.at("group").get<std::string>()] = w.at("measured_speedup").get<double>();
  }
  ASSERT_EQ(striped.size(), 2u) << r.out.substr(0, 400);
  // Each file's own lockstep times (contiguous 11732 and 12756 us, striped 7909 and 7907).
  EXPECT_NEAR(striped.at("sdpa/causal-fwd-n65536-N4.json"), 1.483, 0.001);
  EXPECT_NEAR(striped.at("sdpa-retimed/causal-fwd-n65536-N4.json"), 1.613, 0.001);

  const CliResult twice = run_cli("validate --compare --no-fit --hardware h100 --kernel sdpa --measurements '" + shared +
                                  "' --measurements '" + shared + "'");
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("causal-fwd-n65536-N4.json: given twice"), std::string::npos) << twice.err;
  EXPECT_TRUE(twice.out.empty());
}

// Three of the shared H100 SDPA workloads timed again on another H100, with two more at 128k
// (configs/measurements/h100/sdpa-retimed/): the shipped profile, fitted on none of them, gives
// their layout speedups within 0.041 mean, 0.139 worst; and the retimed H100 agrees with the
// H200 (same SMs and clocks) within 0.05 where both timed a workload, while the shared files lie
// up to 0.14 from it (striped forward at 64k x 4: 1.48 against 1.62).
TEST(CliValidate, ShippedSdpaProfilePredictsWorkloadsRetimedOnAnotherH100) {
  const auto speedups = [](const std::string& hardware, const std::string& folder, const std::set<std::string>& names) {
    const CliResult r = run_cli("validate --compare --no-fit --hardware " + hardware + " --kernel sdpa" + measurement_flags(folder, names) +
                                " --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const auto retimed = speedups("h100", "h100/sdpa-retimed", {});
  ASSERT_TRUE(retimed.contains("summary"));
  EXPECT_EQ(retimed.at("summary").at("speedups"), 10);
  EXPECT_LE(retimed.at("summary").at("mean_abs_speedup_error").get<double>(), 0.045);
  EXPECT_LE(retimed.at("summary").at("max_abs_speedup_error").get<double>(), 0.15);

  const std::set<std::string> shared_names = {"causal-fwd-n65536-N4.json", "causal-fwdbwd-n32768-N4.json", "causal-fwdbwd-n65536-N4.json"};
  const auto measured = [](const nlohmann::json& doc) {
    std::map<std::string, double> out;  // "file layout" -> measured speedup
    for (const auto& w : doc.value("workloads", nlohmann::json::array())) {
      if (w.at("measured_speedup").is_null()) continue;
      const std::string group = w.at("group").get<std::string>();
      out[group.substr(group.rfind('/') + 1) + " " + w.at("layout").get<std::string>()] = w.at("measured_speedup").get<double>();
    }
    return out;
  };
  const auto h200 = measured(speedups("h200", "h200/sdpa", shared_names));
  const auto again = measured(retimed);
  const auto shared = measured(speedups("h100", "h100/sdpa", shared_names));
  ASSERT_EQ(h200.size(), 6u);
  double retimed_off = 0, shared_off = 0;
  for (const auto& [key, value] : h200) {
    retimed_off = std::max(retimed_off, std::abs(again.at(key) - value));
    shared_off = std::max(shared_off, std::abs(shared.at(key) - value));
  }
  EXPECT_LE(retimed_off, 0.05);
  EXPECT_GE(shared_off, 0.13);
}

// One FlashAttention-2 call over a whole sequence at 1 to 32 heads (Ulysses' call: the full
// sequence on H/U heads), timed on an H100 (configs/measurements/h100/block-costs-fa2-sdpa-heads.json).
// A causal call at few heads leaves SMs with one block or none. The fa2 profile shipped until
// 2026-11-27 (one block an SM: the H200 ring files at 16 heads fit one or two alike) gave those
// calls 8-22 % short. Fitted with them, the profile takes two blocks an SM with a lone block at
// the whole SM's rate (the kernel's 255 registers a thread x 128 threads leave room for two), and
// predicts them within 10 %; the fit run here finds that placement again.
TEST(CliValidate, FewHeadedLongCallsPinFlashAttention2sPlacement) {
  const std::string calls = measurements("block-costs-fa2-sdpa-heads.json");
  const auto few_headed_causal_errors = [&](const std::string& kernel) {
    const CliResult r = run_cli("validate --compare --no-fit --hardware h100 --kernel " + kernel + " --block-costs '" + calls +
                                "' --block-costs-kernel fa2 --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<double> errors;
    if (r.exit_code != 0) return errors;
    const auto doc = nlohmann::json::parse(r.out);
    for (const auto& w : doc.at("workloads")) {
      const std::string group = w.at("group").get<std::string>();
      if (w.at("seq_len").get<int64_t>() < 32768 || w.at("heads").get<int64_t>() > 4 || !group.ends_with(" causal fwd")) continue;
      errors.push_back(w.at("predicted_us").at(0).get<double>() / w.at("measured_us").at(0).get<double>() - 1);
    }
    std::ranges::sort(errors);
    return errors;
  };
  const std::vector<double> shipped = few_headed_causal_errors("fa2");
  ASSERT_EQ(shipped.size(), 6u);  // 32k and 128k x 1, 2, 4 heads
  EXPECT_GT(shipped.front(), -0.10);
  EXPECT_LT(shipped.back(), 0.10);

  const fs::path dir = fresh_dir("fa2-heads");
  fs::create_directories(dir);
  const CliResult fit = run_cli("validate --calibrate --hardware h100 --kernel fa2 --block-order launch,longest_first" + measurement_flags("h100/fa2") +
                                " --block-costs '" + calls + "' --block-costs-kernel fa2 --kernel-out '" + (dir / "fa2.json").string() + "'");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto fitted = nlohmann::json::parse(slurp(dir / "fa2.json"));
  EXPECT_EQ(fitted.at("blocks_per_sm"), 2);
  EXPECT_EQ(fitted.at("lone_block_speedup"), 2.0);
  const std::vector<double> refit = few_headed_causal_errors("'" + (dir / "fa2.json").string() + "'");
  ASSERT_EQ(refit.size(), 6u);
  EXPECT_GT(refit.front(), -0.10);
  EXPECT_LT(refit.back(), 0.10);
}

// The H200's ring files time 8k-16k tokens a device, which leave a backward call's fixed cost
// unpinned (fitted on them alone it came out 0, a 1k-token causal call 2.6x short); the H200 has
// the H100's SMs and clocks, so its sdpa fit takes the H100's single cuDNN calls too. Those calls,
// scored on the shipped profile: the small causal calls within 1.5x (the forward+backward 1.44x
// short when this was written, against 2.6x before), the launch a physical one.
TEST(CliValidate, TheH200SdpaProfilePricesSmallCallsFromTheH100sSingleCalls) {
  const CliResult r = run_cli("validate --compare --no-fit --hardware h200 --kernel sdpa --block-costs " +
                              measurements("block-costs-sdpa-flex.json") + " --block-costs-kernel sdpa --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const double launch = doc.at("kernel").at("backward").at("launch_us").get<double>();
  EXPECT_GT(launch, 50.0);
  EXPECT_LT(launch, 300.0);
  int small = 0;
  for (const auto& w : doc.at("workloads")) {
    const std::string group = w.at("group").get<std::string>();
    if (group.find("causal") == std::string::npos || group.find("c=1024") == std::string::npos) continue;
    const double ratio = w.at("measured_lockstep_us").get<double>() / w.at("predicted_lockstep_us").get<double>();
    EXPECT_GT(ratio, 1 / 1.5) << group;
    EXPECT_LT(ratio, 1.5) << group;
    ++small;
  }
  EXPECT_EQ(small, 2);
}

// The committed report reports/kernels/FOLDER/accuracy.json (which the README quotes) is the run
// `doc`: a change to the time model or the fit that moves these numbers must regenerate it with
// its recorded command (the h100 sdpa report once went stale this way).
void expect_committed_report_is(const std::string& folder, const nlohmann::json& doc) {
  std::ifstream committed_file(std::string(STRIPESIM_SOURCE_DIR) + "/reports/kernels/" + folder + "/accuracy.json");
  ASSERT_TRUE(committed_file) << folder;
  const auto committed = nlohmann::json::parse(committed_file);
  for (const char* part : {"summary", "consistency_floor"}) {
    for (const char* field : {"median_abs_call_error", "max_abs_call_error", "mean_abs_speedup_error", "max_abs_speedup_error"}) {
      EXPECT_NEAR(committed.at(part).at(field).get<double>(), doc.at(part).at(field).get<double>(), 1e-9)
          << "reports/kernels/" << folder << " is stale: " << part << " " << field;
    }
  }
}

// `validate --compare ARGS --format json`, parsed, its layout speedups checked: `count` of them,
// their error within `mean` on average and `worst` at most. An empty object if the run failed.
nlohmann::json compare_speedups_within(const std::string& args, int count, double mean, double worst) {
  const CliResult r = run_cli("validate --compare " + args + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  auto doc = nlohmann::json::parse(r.out);
  const auto& s = doc.at("summary");
  EXPECT_EQ(s.at("speedups"), count);
  EXPECT_LE(s.at("mean_abs_speedup_error").get<double>(), mean);
  EXPECT_LE(s.at("max_abs_speedup_error").get<double>(), worst);
  return doc;
}

// ring-flash-attention's earlier benchmark shape, 5 heads of 128 at 8k tokens per GPU over 8 (its
// published 5-head rows), timed on an H100 after the fa2 profile was fitted and kept out of it
// (configs/measurements/h100/fa2-5heads/): a few-headed ring that the placement decides. The
// shipped profile gives its layout speedups within 0.060 mean, 0.069 worst (0.056 / 0.064 as
// fitted before its refit of 2026-11-28; the one-block-an-SM profile shipped before that: 0.071 /
// 0.105).
TEST(CliValidate, ShippedFa2ProfilePredictsAFiveHeadRingItNeverSaw) {
  const auto doc = compare_speedups_within("--no-fit --hardware h100 --kernel fa2" + measurement_flags("h100/fa2-5heads"), 4, 0.065, 0.075);
  for (const auto& w : doc.value("workloads", nlohmann::json::array())) EXPECT_EQ(w.at("heads"), 5);
}

// The eleven shared H100 flex workloads timed again on one H200 (2026-11-28) in interleaved
// passes (configs/measurements/h200/flex): no layout of any file was timed in another state of
// the GPU (the report names no file, where it names three of the shared H100 files), the
// consistency floor falls from 0.128 / 0.816 to 0.010 / 0.033, and the window n=64k layouts that
// set the H100 files' worst error (measured 1.66x and 1.75x there, predicted 0.94x and 0.90x) come
// out 0.98x and 0.93x, as predicted. Held out a file at a time: speedups 0.029 / 0.133 with flex's
// backward priced on its own two sets of blocks (0.036 / 0.133 with the query tiles standing in);
// reports/kernels/h200-flex, which the README quotes, must be this run's.
TEST(CliValidate, RetimedH200FlexFilesAgreeWithThemselvesAndTheModel) {
  const auto doc = compare_speedups_within("--hardware h200 --kernel flex" + measurement_flags("h200/flex"), 22, 0.033, 0.14);
  ASSERT_TRUE(doc.contains("summary"));
  EXPECT_TRUE(doc.at("timing_drift").empty()) << doc.at("timing_drift").dump();
  const auto& floor = doc.at("consistency_floor");
  EXPECT_LE(floor.at("mean_abs_speedup_error").get<double>(), 0.02);
  EXPECT_LE(floor.at("max_abs_speedup_error").get<double>(), 0.05);
  int window_layouts = 0;
  for (const auto& w : doc.at("workloads")) {
    if (w.at("group") != "window4096-fwd-n65536-N4.json" || w.at("measured_speedup").is_null()) continue;
    ++window_layouts;
    EXPECT_LT(w.at("measured_speedup").get<double>(), 1.0) << w.at("layout");
    EXPECT_NEAR(w.at("predicted_speedup").get<double>(), w.at("measured_speedup").get<double>(), 0.05) << w.at("layout");
  }
  EXPECT_EQ(window_layouts, 2);
  expect_committed_report_is("h200-flex", doc);
}

// Five flex workloads timed on the same H200 after the eleven above, in other processes, and kept
// out of every fit (configs/measurements/h200/flex-heldout): what users ask about and no shipped
// file holds, 8 devices, windows of 2048, 8192 and 16384 tokens, forward+backward at 64k x 8. The
// shipped H200 flex profile, fitted on the eleven, gives their layout speedups within 0.026 mean,
// 0.075 worst (the issue's floor: 0.05 / 0.10; 0.029 / 0.097 with the query tiles standing in for
// the backward's key tiles); their calls sit up to 18 % below the prediction, a
// run-to-run offset the speedups do not carry (the same 8k x 8k call took 1502-1523 us in the
// first process, 1352-1442 us in these).
TEST(CliValidate, ShippedH200FlexProfilePredictsWorkloadsItNeverSaw) {
  const auto doc = compare_speedups_within("--no-fit --hardware h200 --kernel flex" + measurement_flags("h200/flex-heldout"), 10, 0.03, 0.085);
  // None of them is a workload the profile was fitted on.
  for (const auto& w : doc.value("workloads", nlohmann::json::array())) {
    const std::string mask = w.at("mask").get<std::string>();
    EXPECT_TRUE(w.at("devices") == 8 || (mask.starts_with("window:") && mask != "window:4096")) << w.at("group");
  }
}

// The first timings of a prefix-LM mask (configs/measurements/h200/flex-prefix: flex_attention on
// an H200, 2026-11-29, three interleaved passes; prefix:8192 at 32k x 4, prefix:16384 at 64k x 8),
// a mask no fit has seen: the shipped H200 flex profile gives their layout speedups within 0.013
// mean, 0.031 worst, under the issue's 0.05 / 0.10; reports/kernels/h200-flex-prefix is the run.
TEST(CliValidate, ShippedH200FlexProfilePredictsPrefixMasksItNeverSaw) {
  const auto doc = compare_speedups_within("--no-fit --hardware h200 --kernel flex" + measurement_flags("h200/flex-prefix"), 4, 0.05, 0.10);
  for (const auto& w : doc.value("workloads", nlohmann::json::array())) {
    EXPECT_TRUE(w.at("mask").get<std::string>().starts_with("prefix:")) << w.at("group");
  }
  expect_committed_report_is("h200-flex-prefix", doc);
}

// All sixteen H200 flex files (the eleven and the five), each held out of a fit on the other
// fifteen (README, "How accurate is it": 0.033 / 0.094, calls 3.5 % median when this was
// written): the issue's per-call floor, 5 %, holds, and so does its 0.05 / 0.10 on the speedups.
TEST(CliValidate, H200FlexFilesEachHeldOutOfTheOtherFifteen) {
  const auto doc = compare_speedups_within("--hardware h200 --kernel flex" + measurement_flags("h200/flex") +
                                               measurement_flags("h200/flex-heldout"),
                                           32, 0.037, 0.10);
  ASSERT_TRUE(doc.contains("summary"));
  EXPECT_LE(doc.at("summary").at("median_abs_call_error").get<double>(), 0.05);
}

// The acceptance floor of the kernel cost model: leave one file out over the shipped H100
// measurements, every held-out file predicted by a fit on the others.
TEST(CliValidate, KernelFitOnShippedMeasurementsPredictsHeldOutFiles) {
  for (const std::string kernel : {"sdpa", "flex"}) {
    // The files each shipped profile was fitted on: every flex file, and the four sdpa files of
    // reports/kernels/h100-sdpa (the two timed on 2026-11-27 score the shipped profile instead;
    // a fit that adds them, forward only, moves the backward's partial tile to 6 full tiles:
    // causal files do not pin that split).
    const std::string files =
        kernel == "sdpa" ? measurement_flags("h100/sdpa", {"causal-fwd-n32768-N4.json", "causal-fwd-n65536-N4.json",
                                                           "causal-fwdbwd-n32768-N4.json", "causal-fwdbwd-n65536-N4.json"})
                         : measurement_flags("h100/flex");
    const CliResult r = run_cli("validate --compare --hardware h100 --kernel " + kernel + files + " --block-costs " +
                                measurements("block-costs-sdpa-flex.json") + " --block-costs-kernel " + kernel + " --format json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    const auto& s = doc.at("summary");
    EXPECT_LE(s.at("median_abs_call_error").get<double>(), 0.05) << kernel;  // the issue's floor
    EXPECT_LE(s.at("mean_abs_speedup_error").get<double>(), kernel == "sdpa" ? 0.08 : 0.20) << kernel;
    // What the files themselves allow (equal work, unequal times): the model stays near it. sdpa
    // lies further off (0.053 when this was written): its files' backward costs 8 % more per tile
    // at 16k tokens per device than at 8k, which one cost per tile cannot give both sizes, and
    // leaving one size out leaves one size to fit (retimed on another H100, it does not).
    const auto& floor = doc.at("consistency_floor");
    expect_committed_report_is("h100-" + kernel, doc);
    EXPECT_LE(floor.at("mean_abs_speedup_error").get<double>(), s.at("mean_abs_speedup_error").get<double>()) << kernel;
    EXPECT_LE(s.at("mean_abs_speedup_error").get<double>() - floor.at("mean_abs_speedup_error").get<double>(),
              kernel == "sdpa" ? 0.06 : 0.03)
        << kernel;
    // Physical costs: nothing negative, a partial tile between one and a few full tiles.
    for (const char* pass : {"forward", "backward"}) {
      const auto& c = doc.at("kernel").at(pass);
      EXPECT_GE(c.at("launch_us").get<double>(), 0.0);
      EXPECT_GE(c.at("block_us").get<double>(), 0.0);
      const double ratio = c.at("partial_tile_us").get<double>() / c.at("full_tile_us").get<double>();
      EXPECT_GE(ratio, 1.0) << kernel << " " << pass;
      EXPECT_LE(ratio, 4.0) << kernel << " " << pass;
    }
    // sdpa runs striped's blocks from later devices trimmed to q[1:] x k[:-1]: its backward takes
    // longer on them (2294 against 2130 us at 32k in the files), its forward does not.
    if (kernel == "sdpa") {
      EXPECT_GT(doc.at("kernel").at("backward").at("trimmed_factor").get<double>(), 1.05);
      EXPECT_LT(doc.at("kernel").at("backward").at("trimmed_factor").get<double>(), 1.2);
      EXPECT_NEAR(doc.at("kernel").at("forward").at("trimmed_factor").get<double>(), 1.0, 0.03);
    } else {
      EXPECT_FALSE(doc.at("kernel").at("forward").contains("trimmed_factor"));
    }
  }
}

// Causal timings cannot price a partial tile on its own: each block holds at most its diagonal
// tile, so that tile's cost moves with anything a masked block pays. Fitted on the seven causal
// flex files alone, a partial tile comes out at 6.6 full tiles, and the window and documents files are
// then predicted 41 % off on average (the fit on every file: 1.4 full tiles, 12 %). The fit
// record says which case a profile is in.
TEST(CliValidate, FitRecordSaysWhetherPartialTilesWerePricedApart) {
  const fs::path dir = fresh_dir("partial-tiles");
  fs::create_directories(dir);
  const auto fit_record = [&](const std::vector<std::string>& names) {
    std::string files;
    for (const std::string& name : names) files += " --measurements " + measurements("flex/" + name);
    const fs::path out = dir / "kernel.json";
    const CliResult r = run_cli("validate --calibrate --hardware h100 --kernel flex" + files + " --kernel-out '" + out.string() + "'");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(slurp(out)).at("fit").at("partial_tiles").get<std::string>();
  };
  const std::string causal = fit_record({"causal-fwd-n32768-N4.json", "causal-fwdbwd-n32768-N4.json"});
  EXPECT_EQ(causal.rfind("not identified", 0), 0u) << causal;
  // A window's band gives each query tile two partial tiles (its diagonal and its far edge).
  EXPECT_EQ(fit_record({"causal-fwd-n32768-N4.json", "window4096-fwd-n32768-N4.json"}),
            "identified: timed blocks carry up to 2 partial tiles");
  // Fixed 128-token tiles cut across documents: a tile row crosses many document diagonals.
  const std::string documents = fit_record({"documents-seed3-fwd-n32768-N4.json"});
  EXPECT_EQ(documents.rfind("identified: timed blocks carry up to ", 0), 0u) << documents;
  // What the shipped profiles say: flex was timed under windows and documents, sdpa only causal.
  const auto shipped = [](const char* path) {
    return nlohmann::json::parse(slurp(fs::path(STRIPESIM_SOURCE_DIR) / path)).at("fit").at("partial_tiles").get<std::string>();
  };
  EXPECT_EQ(shipped("configs/kernels/h100/flex.json").rfind("identified", 0), 0u);
  EXPECT_EQ(shipped("configs/kernels/h100/sdpa.json").rfind("not identified", 0), 0u);
  fs::remove_all(dir);
}

// The README's figures for the same point ("What causal timings cannot tell"), against the
// measured files: the seven causal flex files alone put a partial tile at 6.6 full tiles and
// miss the window and documents files' lockstep times by 41 % on average; the shipped profile,
// fitted on every file, prices it at 1.4 and misses them by 12 %.
TEST(CliValidate, CausalOnlyFitMissesWindowsAndDocumentsWhereTheFullFitDoesNot) {
  const fs::path dir = fresh_dir("causal-only");
  fs::create_directories(dir);
  std::string causal, others;
  std::vector<std::string> masked;
  for (const auto& entry : fs::directory_iterator(measurements("flex"))) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("causal-")) causal += " --measurements " + entry.path().string();
    if (name.starts_with("window") || name.starts_with("documents")) masked.push_back(entry.path().string());
  }
  const fs::path fitted = dir / "causal-only.json";
  const CliResult fit = run_cli("validate --calibrate --hardware h100 --kernel flex" + causal + " --kernel-out '" + fitted.string() + "'");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const std::string shipped = std::string(STRIPESIM_SOURCE_DIR) + "/configs/kernels/h100/flex.json";
  const auto ratio = [](const std::string& path) {
    const auto forward = nlohmann::json::parse(slurp(path)).at("forward");
    return forward.at("partial_tile_us").get<double>() / forward.at("full_tile_us").get<double>();
  };
  EXPECT_GT(ratio(fitted.string()), 5.0);
  EXPECT_LT(ratio(shipped), 2.0);
  // Mean |predicted / measured - 1| of every layout's lockstep time (sum over rounds of the slowest call).
  const auto lockstep_error = [&](const std::string& kernel) {
    double sum = 0;
    int n = 0;
    for (const std::string& file : masked) {
      const auto doc = nlohmann::json::parse(slurp(file));
      const auto& w = doc.at("workload");
      const CliResult r = run_cli("simulate --hardware h100 --kernel '" + kernel + "' -n " + std::to_string(w.at("seq_len").get<long>()) +
                                  " -N " + std::to_string(w.at("devices").get<long>()) + " --heads " +
                                  std::to_string(w.at("heads").get<long>()) + " --mask " + w.at("mask").get<std::string>() +
                                  " --sync lockstep --topology ideal --summary-only --format json");
      EXPECT_EQ(r.exit_code, 0) << r.err;
      const auto predicted = nlohmann::json::parse(r.out);
      for (const auto& result : predicted.at("results")) {
        double measured = 0;
        for (const auto& round : doc.at("layouts").at(result.at("layout").get<std::string>()).at("us")) {
          double slowest = 0;
          for (const auto& us : round) slowest = std::max(slowest, us.get<double>());
          measured += slowest;
        }
        sum += std::abs(result.at("time_us").get<double>() / measured - 1);
        ++n;
      }
    }
    return sum / n;
  };
  // 18 % against 12 % (README "What causal timings cannot tell").
  const double causal_only_error = lockstep_error(fitted.string());
  const double full_fit_error = lockstep_error(shipped);
  EXPECT_GT(causal_only_error, full_fit_error + 0.04);
  EXPECT_LT(full_fit_error, 0.15);
  fs::remove_all(dir);
}

TEST(CliValidate, MissingGpuIsADeviceFailureNamingRankAndOperation) {
  // An empty CUDA_VISIBLE_DEVICES hides every GPU, so this runs the same with or without one.
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = run_cli("validate --backend cuda --seq-len 256 --devices 2 --tile 64x64 --head-dim 64 --timeout 5");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::unsetenv("CUDA_VISIBLE_DEVICES");
#ifdef STRIPESIM_WITH_CUDA
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("rank 0:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
#else
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("built without the CUDA toolkit"), std::string::npos) << r.err;
#endif
  EXPECT_LT(seconds, 30.0);  // a bounded failure, not a hang
}

std::vector<BadInput> validate_bad_inputs() {
  return {
      {"unknown_backend", "validate --backend tpu", "--backend 'tpu': expected cpu, cuda, nccl or mpi"},
      {"measurements_without_mode", "validate --measurements " + measurements("flex/causal-fwd-n16384-N2.json"),
       "--measurements: needs --calibrate or --compare"},
      {"measurements_missing", "validate --calibrate --hardware h100 --measurements /nonexistent/m.json", "does not exist"},
      // Nothing runs on measured files: a flag that says how to run the ring would be ignored.
      {"hardware_without_fit", "validate --kernel flex", "--kernel: only with --calibrate or --compare"},
      // The fit needs a ring's calls: refused before the matrix runs (it ran, then blamed masking).
      {"compare_without_ring_case", "validate --compare --cp allgather -n 64,128 -N 2 --tile 16x16",
       "--compare: fits on the ring cases' calls and hand-offs, and no case is a ring (--cp ring); add ring to --cp, or give --profile"},
      {"calibrate_without_ring_case", "validate --calibrate --cp ulysses -n 64 -N 2 --tile 16x16",
       "--calibrate: fits on the ring cases' calls and hand-offs, and no case is a ring (--cp ring); add ring to --cp"},
      {"measurements_with_run_flag", "validate --calibrate --hardware h100 --measurements /nonexistent/m.json --iterations 3",
       "--iterations: not with --measurements or --block-costs (nothing runs: the files are the timings)"},
      {"block_costs_kernel_without_block_costs", "validate --calibrate --hardware h100 --measurements /nonexistent/m.json --block-costs-kernel sdpa",
       "--block-costs-kernel: only with --block-costs"},
      {"block_costs_with_backend", "validate --calibrate --hardware h100 --block-costs /nonexistent/b.json --backend cuda",
       "--backend: not with --measurements or --block-costs"},
      {"measurements_layout_twice", "validate --calibrate --hardware h100 --measurements " + data("measurements_layout_twice.json"),
       "field \"layouts\": layout \"Zigzag\": layouts are named in lower case (\"zigzag\")"},
      {"block_costs_misspelt_column", "validate --calibrate --hardware h100 --kernel sdpa --block-costs-kernel sdpa --block-costs " +
       data("block_costs_misspelt_column.json"), "rows[0]: unknown field \"sdpa_fulll_fwd_us\""},
      // A backward column was taken and never read: the fit reads forward and forward+backward.
      {"block_costs_backward_column", "validate --calibrate --hardware h100 --kernel sdpa --block-costs-kernel sdpa --block-costs " +
       data("block_costs_backward_column.json"), "rows[0]: unknown field \"sdpa_full_bwd_us\""},
      {"block_costs_row_twice", "validate --calibrate --hardware h100 --kernel sdpa --block-costs-kernel sdpa --block-costs " +
       data("block_costs_row_twice.json"),
       "rows[1]: times the block of rows[0] again (c 1024, heads 16, kv_heads 16, head_dim 128): its timings would count twice"},
      // The format's required descriptions: a file that does not say what ran, or how, is refused.
      {"measurements_without_method", "validate --calibrate --hardware h100 --kernel flex --measurements " +
       data("measurements_without_method.json"), "measurements_without_method.json: missing field \"method\""},
      {"measurements_empty_device", "validate --calibrate --hardware h100 --kernel flex --measurements " +
       data("measurements_empty_device.json"), "measurements_empty_device.json field \"device\": must not be empty"},
      {"measurements_all_zero", "validate --calibrate --hardware h100 --kernel flex --measurements " + data("measurements_all_zero.json"),
       "measurements_all_zero.json field \"layouts\": every call's time is 0: nothing was timed"},
      {"measurements_short_table", "validate --calibrate --hardware h100 --measurements " + data("measurements_short_table.json"),
       "layout \"contiguous\" field \"us\": expected 2 rows (one per round)"},
      {"measurements_blocks_disagree", "validate --calibrate --hardware h100 --kernel flex --measurements " +
       data("measurements_wrong_blocks.json"),
       // Named by the file's path and field: two runs' files may share a name.
       "--measurements " STRIPESIM_SOURCE_DIR "/tests/data/measurements_wrong_blocks.json layout \"striped\" field \"active_blocks\": "
       "round 1 device 1: the file counts 2000 active blocks, stripesim 2080"},
      // A value of a measurement file is named by its field, not by the flag that gives it to simulate.
      // A 0 where stripesim counts work scored as infinitely fast; a capitalised "Contiguous" left
      // the file's speedups out; a copy under another name counted its timings twice; a missing
      // batch was taken as 1.
      {"measurements_zero_call", "validate --compare --no-fit --hardware h100 --kernel flex --measurements " +
       data("measurements_zero_call_without_blocks.json"),
       "measurements_zero_call_without_blocks.json layout \"striped\" field \"us\": round 1 device 0 is 0 (a call that did not run), "
       "but stripesim counts active tiles there"},
      {"measurements_capitalised_layout", "validate --compare --no-fit --hardware h100 --kernel flex --measurements " +
       data("measurements_capitalised_layout.json"), "field \"layouts\": layout \"Contiguous\": layouts are named in lower case (\"contiguous\")"},
      {"measurements_copy", "validate --compare --hardware h100 --kernel flex --measurements " + data("measurements_one_run.json") +
       " --measurements " + data("measurements_one_run_copy.json"),
       "measurements_one_run_copy.json: the same contents as "},
      {"measurements_without_batch", "validate --compare --no-fit --hardware h100 --kernel flex --measurements " +
       data("measurements_without_batch.json"), "field \"workload\": missing field \"batch\""},
      {"measurements_misspelt_layout", "validate --compare --no-fit --hardware h100 --kernel flex --measurements " +
       data("measurements_misspelt_layout.json"), "measurements_misspelt_layout.json field \"layouts\" = 'zigzg': unknown layout"},
      {"measurements_head_dim_out_of_range", "validate --calibrate --hardware h100 --kernel flex --measurements " +
       data("measurements_head_dim_out_of_range.json"),
       "measurements_head_dim_out_of_range.json field \"workload.head_dim\" = 2048: must be between 1 and 1024"},
      {"block_costs_without_kernel", "validate --calibrate --hardware h100 --block-costs " +
       measurements("block-costs-sdpa-flex.json"), "--block-costs: needs --block-costs-kernel"},
      {"block_costs_unknown_kernel", "validate --calibrate --hardware h100 --block-costs " +
       measurements("block-costs-sdpa-flex.json") + " --block-costs-kernel fa9", "no column \"fa9_full_fwd_us\""},
      {"compare_one_file", "validate --compare --hardware h100 --kernel flex --measurements " +
       measurements("flex/causal-fwd-n16384-N2.json"), "--compare: needs workloads from at least two files"},
      {"unknown_kernel", "validate --calibrate --hardware h100 --kernel fa9 --measurements " +
       measurements("flex/causal-fwd-n16384-N2.json"), "--kernel 'fa9': no such kernel for hardware h100-sxm"},
      {"gpu_dtype_on_cpu", "validate --dtype bf16", "--dtype bf16: the cpu backend computes in fp32 or fp64"},
      {"unknown_dtype", "validate --dtype int8", "--dtype 'int8': expected fp64, fp32, bf16 or fp16"},
      {"gpu_kernel_on_cpu", "validate --gpu-kernel flash", "--gpu-kernel flash: only with --backend cuda or nccl"},
      {"unknown_gpu_kernel", "validate --backend cuda --gpu-kernel fast", "--gpu-kernel 'fast': expected flash, wmma or wgmma"},
      {"gpu_backward_kernel_on_cpu", "validate --pass fwdbwd --gpu-backward-kernel wmma",
       "--gpu-backward-kernel wmma: only with --backend cuda and --pass fwdbwd"},
      {"gpu_backward_kernel_forward_only", "validate --backend cuda --gpu-backward-kernel wmma",
       "--gpu-backward-kernel wmma: only with --backend cuda and --pass fwdbwd"},
      {"unknown_gpu_backward_kernel", "validate --backend cuda --pass fwdbwd --gpu-backward-kernel fast",
       "--gpu-backward-kernel 'fast': expected scalar or wmma"},
      {"gpu_backward_kernel_shipped_costs",
       "validate --backend cuda --pass fwdbwd --gpu-backward-kernel wmma --compare --profile " + std::string(STRIPESIM_SOURCE_DIR) +
           "/configs/hardware/h200.json",
       "--profile with --gpu-backward-kernel wmma: the shipped stripesim profiles' backward costs are the scalar kernel's"},
      {"indivisible", "validate --seq-len 1000 --devices 3",
       "--seq-len 1000: each of the N = 3 devices holds n/N tokens, so N must divide it; the nearest lengths every listed "
       "layout takes are 996 and 1002 (pad 2 tokens to reach 1002)"},
      // The lengths offered run on every ring size of the matrix (1002 suited N = 3, not zigzag's
      // 2N = 4), and none past the validator's 2^20 tokens (1048584 was offered).
      {"indivisible_over_two_sizes", "validate --seq-len 1000 --devices 2,3",
       "--seq-len 1000: each of the N = 3 devices holds n/N tokens, so N must divide it; the nearest lengths every listed "
       "layout takes are 996 and 1008 (pad 8 tokens to reach 1008)"},
      {"indivisible_near_the_limit", "validate --seq-len 1048575 --devices 6",
       "--seq-len 1048575: each of the N = 6 devices holds n/N tokens, so N must divide it; the nearest such length is 1048572"},
      {"ulysses_heads", "validate --cp ulysses --heads 2 --kv-heads 2 --devices 4",
       "--cp ulysses: the all-to-all over 4 devices needs the 2 heads of a device divisible by 4"},
      {"hybrid_in_the_validator", "validate --cp hybrid:2x2 --devices 4", "--cp hybrid:2x2: the validator runs ring, allgather and ulysses"},
      // An unknown one too: the simulator's message offered hybrid:UxR and allgather:G.
      {"unknown_cp_in_the_validator", "validate --cp foo --devices 4", "--cp foo: the validator runs ring, allgather and ulysses"},
      {"pass_backward_alone", "validate --pass bwd", "--pass bwd: the validator runs the backward after the forward; give fwdbwd"},
      {"pass_unknown", "validate --pass back", "--pass 'back': expected fwd, bwd or fwdbwd"},
      {"pass_backward_on_nccl", "validate --backend nccl --pass fwdbwd",
       "--pass fwdbwd: the nccl backend runs the forward only; the backward ring runs on --backend cpu, mpi or cuda"},
      {"pass_backward_allgather", "validate --pass fwdbwd --cp allgather",
       "--pass fwdbwd with --cp allgather: the validator's backward runs the ring (--cp ring)"},
      {"kv_heads_not_dividing", "validate --heads 4 --kv-heads 3", "--kv-heads 3: must divide the 4 heads"},
      {"doc_layout_beside_another_mask", "validate -n 256 -N 2 --tile 32x32 --mask documents:100,156 --mask causal --layouts doc-zigzag",
       "--layouts doc-zigzag: needs a documents mask (--mask documents:...), and 'causal' is not one"},
      {"zero_iterations", "validate --iterations 0", "--iterations 0: must be between 1 and 1000"},
      {"zero_timeout", "validate --timeout 0", "--timeout 0: must be 1 to 86400 seconds"},
      {"timeout_on_cpu", "validate --timeout 5 --seq-len 1k", "--timeout: the cpu backend runs every device in this process and waits on none"},
      {"profile_without_compare", "validate --profile configs/hardware/cpu.json", "--profile: only with --compare"},
      {"profile_out_without_calibrate", "validate --profile-out p.json", "--profile-out: only with --calibrate"},
      {"no_fit_on_a_run", "validate --compare --no-fit",
       "--no-fit: only with --measurements or --block-costs (a run's --compare predicts with --profile)"},
      {"no_fit_with_calibrate", "validate --calibrate --no-fit --hardware h100 --kernel fa2 --measurements " + measurements("fa2/causal-fwd-n16384-N2.json"),
       "--no-fit: only with --compare (--calibrate fits)"},
      {"calibrate_and_compare", "validate --calibrate --compare", "--calibrate excludes --compare"},
      {"compare_one_case", "validate --compare --layouts zigzag --devices 4 --seq-len 256 --tile 32x32",
       "--compare: needs at least two cases"},
      {"zigzag_indivisible", "validate --layouts zigzag --seq-len 102 --devices 2", "divisible by 2N = 4"},
      {"too_long_for_validator", "validate --seq-len 2M", "the validator runs 1 to 1048576 tokens"},
      {"bad_mask", "validate --mask window:0", "the window must be at least 1 token"},
      {"unknown_hardware", "validate --compare --hardware nope", "nope"},
      {"missing_profile", "validate --compare --profile /nonexistent/p.json", "--profile /nonexistent/p.json: file"},
      {"bad_tile_list", "validate --tile 32x32,0x4", "both tile sides must be at least 1"},
      {"empty_devices_item", "validate --devices 2,,4", "empty item"},
  };
}

class CliValidateBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliValidateBadInput, OneLineExitTwoNoOutput) { expect_rejected(run_cli(GetParam().args), GetParam()); }

INSTANTIATE_TEST_SUITE_P(Table, CliValidateBadInput, ::testing::ValuesIn(validate_bad_inputs()), bad_input_name);

TEST(CliValidate, NoFilesLeftBehindWhenAnInputIsBad) {
  const fs::path dir = fresh_dir("bad");
  const CliResult r = run_cli("validate --compare --seq-len 256 --devices 2,3 --out-dir '" + dir.string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir));
}

// Every output path is checked before the first file is written: a --kernel-out into a folder
// that does not exist leaves no --out-dir behind, and the error names the flag that gave it.
TEST(CliValidate, ABadKernelOutLeavesNoOutDirBehind) {
  const fs::path dir = fresh_dir("bad-kernel-out");
  const CliResult r = run_cli("validate --calibrate --hardware h100 --kernel flex --measurements " +
                              measurements("flex/causal-fwd-n32768-N4.json") + " --out-dir '" + dir.string() +
                              "' --kernel-out /nonexistent/kernel.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "stripesim: error: --kernel-out '/nonexistent/kernel.json': directory '/nonexistent' does not exist\n");
  EXPECT_FALSE(fs::exists(dir));
}

// A measurement file under a prefix-LM mask, written from what simulate prices each (round, device)
// call at (--topology ideal: the calls alone) and analyze's active tiles, is accepted (its
// active_blocks checked against the count) and predicted back exactly by validate: one kernel time
// model behind both commands, for the mask no shared measurement has.
TEST(CliValidate, PrefixMeasurementsArePredictedAsSimulatePricesThem) {
  const std::string shape = "-n 8192 -N 4 --mask prefix:3000 --layouts contiguous,striped,zigzag";
  const CliResult sim = run_cli("simulate --hardware h100 --kernel flex --heads 4 " + shape +
                                " --sync lockstep --topology ideal --rounds --format json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const CliResult counts = run_cli("analyze --tile 128x128 --format json " + shape);
  ASSERT_EQ(counts.exit_code, 0) << counts.err;
  const auto predicted = nlohmann::json::parse(sim.out);
  const auto analysed = nlohmann::json::parse(counts.out);
  nlohmann::json doc{{"schema", "stripesim.measurements/1"},
                     {"device", "none: simulate's own prices"},
                     {"kernel", "flex as configs/kernels/h100/flex.json prices it"},
                     {"method", "simulate --topology ideal --rounds: each call's compute time"},
                     {"workload",
                      {{"seq_len", 8192}, {"devices", 4}, {"heads", 4}, {"kv_heads", 4}, {"head_dim", 128}, {"batch", 1},
                       {"dtype", "bf16"}, {"tile", "128x128"}, {"pass", "fwd"}, {"mask", "prefix:3000"}}}};
  for (size_t l = 0; l < 3; ++l) {
    nlohmann::json us = nlohmann::json::array();
    for (const auto& round : predicted.at("results")[l].at("passes")[0].at("rounds")) {
      nlohmann::json row = nlohmann::json::array();
      for (const auto& call : round) row.push_back(call.at("compute_end_us").get<double>() - call.at("compute_start_us").get<double>());
      us.push_back(row);
    }
    doc["layouts"][predicted.at("results")[l].at("layout").get<std::string>()] = {
        {"us", us}, {"active_blocks", analysed.at("results")[l].at("active_tiles")}};
  }
  const fs::path dir = temp_path("stripesim_prefix_measurements");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "prefix.json") << doc.dump();
  const CliResult r = run_cli("validate --compare --no-fit --hardware h100 --kernel flex --measurements '" +
                              (dir / "prefix.json").string() + "' --out-dir '" + (dir / "out").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "accuracy.json")).at("summary");
  EXPECT_EQ(summary.at("calls"), 48);
  EXPECT_LT(summary.at("max_abs_call_error").get<double>(), 1e-9);
  EXPECT_EQ(summary.at("speedups"), 2);
  EXPECT_LT(summary.at("max_abs_speedup_error").get<double>(), 1e-9);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stripesim::testing
