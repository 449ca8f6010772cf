#include "validate_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "config_dir.hpp"
#include "distinct_list.hpp"
#include "file_flags.hpp"
#include "output_file.hpp"
#include "output_format.hpp"
#include "preset_help.hpp"
#include "run_mode.hpp"
#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask_identity.hpp"
#include "stripesim/output/accuracy_printers.hpp"
#include "stripesim/output/validation_printers.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/sim/simulation.hpp"
#include "stripesim/validate/comparison.hpp"
#include "stripesim/validate/measurement_accuracy.hpp"
#include "stripesim/validate/saved_report.hpp"
#include "stripesim/validate/validate_workflow.hpp"

namespace stripesim::cli {
namespace {

using validate::CaseRole;

constexpr int kExitOutputWrong = 1;

struct ValidateOptions {
  std::string backend = "cpu";
  std::string cp;
  std::string pass;  // --pass: fwd | fwdbwd
  std::string layouts, seq_lens, devices, tiles, heads, kv_heads, head_dim, dtype, seed;
  std::string gpu_kernel;  // --gpu-kernel: flash | wgmma | wmma (GPU backends only)
  std::string gpu_backward_kernel;  // --gpu-backward-kernel: scalar | wmma (GPU backends, --pass fwdbwd)
  std::vector<std::string> masks;
  std::string warmup = "1";
  std::string iterations = "5";
  std::string timeout = "60";
  std::string hardware;
  std::string profile;      // --profile: predict with this profile instead of calibrating
  std::string profile_out;  // --calibrate: where the fitted profile goes
  std::string kernel;       // base kernel profile (name or JSON) the fit starts from / predictions use
  std::string kernel_out;   // --calibrate: where the fitted kernel profile goes
  std::vector<std::string> measurements;  // stripesim.measurements/1 files: fit/compare on them, run nothing
  std::vector<std::string> from;          // --from: saved validate.json files whose timings are fitted/compared, run nothing
  std::vector<std::string> block_costs;   // stripesim.block-costs/1 files
  std::string block_costs_kernel;         // which kernel's columns of the block-cost files
  bool calibrate = false;
  bool compare = false;
  bool no_fit = false;  // --no-fit: --compare on measured files with --kernel's profile as given
  std::string block_order;  // --block-order: the measured kernel's own block order, not fitted
  bool no_check = false;
  std::string topology;  // --topology: which ranks share a node (mpi)
  std::string out_dir;
  std::string output;
  std::string format = "table";
  FileFlags run;  // what says how to run the ring: nothing runs with --measurements or --block-costs
};

constexpr const char* kValidateExamples = R"(Examples:
  stripesim validate
      contiguous, striped and zigzag rings on the CPU backend (n = 2048, N = 4, causal), checked
      against dense attention, with per-round timings
  stripesim validate --layouts zigzag,doc-zigzag,balanced --mask documents:304,696,1048 --devices 2,4
  stripesim validate --calibrate --profile-out cpu-profile.json --kernel-out cpu-kernel.json
      fit the simulator's kernel and link parameters to this machine
  stripesim validate --pass fwdbwd --compare
      forward and backward rings: gradients against dense ones, the backward costs fitted and predicted
  stripesim validate --compare --out-dir reports/validation/cpu
      the default matrix (layouts x N in {2,4,8} x two lengths x two tiles): calibrate on one half,
      report the prediction error on the other, JSON + Markdown
  stripesim validate --backend cuda --dtype bf16 --compare --out-dir reports/validation/h100
  stripesim validate --compare --from reports/validation/h100/validate.json --kernel my-start.json
      fit and score a saved run again, anywhere, without running it (here from another profile)
  stripesim validate --calibrate --from fwd/validate.json --from fwdbwd/validate.json --kernel-out k.json
      fit one kernel profile to several saved runs of one device together
  stripesim validate --backend nccl --devices 8 --dtype bf16 --seq-len 64k --tile 128x128
  mpirun -np 4 stripesim validate --backend mpi --compare --out-dir reports/validation/mpi
      a process per ring device, K/V handed on with MPI; rank 0 checks, fits the hand-off and writes
  stripesim validate --calibrate --hardware h100 --kernel flex --measurements configs/measurements/h100/flex/*.json \
      --block-costs configs/measurements/h100/block-costs-sdpa-flex.json --block-costs-kernel flex --kernel-out flex.json
      fit a kernel profile to timings of a kernel you train with (bench/measure_kernels.py makes them)
  stripesim validate --compare --hardware h100 --kernel flex --measurements configs/measurements/h100/flex/*.json
      leave one file out: predict each from a fit on the others, per (round, device) and per layout speedup
  stripesim validate --compare --no-fit --hardware h100 --kernel fa2 --measurements configs/measurements/h100/fa2/*.json
      the shipped profile, as it is, against timings it was never fitted on)";

std::vector<model::Count> count_list(const std::string& text, const char* flag) {
  return parse_distinct_list<model::Count>(text, flag, [&](const std::string& item) { return model::parse_count(item, flag); });
}

// The matrix: flags where given, else the backend's defaults.
validate::ValidateMatrix build_matrix(const ValidateOptions& o) {
  bool backward = false;
  if (!o.pass.empty()) {
    const sim::PassSelection pass = sim::parse_pass_selection(o.pass);
    // The backward needs the forward's softmax statistics: it is timed after a forward, never alone.
    if (pass == sim::PassSelection::backward) {
      throw model::InputError("--pass bwd: the validator runs the backward after the forward; give fwdbwd");
    }
    backward = pass == sim::PassSelection::forward_backward;
    if (backward) validate::check_backend_runs_backward(o.backend);
  }
  validate::ValidateMatrix m = validate::default_matrix(o.backend, o.compare || o.calibrate, backward);
  const bool gpu = validate::is_gpu_backend(o.backend);
  if (!o.layouts.empty()) m.layouts = model::split_distinct_list(o.layouts, "--layouts");
  require_distinct(o.masks, "--mask");
  if (!o.masks.empty()) m.masks = o.masks;
  if (!o.cp.empty()) m.cps = model::split_distinct_list(o.cp, "--cp");
  for (const std::string& cp : m.cps) validate::check_backend_runs(o.backend, cp);  // before any case runs
  if (!o.devices.empty()) m.devices = count_list(o.devices, "--devices");
  if (!o.seq_lens.empty()) m.seq_lens = count_list(o.seq_lens, "--seq-len");
  // Two spellings of one mask would run its cases twice (window:1k and window:1024).
  if (const std::optional<model::RepeatedMask> twice = model::repeated_mask(m.masks, m.seq_lens)) {
    throw model::InputError(fmt::format("--mask '{}': the same mask as '{}' at every --seq-len (its cases would run twice)",
                                        m.masks[twice->mask], m.masks[twice->earlier]));
  }
  if (!o.tiles.empty()) {
    m.tiles.clear();
    for (const auto& t : model::split_distinct_list(o.tiles, "--tile")) m.tiles.push_back(model::parse_tile_shape(t));
  }
  if (!o.heads.empty()) {
    m.heads = model::parse_count(o.heads, "--heads");
    if (o.kv_heads.empty()) m.kv_heads = m.heads;
  }
  if (!o.kv_heads.empty()) m.kv_heads = model::parse_count(o.kv_heads, "--kv-heads");
  if (!o.head_dim.empty()) m.head_dim = model::parse_count(o.head_dim, "--head-dim");
  if (!o.dtype.empty()) m.precision = validate::parse_precision(o.dtype);
  if (!o.seed.empty()) m.seed = static_cast<std::uint64_t>(model::parse_count(o.seed, "--seed"));
  if (!o.gpu_kernel.empty()) {
    if (!gpu) throw model::InputError(fmt::format("--gpu-kernel {}: only with --backend cuda or nccl", o.gpu_kernel));
    m.gpu_kernel = validate::parse_gpu_kernel(o.gpu_kernel);
  }
  if (!o.gpu_backward_kernel.empty()) {
    if (!gpu || !backward) {
      throw model::InputError(fmt::format("--gpu-backward-kernel {}: only with --backend cuda and --pass fwdbwd", o.gpu_backward_kernel));
    }
    m.gpu_backward_kernel = validate::parse_gpu_backward_kernel(o.gpu_backward_kernel);
  }
  return m;
}

validate::RunOptions run_options(const ValidateOptions& o) {
  validate::RunOptions r;
  r.warmup = model::parse_count(o.warmup, "--warmup");
  r.iterations = model::parse_count(o.iterations, "--iterations");
  if (r.iterations < 1 || r.iterations > 1000) {
    throw model::InputError(fmt::format("--iterations {}: must be between 1 and 1000", r.iterations));
  }
  if (r.warmup > 100) throw model::InputError(fmt::format("--warmup {}: must be between 0 and 100", r.warmup));
  const auto seconds = model::parse_count(o.timeout, "--timeout");
  if (seconds < 1 || seconds > 86400) throw model::InputError(fmt::format("--timeout {}: must be 1 to 86400 seconds", seconds));
  r.timeout_s = static_cast<double>(seconds);
  return r;
}

// `word` as a POSIX shell reads it back: as it is when it holds only characters no shell treats
// specially, else in single quotes (a quote inside written '\'').
std::string shell_word(const std::string& word) {
  constexpr std::string_view kPlain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-";
  if (!word.empty() && word.find_first_not_of(kPlain) == std::string::npos) return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The command as typed, each value quoted where a shell needs it, so that the line the reports
// record runs again as it is (a path with a space in it split into two arguments).
std::string command_line(const CLI::App* cmd) {
  std::string line = "stripesim validate";
  for (const CLI::Option* option : cmd->get_options()) {
    if (option->count() == 0 || option->get_name() == "--help") continue;
    const std::string name = option->get_name();
    if (option->get_expected_max() == 0) {  // a flag: its name alone
      line += " " + name;
      continue;
    }
    for (const auto& value : option->results()) line += fmt::format(" {} {}", name, shell_word(value));
  }
  return line;
}

void progress(size_t done, size_t total, const std::string& label) {
  if (::isatty(STDERR_FILENO) == 0) return;  // never in logs or pipes
  fmt::print(stderr, "\r\033[K[{}/{}] {}", done, total, label);
  if (done == total) fmt::print(stderr, "\n");
  std::fflush(stderr);
}


// --measurements / --block-costs: fit (--calibrate) or score (--compare, leave one file out) a
// kernel profile on timings from outside; nothing runs on a backend.
int run_on_measurements(const CLI::App* cmd, const ValidateOptions& o, RunMode mode) {
  if (!o.calibrate && !o.compare) throw model::InputError("--measurements: needs --calibrate or --compare");
  if (!o.block_costs.empty() && o.block_costs_kernel.empty()) {
    throw model::InputError("--block-costs: needs --block-costs-kernel NAME (the column prefix: sdpa, flex, ...)");
  }
  if (!o.profile.empty() || !o.profile_out.empty()) {
    throw model::InputError("--profile, --profile-out: not with --measurements (a kernel profile is --kernel, --kernel-out)");
  }
  validate::MeasurementAccuracyRequest request;
  request.measurements = o.measurements;
  request.block_costs = o.block_costs;
  request.block_costs_kernel = o.block_costs_kernel;
  request.hardware = o.hardware;
  request.kernel = o.kernel;
  request.compare = o.compare;
  if (!o.block_order.empty()) {
    // ORDER, or FORWARD,BACKWARD for a kernel whose backward launches its blocks another way.
    const std::vector<std::string> orders = model::split_list(o.block_order, "--block-order");
    if (orders.size() > 2) {
      throw model::InputError(fmt::format("--block-order '{}': expected ORDER or FORWARD,BACKWARD", o.block_order));
    }
    request.fit.block_order = sim::parse_block_order(orders.front(), "--block-order");
    if (orders.size() == 2) request.fit.backward_block_order = sim::parse_block_order(orders.back(), "--block-order");
  }
  request.no_fit = o.no_fit;
  request.command = command_line(cmd);
  const model::ConfigCatalog catalog(config_dir());
  const validate::MeasurementAccuracyPlan plan = validate::plan_measurement_accuracy(request, catalog);
  if (mode == RunMode::parse_only) return 0;
  const validate::KernelAccuracy accuracy = validate::run_measurement_accuracy(plan, catalog);
  const validate::KernelFit& fit = accuracy.fit;
  OutputFiles outputs;
  if (!o.out_dir.empty()) {
    namespace fs = std::filesystem;
    outputs.add_folder(o.out_dir);
    if (!o.no_fit) outputs.add(sim::to_json(fit.profile).dump(2) + "\n", (fs::path(o.out_dir) / "kernel.json").string(), "--out-dir");
    outputs.add(output::render(accuracy, OutputFormat::markdown), (fs::path(o.out_dir) / "accuracy.md").string(), "--out-dir");
    outputs.add(output::render(accuracy, OutputFormat::json), (fs::path(o.out_dir) / "accuracy.json").string(), "--out-dir");
  }
  if (o.calibrate && !o.kernel_out.empty()) outputs.add(sim::to_json(fit.profile).dump(2) + "\n", o.kernel_out, "--kernel-out", OutputKind::kernel_profile);
  outputs.add(output::render(accuracy, output_format(o.format)), o.output);
  outputs.commit();
  return 0;
}

}  // namespace

// --profile FILE: the hardware profile --compare predicts with instead of calibrating.
std::optional<model::HardwareProfile> given_hardware_profile(const ValidateOptions& o) {
  if (o.profile.empty()) return std::nullopt;
  const std::string label = "--profile " + o.profile;
  return model::hardware_profile_from_json(model::read_json_file(o.profile, label, model::FileUse::hardware_profile), label);
}

// Before anything runs or is read further: --hardware names a profile, --compare has a case to
// predict besides one to fit on, or a --profile to predict with, and that profile's kernel costs
// describe the kernels of the run (on `backend`; `kernels`: the case that names them).
void check_prediction_flags(const ValidateOptions& o, const model::ConfigCatalog& catalog, size_t cases, size_t ring_cases,
                            bool given_profile, std::string_view backend, const validate::RingCase& kernels) {
  if (!o.hardware.empty()) (void)catalog.hardware(o.hardware);
  if (o.compare && cases < 2 && !given_profile) {
    throw model::InputError("--compare: needs at least two cases (one to calibrate on, one to predict) or --profile");
  }
  // The fit's features are a ring's calls and hand-offs: all-gather and Ulysses cases are only
  // predicted with what ring cases fitted (refused here, before the matrix runs for nothing).
  if ((o.calibrate || (o.compare && !given_profile)) && ring_cases == 0) {
    throw model::InputError(fmt::format("{}: fits on the ring cases' calls and hand-offs, and no case is a ring (--cp ring); add "
                                        "ring to --cp{}",
                                        o.calibrate ? "--calibrate" : "--compare", o.compare ? ", or give --profile" : ""));
  }
  if (o.compare) validate::check_backward_costs_known(given_profile, o.kernel, backend, kernels);
}

// Predictions (--calibrate, --compare), the files and the exit code of a report, run here or
// read back with --from.
int finish_report(const ValidateOptions& opts, validate::ValidationReport& report, const model::ConfigCatalog& catalog,
                  const std::optional<model::HardwareProfile>& given_profile) {
  if (opts.calibrate || opts.compare) {
    validate::PredictionInputs inputs;
    inputs.base = validate::base_hardware(catalog, opts.hardware, report.backend, report.device);
    inputs.given = given_profile;
    inputs.kernel = [&](const model::HardwareProfile& hardware) {
      return validate::validator_kernel(catalog, opts.kernel, report.backend, validate::kernels_case(report.results), hardware,
                                        /*costs_fitted=*/!given_profile.has_value());
    };
    inputs.hold_out = opts.compare;
    try {
      validate::predict_and_compare(report, inputs, report.concurrent_devices);
    } catch (const model::InputError& e) {
      // The precision is the cases' (by default the backend's), not a --dtype the user gave: the
      // hardware that cannot price it is what to change.
      if (e.input() != model::Input::dtype || !opts.dtype.empty() || opts.hardware.empty()) throw;
      const std::string whose = opts.from.empty() ? fmt::format("the cases ran in (the {} backend's default)", report.backend)
                                                  : std::string("the saved cases ran in");
      throw model::InputError(fmt::format("--hardware {}: lists no peak rate for {}, the precision {}, to price the kernel's calls "
                                          "in it; give a hardware profile that lists one",
                                          opts.hardware, e.value(), whose));
    }
  }

  OutputFiles outputs;
  namespace fs = std::filesystem;
  const auto in_dir = [&](const char* name) { return (fs::path(opts.out_dir) / name).string(); };
  // The fitted hardware profile names the fitted kernel as its default: its source says where
  // that kernel went (or that it went nowhere, and simulate needs a --kernel beside it).
  const auto profile_json = [&](bool beside_kernel_json) {
    model::HardwareProfile profile = report.calibration->profile;
    profile.sources["kernel"] = beside_kernel_json ? std::string("the fitted kernel profile is kernel.json beside this file")
                                : !opts.kernel_out.empty() ? fmt::format("the fitted kernel profile is {}", opts.kernel_out)
                                : !opts.out_dir.empty()    ? fmt::format("the fitted kernel profile is {}", in_dir("kernel.json"))
                                                           : std::string("the fitted kernel profile was not written (validate --calibrate "
                                                                         "without --kernel-out or --out-dir): give simulate a --kernel");
    return model::to_json(profile).dump(2) + "\n";
  };
  if (!opts.out_dir.empty()) {
    outputs.add_folder(opts.out_dir);
    if (report.calibration) {
      outputs.add(profile_json(true), in_dir("profile.json"), "--out-dir");
      outputs.add(sim::to_json(report.calibration->kernel).dump(2) + "\n", in_dir("kernel.json"), "--out-dir");
    }
    if (report.topology) {  // the fitted network: simulate --topology DIR/topology.json --hardware DIR/profile.json
      outputs.add(report.topology->to_json().dump(2) + "\n", in_dir("topology.json"), "--out-dir");
    }
    outputs.add(output::render(report, OutputFormat::markdown), in_dir("validate.md"), "--out-dir");
    outputs.add(output::render(report, OutputFormat::json), in_dir("validate.json"), "--out-dir");
  }
  if (opts.calibrate && !opts.profile_out.empty()) {
    outputs.add(profile_json(false), opts.profile_out, "--profile-out", OutputKind::hardware_profile);
  }
  if (opts.calibrate && !opts.kernel_out.empty()) outputs.add(sim::to_json(report.calibration->kernel).dump(2) + "\n", opts.kernel_out, "--kernel-out", OutputKind::kernel_profile);
  outputs.add(output::render(report, output_format(opts.format)), opts.output);
  outputs.commit();
  bool all_passed = true;
  for (const auto& r : report.results) all_passed = all_passed && r.passed;
  if (!all_passed) {
    fmt::print(stderr, "stripesim: error: the ring's output differs from dense attention beyond tolerance\n");
    return kExitOutputWrong;
  }
  return 0;
}

// --from FILE: the cases and timings of an earlier run, fitted (--calibrate) or scored
// (--compare) again without running anything.
int run_on_saved_report(const CLI::App* cmd, const ValidateOptions& o, RunMode mode) {
  if (!o.measurements.empty() || !o.block_costs.empty()) {
    throw model::InputError("--from: not with --measurements or --block-costs (one source of timings at a time)");
  }
  if (const CLI::Option* flag = o.run.first_given()) {
    throw model::InputError(fmt::format("{}: not with --from (nothing runs: the file holds the cases and their timings)", flag->get_name()));
  }
  if (!o.topology.empty()) throw model::InputError("--topology: not with --from (the file records where its ranks ran)");
  if (!o.calibrate && !o.compare) throw model::InputError("--from: needs --calibrate or --compare (what to do with the saved timings)");
  model::refuse_repeated_files(o.from, "--from", "its timings would count twice");
  std::vector<validate::ValidationReport> runs;
  std::vector<std::string> labels;
  for (const std::string& file : o.from) {
    labels.push_back("--from " + file);
    runs.push_back(validate::read_saved_report(model::read_json_file(file, labels.back()), labels.back()));
  }
  validate::ValidationReport report = validate::merge_saved_reports(std::move(runs), labels);
  const model::ConfigCatalog catalog(config_dir());
  const std::optional<model::HardwareProfile> given_profile = given_hardware_profile(o);
  const auto ring_results = static_cast<size_t>(
      std::ranges::count_if(report.results, [](const validate::CaseResult& r) { return r.ring_case.cp == "ring"; }));
  check_prediction_flags(o, catalog, report.results.size(), ring_results, given_profile.has_value(), report.backend,
                         validate::kernels_case(report.results));
  if (mode == RunMode::parse_only) return 0;
  report.command = command_line(cmd);
  return finish_report(o, report, catalog, given_profile);
}

std::function<int()> register_validate_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<ValidateOptions>();
  ValidateOptions& o = *options;
  CLI::App* cmd = app.add_subcommand("validate", "Run the ring on real kernels, check it against dense attention, "
                                                 "measure it and compare with the simulator");
  cmd->footer(kValidateExamples);
  o.run.track(cmd->add_option("--backend", o.backend,
                              "cpu (always built), cuda (one GPU hosts N virtual devices), nccl (a GPU per rank) or mpi (a process per "
                              "device: mpirun -np N)")
      ->capture_default_str());
  o.run.track(cmd->add_option("--layouts", o.layouts, "Comma-separated layouts (see analyze) [default: contiguous,striped,zigzag]"));
  o.run.track(cmd->add_option("--mask", o.masks, "Mask; repeat the flag for several [default: causal]"));
  o.run.track(cmd->add_option("--cp", o.cp, "Comma-separated context parallelism: ring, allgather (K/V gathered, one call per device), "
                              "ulysses (all-to-all to heads); every backend, nccl under mpirun the ring only [default: ring]"));
  o.run.track(cmd->add_option("--pass", o.pass,
                              "fwd, or fwdbwd: the backward ring after the forward (dK/dV travelling home with their block), "
                              "checked against dense gradients and timed per round; cpu, mpi and cuda backends, --cp ring [default: fwd]"));
  o.run.track(cmd->add_option("--seq-len,-n", o.seq_lens, fmt::format("Sequence lengths, comma-separated; {} [default: 2048; GPU 16k, with --pass fwdbwd 8k; --compare and --calibrate: 1k,2k; GPU 16k,32k, with --pass fwdbwd 8k,16k]", model::kCountSuffixes)));
  o.run.track(cmd->add_option("--devices,-N", o.devices,
                              "Ring sizes, comma-separated [default: 4; --compare and --calibrate: 2,4,8; mpi: the number of ranks]"));
  o.run.track(cmd->add_option("--tile", o.tiles, "Kernel tiles TQxTK, comma-separated [default: 64x64; GPU 128x128; --compare and --calibrate: 32x32,64x64; GPU 64x64,128x128]"));
  o.run.track(cmd->add_option("--heads", o.heads, "Query heads [default: 2; GPU 16]"));
  o.run.track(cmd->add_option("--kv-heads", o.kv_heads, "K/V heads, dividing --heads [default: as many as --heads; without --heads 1 (GPU 16)]"));
  o.run.track(cmd->add_option("--head-dim", o.head_dim, "Head size [default: 32; GPU 128]"));
  o.run.track(cmd->add_option("--dtype", o.dtype, "fp32 or fp64 (cpu), bf16 or fp16 (cuda, nccl) [default: fp32; GPU bf16]"));
  o.run.track(cmd->add_option("--seed", o.seed, "Seed of the random Q, K, V [default: 1]"));
  o.run.track(cmd->add_option("--gpu-kernel", o.gpu_kernel,
                              "cuda, nccl: flash (FlashAttention-2 design, the default), wgmma (the same on Hopper's warpgroup "
                              "instructions; H100/H200 only) or wmma (the simple kernel tests compare with)"));
  o.run.track(cmd->add_option("--gpu-backward-kernel", o.gpu_backward_kernel,
                              "cuda with --pass fwdbwd: scalar (fp32, written to be right first; the default) or wmma (tensor cores, "
                              "FlashAttention-2's backward loop: about 50 TFLOP/s on an H100, scalar about 6)"));
  o.run.track(cmd->add_option("--warmup", o.warmup, "Untimed iterations per case")->capture_default_str());
  o.run.track(cmd->add_option("--iterations", o.iterations, "Timed iterations per case (medians and spread)")->capture_default_str());
  o.run.track(cmd->add_option("--timeout", o.timeout, "cuda, nccl, mpi: seconds (1 to 86400) a device operation may take before it is reported as hung")
      ->capture_default_str());
  auto* calibrate = cmd->add_flag("--calibrate", o.calibrate, "Fit the simulator's kernel and link parameters to the measurements");
  auto* compare = cmd->add_flag("--compare", o.compare,
                                "Predict every case with the simulator: calibrate on one half, report the error on the other");
  cmd->add_option("--hardware", o.hardware, "--calibrate, --compare: profile to start from: " + hardware_choices() + " [default: cpu, or the GPU's own]");
  cmd->add_option("--profile", o.profile, "--compare: predict every case with this profile instead of calibrating");
  cmd->add_option("--profile-out", o.profile_out, "--calibrate: write the fitted hardware profile JSON to FILE");
  cmd->add_option("--kernel", o.kernel,
                  "--calibrate, --compare: kernel profile the fit starts from and predictions use (name in configs/kernels/<hardware>/ or JSON) "
                  "[default: the validator's own kernel; with --measurements the hardware's default]");
  cmd->add_option("--kernel-out", o.kernel_out, "--calibrate: write the fitted kernel profile JSON to FILE");
  cmd->add_option("--measurements", o.measurements,
                  "stripesim.measurements/1 files (repeat or list): calibrate on / compare against them instead of running");
  cmd->add_option("--from", o.from,
                  "A validate.json an earlier run wrote (--out-dir): calibrate on / compare against its timings instead of running; "
                  "repeat for several runs of one device, fitted together");
  cmd->add_option("--block-costs", o.block_costs, "stripesim.block-costs/1 files to fit on as well (one c x c block per row)");
  cmd->add_option("--block-costs-kernel", o.block_costs_kernel, "Which kernel's columns of --block-costs to read (e.g. sdpa, flex)");
  cmd->add_option("--block-order", o.block_order,
                  "With --measurements or --block-costs: the order the measured kernel launches its blocks in, as its "
                  "source says (launch: its grid order; longest_first), or FORWARD,BACKWARD when its backward's differs "
                  "(FlashAttention-2: launch,longest_first), fitted with that order alone instead of the better fit of "
                  "both [default: both tried]");
  cmd->add_flag("--no-fit", o.no_fit,
                "--compare with --measurements: predict every file with --kernel's profile as it is, fitted on none of them "
                "(how a shipped profile does on your timings), instead of leaving each file out of a refit");
  o.run.track(cmd->add_flag("--no-check", o.no_check,
                            "Skip the dense-attention check: n^2 per head, once per problem (cpu: float64 on one core; cuda, "
                            "nccl: fp32 cuBLAS on the GPU)"));
  o.run.track(cmd->add_option("--topology", o.topology,
                              "--backend mpi (or nccl under mpirun): which ranks share a node (cluster:NxG, hostfile:FILE, or any simulate topology); it must "
                              "match where the ranks run [default: the ranks' host names]"));
  cmd->add_option("--out-dir", o.out_dir, "Write validate.json and validate.md (and profile.json when it calibrates) to DIR");
  static_assert(std::ranges::equal(output::kValidationFormats, output::kAccuracyFormats),
                "validate's one --format renders runs and measured files alike");
  add_format_option(cmd, o.format, output::kValidationFormats, "Standard output format");
  cmd->add_option("--output,-o", o.output, "Write the output to FILE instead of standard output");
  calibrate->excludes(compare);
  return [cmd, options, mode]() -> int {
    if (!cmd->parsed()) return 0;
    const ValidateOptions& opts = *options;
    if (!opts.profile.empty() && !opts.compare) throw model::InputError("--profile: only with --compare");
    if (!opts.profile_out.empty() && !opts.calibrate) throw model::InputError("--profile-out: only with --calibrate");
    if (!opts.kernel_out.empty() && !opts.calibrate) throw model::InputError("--kernel-out: only with --calibrate");
    // The profiles are what predictions start from: a run that predicts nothing would ignore them.
    for (const auto& [flag, value] : {std::pair{"--hardware", &opts.hardware}, std::pair{"--kernel", &opts.kernel}}) {
      if (!value->empty() && !opts.calibrate && !opts.compare) {
        throw model::InputError(fmt::format("{}: only with --calibrate or --compare (it is what predictions start from)", flag));
      }
    }
    if (!opts.block_order.empty() && opts.measurements.empty() && opts.block_costs.empty()) {
      throw model::InputError("--block-order: only with --measurements or --block-costs (the validator's own kernel has its order)");
    }
    if (opts.no_fit && opts.measurements.empty() && opts.block_costs.empty()) {
      throw model::InputError("--no-fit: only with --measurements or --block-costs (a run's --compare predicts with --profile)");
    }
    if (!opts.block_costs_kernel.empty() && opts.block_costs.empty()) {
      throw model::InputError("--block-costs-kernel: only with --block-costs");
    }
    // The profile is the hardware predictions use: a --hardware beside it would go unread.
    if (!opts.profile.empty() && !opts.hardware.empty()) {
      throw model::InputError("--hardware, --profile: --profile is the hardware profile --compare predicts with; give one");
    }
    if (!opts.from.empty()) return run_on_saved_report(cmd, opts, mode);
    if (!opts.measurements.empty() || !opts.block_costs.empty()) {
      if (const CLI::Option* flag = opts.run.first_given()) {
        throw model::InputError(fmt::format("{}: not with --measurements or --block-costs (nothing runs: the files are the timings)",
                                            flag->get_name()));
      }
      return run_on_measurements(cmd, opts, mode);
    }
    validate::ValidateMatrix matrix = build_matrix(opts);
    // mpi without --devices: N is the job's size, known once MPI is up (below). Until then the
    // cases are checked at N = 1, which every length and head count divides, so that the default
    // N cannot refuse a case (Ulysses' heads over N) the job's own N runs.
    const bool ring_of_the_job = opts.backend == "mpi" && opts.devices.empty();
    if (ring_of_the_job) matrix.devices = {1};
    // Every problem's mask and layout checked now: a bad spec fails before anything runs.
    std::vector<validate::RingPlan> cases;
    try {
      cases = validate::plan_matrix(matrix);
    } catch (const model::InputError& e) {
      // A length refused at N = 1 is refused at the job's N too (what N = 1 needs divides what
      // any N needs), but the message must name that N and the lengths it takes (255 on 2 ranks:
      // zigzag's 2N = 4, not 2, so not 254): checked again at the job's size.
      if (!ring_of_the_job || e.input() != model::Input::seq_len) throw;
      const auto job = validate::make_backend(opts.backend);
      if (const auto ranks = job->launched_devices()) matrix.devices = {*ranks};
      (void)validate::plan_matrix(matrix);
      throw;
    }
    const validate::RunOptions run = run_options(opts);
    // Only a backend that waits on other devices (a GPU's work, a peer's messages) can hang.
    if (cmd->count("--timeout") > 0 && opts.backend == "cpu") {
      throw model::InputError("--timeout: the cpu backend runs every device in this process and waits on none; only with --backend "
                              "cuda, nccl or mpi");
    }
    const model::ConfigCatalog catalog(config_dir());
    const std::optional<model::HardwareProfile> given_profile = given_hardware_profile(opts);
    const auto ring_cases = static_cast<size_t>(
        std::ranges::count_if(cases, [](const validate::RingPlan& c) { return c.ring_case.cp == "ring"; }));
    check_prediction_flags(opts, catalog, cases.size(), ring_cases, given_profile.has_value(), opts.backend,
                           cases.front().ring_case);
    auto backend = validate::make_backend(opts.backend);  // mpi: MPI_Init_thread, finalised when it goes
    if (const auto ranks = backend->launched_devices()) {
      // One process per device: the launch fixes N. Without --devices the ring is the job's size; a
      // matrix over other sizes is refused rather than half run (one job per ring size).
      if (opts.devices.empty()) {
        matrix.devices = {*ranks};
        cases = validate::plan_matrix(matrix);
      }
      for (const model::Count n : matrix.devices) {
        if (n != *ranks) {
          throw model::InputError(fmt::format(
              "--devices {}: --backend {} runs one process per device and this job has {} (launch it with mpirun -np {})", n,
              opts.backend, *ranks, n));
        }
      }
    }
    if (const auto limit = backend->device_limit()) {
      for (const model::Count n : matrix.devices) {
        if (n > *limit) {
          throw model::InputError(fmt::format(
              "--devices {}: --backend {} runs a GPU per device and this machine has {}{}", n, opts.backend, *limit,
              opts.devices.empty() ? " (the ring sizes of the default matrix: give --devices with sizes that fit)" : ""));
        }
      }
    }
    // The placement the flags promise, checked against where the ranks run once they can say.
    std::optional<sim::NodePlacement> promised;
    if (!opts.topology.empty()) {
      if (!backend->launched_devices()) {
        throw model::InputError(fmt::format("--topology: only for one process per device (--backend mpi, or nccl under mpirun), placed on nodes by the launcher "
                                            "(the {} backend runs every device in this one process)",
                                            opts.backend));
      }
      const sim::Topology given = sim::load_topology(opts.topology, catalog.root(), 1.0);
      const model::Count ranks = *backend->launched_devices();
      if (given.gpu_count() < ranks) {
        throw model::InputError(fmt::format("--topology {}: has {} GPUs, fewer than the job's {} ranks", opts.topology,
                                            given.gpu_count(), ranks));
      }
      promised = given.placement().first(ranks);
    }
    validate::check_backend_computes_in(opts.backend, matrix.precision);
    if (mode == RunMode::parse_only) return 0;

    validate::ValidationReport report;
    if (const std::vector<std::string> hosts = backend->device_hosts(run); !hosts.empty()) {
      report.placement = sim::placement_from_hosts(hosts);
      // Every rank has every host name, so every rank refuses alike (exit 2) and none waits on another.
      if (promised && !sim::same_grouping(*promised, *report.placement)) {
        throw model::InputError(fmt::format("--topology {}: places the ranks as {}, but they run as {}", opts.topology,
                                            promised->describe(), report.placement->describe()));
      }
    }
    report.command = command_line(cmd);
    report.backend = backend->name();
    report.options = run;
    report.concurrent_devices = backend->concurrent_devices();
    // A validate::DeviceFailure leaves through here to the CLI's exit code 3.
    report.device = backend->device_name();
    for (size_t i = 0; i < cases.size(); ++i) {
      progress(i, cases.size(), cases[i].ring_case.label());
      report.results.push_back(validate::run_case(*backend, cases[i], run, !opts.no_check && backend->reports()));
    }
    progress(cases.size(), cases.size(), "done");
    if (!backend->reports()) return 0;  // an MPI rank other than 0: rank 0 checks, compares and writes

    return finish_report(opts, report, catalog, given_profile);
  };
}

}  // namespace stripesim::cli
