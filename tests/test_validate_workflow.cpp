// What `stripesim validate` decides apart from its flags: per-backend defaults, the profiles
// predictions start from, which cases a fit sees, and the predictions on a real CPU run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "stripesim/validate/cpu_backend.hpp"
#include "stripesim/validate/validate_workflow.hpp"
#include "stripesim/validate/validation_run.hpp"
#include "temp_path.hpp"

namespace stripesim::validate {
namespace {

const model::ConfigCatalog& catalog() {
  static const model::ConfigCatalog shipped(STRIPESIM_SOURCE_DIR "/configs");
  return shipped;
}

TEST(ValidateWorkflow, GpuBackendsDefaultToKernelsLongEnoughToTime) {
  const ValidateMatrix cpu = default_matrix("cpu", false, false);
  EXPECT_EQ(cpu.seq_lens, (std::vector<Count>{2048}));
  EXPECT_EQ(cpu.precision, Precision::fp32);
  const ValidateMatrix gpu = default_matrix("nccl", false, false);
  EXPECT_EQ(gpu.seq_lens, (std::vector<Count>{16384}));
  EXPECT_EQ(gpu.heads, 16);
  EXPECT_EQ(gpu.head_dim, 128);
  EXPECT_EQ(gpu.precision, Precision::bf16);
  const ValidateMatrix fit = default_matrix("cuda", true, false);
  EXPECT_EQ(fit.devices, (std::vector<Count>{2, 4, 8}));
  EXPECT_EQ(fit.seq_lens, (std::vector<Count>{16384, 32768}));
  EXPECT_EQ(fit.tiles.size(), 2u);
  EXPECT_EQ(default_matrix("mpi", true, false).seq_lens, (std::vector<Count>{1024, 2048}));
  // Forward + backward: the GPU lengths halve (the scalar backward), the CPU ones stay.
  const ValidateMatrix fit_backward = default_matrix("cuda", true, true);
  EXPECT_EQ(fit_backward.seq_lens, (std::vector<Count>{8192, 16384}));
  EXPECT_TRUE(fit_backward.backward);
  EXPECT_EQ(default_matrix("nccl", false, true).seq_lens, (std::vector<Count>{8192}));
  EXPECT_EQ(default_matrix("cpu", true, true).seq_lens, (std::vector<Count>{1024, 2048}));
  EXPECT_TRUE(is_gpu_backend("cuda"));
  EXPECT_FALSE(is_gpu_backend("mpi"));
}

// Every backend runs the all-gather and Ulysses, except nccl in a process an MPI launcher
// started (PMI_RANK set, as srun and MPICH set it): one rank per process runs the ring only.
TEST(ValidateWorkflow, OnlyNcclUnderMpirunRefusesTheCollectives) {
  unsetenv("PMI_RANK");
  const bool other_launcher = launched_as_mpi_rank();  // ctest itself run under mpirun
  for (const char* backend : {"cpu", "cuda", "nccl", "mpi"}) {
    for (const char* cp : {"ring", "allgather", "ulysses"}) {
      if (!other_launcher) {
        EXPECT_NO_THROW(check_backend_runs(backend, cp)) << backend << " " << cp;
      }
    }
  }
  setenv("PMI_RANK", "0", 1);
  EXPECT_NO_THROW(check_backend_runs("nccl", "ring"));
  EXPECT_NO_THROW(check_backend_runs("mpi", "ulysses"));
  try {
    check_backend_runs("nccl", "allgather");
    ADD_FAILURE() << "nccl under a launcher ran --cp allgather";
  } catch (const model::InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "--cp allgather: --backend nccl under mpirun runs the ring only; allgather and ulysses run on --backend nccl in "
              "one process (without mpirun), cuda or mpi");
  }
  unsetenv("PMI_RANK");
}

TEST(ValidateWorkflow, ProfilesFromTheFlagTheHostOrTheDriversDeviceName) {
  EXPECT_EQ(base_hardware(catalog(), "", "cpu", "AMD EPYC").name, "cpu");
  EXPECT_EQ(base_hardware(catalog(), "", "cuda", "NVIDIA H100 PCIe").name, "h100-pcie");
  EXPECT_EQ(base_hardware(catalog(), "", "nccl", "a device nobody ships").name, "h100-sxm");
  EXPECT_EQ(base_hardware(catalog(), "a100", "cuda", "NVIDIA H100 80GB HBM3").name, "a100-80gb");
  const model::HardwareProfile h100 = catalog().hardware("h100");
  RingCase run;
  run.gpu_kernel = GpuKernel::wmma;
  EXPECT_EQ(validator_kernel(catalog(), "", "cuda", run, h100).name, "stripesim-wmma");
  run.gpu_kernel = GpuKernel::flash;
  EXPECT_EQ(validator_kernel(catalog(), "", "nccl", run, h100).name, "stripesim-flash");
  run.gpu_kernel = GpuKernel::wgmma;
  for (const char* measured_on : {"h200", "h100"}) {
    const sim::KernelProfile measured = validator_kernel(catalog(), "", "cuda", run, catalog().hardware(measured_on));
    EXPECT_EQ(measured.name, "stripesim-wgmma");
    EXPECT_EQ(measured.placement.blocks_per_sm, 1) << measured_on;  // its own fit: one 2-warpgroup block an SM at 128x128
    EXPECT_EQ(measured.description.find("fitted from"), std::string::npos) << measured_on;
  }
  // A card whose kernels folder has the flash kernel's profile and not this one's (an H100 before
  // its wgmma run): a fit starts from the flash kernel's costs; a prediction without one is refused.
  const std::filesystem::path root = temp_path("stripesim_flash_only_");
  std::filesystem::create_directories(root / "kernels" / "h100");
  std::filesystem::copy_file(catalog().root() + "/kernels/h100/stripesim-flash.json", root / "kernels/h100/stripesim-flash.json",
                             std::filesystem::copy_options::overwrite_existing);
  const model::ConfigCatalog flash_only(root.string());
  const sim::KernelProfile from_flash = validator_kernel(flash_only, "", "cuda", run, h100, /*costs_fitted=*/true);
  const sim::KernelProfile flash = validator_kernel(flash_only, "stripesim-flash", "cuda", run, h100);
  EXPECT_EQ(from_flash.name, "stripesim-wgmma");
  EXPECT_EQ(from_flash.forward.full_tile_us, flash.forward.full_tile_us);
  EXPECT_NE(from_flash.description.find("fitted from the h100-sxm stripesim-flash profile"), std::string::npos);
  try {
    (void)validator_kernel(flash_only, "", "cuda", run, h100);
    ADD_FAILURE() << "a wgmma prediction priced at flash's costs";
  } catch (const model::InputError& e) {
    EXPECT_STREQ(e.what(), "--gpu-kernel wgmma: no stripesim-wgmma kernel profile for h100-sxm yet; drop --profile to fit one "
                           "on this run, or give --kernel");
  }
  std::filesystem::remove_all(root);
}

// The time model places as many backward blocks as the run's backward kernel launches: the
// shipped profiles' 32 keys a block (the scalar kernel), 64 for the tensor-core one; a profile the
// user names is taken as it is. Predicting a wmma backward needs costs measured on it.
TEST(ValidateWorkflow, BackwardBlocksFollowTheBackwardKernelThatRan) {
  const model::HardwareProfile h200 = catalog().hardware("h200");
  RingCase run;
  run.backward = true;
  EXPECT_EQ(validator_kernel(catalog(), "", "cuda", run, h200).backward_block_keys, 32);
  run.gpu_backward_kernel = GpuBackwardKernel::wmma;
  EXPECT_EQ(validator_kernel(catalog(), "", "cuda", run, h200).backward_block_keys, 64);
  EXPECT_EQ(validator_kernel(catalog(), "stripesim-flash", "cuda", run, h200).backward_block_keys, 32);
  EXPECT_FALSE(validator_kernel(catalog(), "", "cpu", run, h200).backward_block_keys.has_value());

  EXPECT_NO_THROW(check_backward_costs_known(false, "", "cuda", run));           // fitted on the run
  EXPECT_NO_THROW(check_backward_costs_known(true, "my-fit.json", "cuda", run));  // costs the user names
  try {
    check_backward_costs_known(true, "", "cuda", run);
    ADD_FAILURE() << "predicted a wmma backward with the scalar kernel's costs";
  } catch (const model::InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "--profile with --gpu-backward-kernel wmma: the shipped stripesim profiles' backward costs are the scalar "
              "kernel's; leave out --profile to fit on this run, or give --kernel a profile fitted on a wmma backward run");
  }
  run.gpu_backward_kernel = GpuBackwardKernel::scalar;
  EXPECT_NO_THROW(check_backward_costs_known(true, "", "cuda", run));
}

CaseResult result_with_cp(const std::string& cp) {
  CaseResult r;
  r.ring_case.cp = cp;
  return r;
}

TEST(ValidateWorkflow, RingCasesAlternateAndOtherParallelismIsNeverFittedOn) {
  const std::vector<CaseResult> results{result_with_cp("ring"), result_with_cp("allgather"), result_with_cp("ring"),
                                        result_with_cp("ring"), result_with_cp("ulysses")};
  EXPECT_EQ(case_roles(results, true), (std::vector<CaseRole>{CaseRole::calibration, CaseRole::held_out, CaseRole::held_out,
                                                               CaseRole::calibration, CaseRole::held_out}));
  EXPECT_EQ(case_roles(results, false), (std::vector<CaseRole>{CaseRole::calibration, CaseRole::checked, CaseRole::calibration,
                                                                CaseRole::calibration, CaseRole::checked}));
}

TEST(ValidateWorkflow, EveryTileShapesFitSeesEveryLayoutAndEverySizeIsHeldOutSomewhere) {
  // The default compare matrix's order: length, ring size, tile, layout.
  ValidateMatrix m = default_matrix("cuda", true, false);
  std::vector<CaseResult> results;
  for (const auto& c : expand_matrix(m)) {
    results.emplace_back();
    results.back().ring_case = c;
  }
  ASSERT_EQ(results.size(), 36u);
  const std::vector<CaseRole> roles = case_roles(results, true);
  std::map<std::string, std::set<CaseRole>> by_tile_and_layout, by_size_and_tile;
  int held_out = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const RingCase& c = results[i].ring_case;
    by_tile_and_layout[c.tile.to_string() + " " + c.layout].insert(roles[i]);
    by_size_and_tile[std::to_string(c.seq_len) + " " + std::to_string(c.devices) + " " + c.tile.to_string()].insert(roles[i]);
    held_out += roles[i] == CaseRole::held_out ? 1 : 0;
  }
  EXPECT_EQ(held_out, 18);
  EXPECT_EQ(by_tile_and_layout.size(), 6u);
  for (const auto& [key, seen] : by_tile_and_layout) EXPECT_EQ(seen.size(), 2u) << key << ": fitted on, and held out, somewhere";
  EXPECT_EQ(by_size_and_tile.size(), 12u);
  for (const auto& [key, seen] : by_size_and_tile) EXPECT_EQ(seen.size(), 2u) << key;
}

// A tiny matrix run on the cpu backend (one timed iteration, no check), and how its cases are
// predicted: fitted on half of them (the shipped cpu profile's shape to start from).
ValidationReport run_on_cpu(const ValidateMatrix& m) {
  auto backend = make_cpu_backend();
  ValidationReport report;
  report.device = backend->device_name();
  for (const auto& c : expand_matrix(m)) report.results.push_back(run_case(*backend, plan_ring_problem(c), RunOptions{0, 1, 60}, false));
  return report;
}

PredictionInputs fitted_on_half() {
  PredictionInputs inputs;
  inputs.base = catalog().hardware("cpu");
  inputs.kernel = [](const model::HardwareProfile& hardware) {
    return validator_kernel(catalog(), "", "cpu", RingCase{}, hardware);
  };
  inputs.hold_out = true;
  return inputs;
}

TEST(ValidateWorkflow, PredictsEveryCaseFromAFitOnHalfOrFromAGivenProfile) {
  ValidateMatrix m;
  m.seq_lens = {256};
  m.devices = {2, 4};
  m.tiles = {{32, 32}};
  const ValidationReport report = run_on_cpu(m);
  const auto backend = make_cpu_backend();
  PredictionInputs inputs = fitted_on_half();
  ValidationReport fitted = report;
  predict_and_compare(fitted, inputs, backend->concurrent_devices());
  ASSERT_TRUE(fitted.calibration.has_value());
  ASSERT_EQ(fitted.comparisons.size(), report.results.size());
  EXPECT_EQ(fitted.comparisons[0].role, CaseRole::calibration);
  EXPECT_EQ(fitted.comparisons[1].role, CaseRole::held_out);
  for (const CaseComparison& c : fitted.comparisons) EXPECT_GT(c.prediction.total_us, 0.0);
  EXPECT_EQ(fitted.kernel->forward.full_tile_us, fitted.calibration->kernel.forward.full_tile_us);

  // A fitted profile names no shipped kernel: the caller gives the kernel with it (--kernel).
  inputs.given = fitted.calibration->profile;
  inputs.kernel = [&](const model::HardwareProfile&) { return fitted.calibration->kernel; };
  ValidationReport given = report;
  predict_and_compare(given, inputs, backend->concurrent_devices());
  EXPECT_FALSE(given.calibration.has_value());
  ASSERT_EQ(given.comparisons.size(), report.results.size());
  for (const CaseComparison& c : given.comparisons) EXPECT_EQ(c.role, CaseRole::checked);
}

// The error table every printer writes: each role's cases together, then each context
// parallelism's apart, checked against counts taken straight from the comparisons.
TEST(ValidateWorkflow, ErrorRowsGiveEachRoleThenEachContextParallelismApart) {
  ValidateMatrix m;
  m.seq_lens = {256};
  m.devices = {2};
  m.tiles = {{32, 32}};
  m.layouts = {"contiguous", "striped", "zigzag"};
  m.cps = {"ring", "allgather"};
  ValidationReport report = run_on_cpu(m);
  predict_and_compare(report, fitted_on_half(), make_cpu_backend()->concurrent_devices());
  ASSERT_EQ(report.comparisons.size(), report.results.size());
  const auto cases = [&](CaseRole role, const std::string& cp) {
    Count n = 0;
    for (size_t i = 0; i < report.results.size(); ++i) {
      n += report.comparisons[i].role == role && (cp.empty() || report.results[i].ring_case.cp == cp) ? 1 : 0;
    }
    return n;
  };
  // Only ring cases are fitted on: all-gather has held-out cases and no calibration row.
  const std::vector<std::pair<CaseRole, std::string>> expected{
      {CaseRole::held_out, ""}, {CaseRole::held_out, "ring"}, {CaseRole::held_out, "allgather"},
      {CaseRole::calibration, ""}, {CaseRole::calibration, "ring"}};
  const std::vector<ErrorRow> rows = error_rows(report, {CaseRole::held_out, CaseRole::calibration, CaseRole::checked});
  ASSERT_EQ(rows.size(), expected.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].role, expected[i].first) << i;
    EXPECT_EQ(rows[i].cp, expected[i].second) << i;
    EXPECT_EQ(rows[i].summary.cases, cases(rows[i].role, rows[i].cp)) << i;
    EXPECT_GT(rows[i].summary.cases, 0) << i;
  }
  EXPECT_EQ(rows[0].summary.cases, rows[1].summary.cases + rows[2].summary.cases);
  // One context parallelism: its rows would repeat the roles', so there are none.
  ValidationReport ring;
  for (size_t i = 0; i < report.results.size(); ++i) {
    if (report.results[i].ring_case.cp != "ring") continue;
    ring.results.push_back(report.results[i]);
    ring.comparisons.push_back(report.comparisons[i]);
  }
  const std::vector<ErrorRow> ring_rows = error_rows(ring, {CaseRole::held_out, CaseRole::calibration});
  ASSERT_EQ(ring_rows.size(), 2U);
  for (const ErrorRow& row : ring_rows) EXPECT_EQ(row.cp, "");
}

}  // namespace
}  // namespace stripesim::validate
