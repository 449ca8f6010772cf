#include "stripesim/validate/validate_workflow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "stripesim/validate/calibration.hpp"

namespace stripesim::validate {

bool is_gpu_backend(std::string_view backend) { return backend == "cuda" || backend == "nccl"; }

void check_backend_computes_in(std::string_view backend, Precision precision) {
  const bool gpu = is_gpu_backend(backend);
  const bool computes = gpu ? precision == Precision::bf16 || precision == Precision::fp16
                            : precision == Precision::fp32 || precision == Precision::fp64;
  if (!computes) {
    throw model::InputError(model::Input::dtype, std::string(precision_name(precision)),
                            fmt::format("the {} backend computes in {}", backend, gpu ? "bf16 or fp16" : "fp32 or fp64"));
  }
}

ValidateMatrix default_matrix(std::string_view backend, bool fitting, bool backward) {
  ValidateMatrix m;
  const bool gpu = is_gpu_backend(backend);
  m.backward = backward;
  if (fitting) {
    m.devices = {2, 4, 8};
    m.seq_lens = gpu ? std::vector<Count>{16384, 32768} : std::vector<Count>{1024, 2048};
    m.tiles = gpu ? std::vector<model::TileShape>{{64, 64}, {128, 128}} : std::vector<model::TileShape>{{32, 32}, {64, 64}};
  } else if (gpu) {
    m.seq_lens = {16384};
    m.tiles = {{128, 128}};
  }
  if (gpu && backward) {
    for (Count& n : m.seq_lens) n /= 2;
  }
  if (gpu) {
    m.heads = 16;
    m.kv_heads = 16;
    m.head_dim = 128;
    m.precision = Precision::bf16;
  }
  return m;
}

model::HardwareProfile base_hardware(const model::ConfigCatalog& catalog, const std::string& hardware,
                                     std::string_view backend, const std::string& device_name) {
  if (!hardware.empty()) return catalog.hardware(hardware);
  if (!is_gpu_backend(backend)) return catalog.hardware("cpu");
  return catalog.hardware_for_device(device_name).value_or(catalog.hardware("h100"));
}

sim::KernelProfile validator_kernel(const model::ConfigCatalog& catalog, const std::string& kernel, std::string_view backend,
                                    const RingCase& run, const model::HardwareProfile& hardware, bool costs_fitted) {
  const std::string name = !kernel.empty()            ? kernel
                           : is_gpu_backend(backend) ? "stripesim-" + std::string(gpu_kernel_name(run.gpu_kernel))
                                                     : "";
  const bool wgmma_default = kernel.empty() && is_gpu_backend(backend) && run.gpu_kernel == GpuKernel::wgmma;
  sim::KernelProfile profile = [&] {
    try {
      return sim::load_kernel_profile(name, catalog, hardware);
    } catch (const model::InputError& e) {
      // Only a kernel no folder holds: one that does not read is refused, not replaced.
      if (!wgmma_default || e.input() != model::Input::kernel) throw;
      if (!costs_fitted) {
        throw model::InputError(fmt::format("--gpu-kernel wgmma: no stripesim-wgmma kernel profile for {} yet; drop "
                                            "--profile to fit one on this run, or give --kernel",
                                            hardware.name));
      }
      sim::KernelProfile flash = sim::load_kernel_profile("stripesim-flash", catalog, hardware);
      flash.name = name;
      flash.description = fmt::format("stripesim's wgmma validation kernel (validate/cuda/wgmma_attention.cuh), fitted "
                                      "from the {} stripesim-flash profile's costs: none was measured for it on {} yet",
                                      hardware.name, hardware.name);
      return flash;
    }
  }();
  if (kernel.empty() && is_gpu_backend(backend) && run.backward) {
    profile.backward_block_keys = gpu_backward_block_keys(run.gpu_backward_kernel);
  }
  return profile;
}

const RingCase& kernels_case(const std::vector<CaseResult>& results) {
  const auto backward = std::ranges::find_if(results, [](const CaseResult& r) { return r.ring_case.backward; });
  return (backward != results.end() ? *backward : results.front()).ring_case;
}

void check_backward_costs_known(bool given_profile, const std::string& kernel, std::string_view backend, const RingCase& run) {
  if (given_profile && kernel.empty() && is_gpu_backend(backend) && run.backward &&
      run.gpu_backward_kernel != GpuBackwardKernel::scalar) {
    throw model::InputError(fmt::format(
        "--profile with --gpu-backward-kernel {}: the shipped stripesim profiles' backward costs are the scalar kernel's; "
        "leave out --profile to fit on this run, or give --kernel a profile fitted on a {} backward run",
        gpu_backward_kernel_name(run.gpu_backward_kernel), gpu_backward_kernel_name(run.gpu_backward_kernel)));
  }
}

namespace {

// The cases that differ in length, ring size or seed only: one kernel variant (tile shape), one
// layout, one mask, one problem shape.
std::string case_family(const RingCase& c) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", c.layout, c.mask, c.tile.to_string(), c.heads, c.kv_heads,
                     c.head_dim, precision_name(c.precision), gpu_kernel_name(c.gpu_kernel), c.backward,
                     gpu_backward_kernel_name(c.gpu_backward_kernel));
}

}  // namespace

std::vector<CaseRole> case_roles(const std::vector<CaseResult>& results, bool hold_out) {
  std::vector<CaseRole> roles(results.size(), CaseRole::checked);
  // Per family: how many of its ring cases came before, and where its alternation starts.
  struct Family {
    size_t seen = 0, start = 0;
  };
  std::map<std::string, Family> families;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ring_case.cp != "ring") {
      roles[i] = hold_out ? CaseRole::held_out : CaseRole::checked;
      continue;
    }
    const auto [it, added] = families.try_emplace(case_family(results[i].ring_case));
    if (added) it->second.start = (families.size() - 1) % 2;
    const bool odd = (it->second.start + it->second.seen++) % 2 == 1;
    roles[i] = hold_out && odd ? CaseRole::held_out : CaseRole::calibration;
  }
  return roles;
}

void predict_and_compare(ValidationReport& report, const PredictionInputs& inputs, bool concurrent_devices) {
  std::vector<CaseRole> roles(report.results.size(), CaseRole::checked);
  if (inputs.given) {
    report.profile = *inputs.given;
  } else {
    roles = case_roles(report.results, inputs.hold_out);
    std::vector<const CaseResult*> fit_on;
    for (size_t i = 0; i < report.results.size(); ++i) {
      if (roles[i] == CaseRole::calibration) fit_on.push_back(&report.results[i]);
    }
    report.calibration = calibrate(fit_on, inputs.base, inputs.kernel(inputs.base), report.device,
                                   report.placement ? &*report.placement : nullptr, concurrent_devices);
    report.profile = report.calibration->profile;
    report.kernel = report.calibration->kernel;
  }
  if (!report.kernel) report.kernel = inputs.kernel(*report.profile);
  if (report.placement) {
    report.topology = placed_topology(*report.placement, *report.profile,
                                      report.calibration ? report.calibration->inter_node : std::nullopt);
  }
  for (size_t i = 0; i < report.results.size(); ++i) {
    const auto prediction = predict_case(report.results[i], *report.profile, *report.kernel, concurrent_devices, report.topology);
    report.comparisons.push_back(
        compare_case(report.results[i], prediction, roles[i], report.placement ? &*report.placement : nullptr, concurrent_devices));
  }
}

}  // namespace stripesim::validate
