#pragma once
// What `stripesim validate` decides apart from its flags and files: the matrix each backend runs
// by default, which profiles predictions start from, which cases a fit sees and which it is
// judged on, and the predictions themselves. The CLI parses, runs the cases and prints.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/validate/comparison.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate {

// cuda and nccl: the backends that run on GPUs (and compute in bf16 or fp16).
[[nodiscard]] bool is_gpu_backend(std::string_view backend);
// Throws model::InputError ("--dtype fp32: the cuda backend computes in bf16 or fp16") unless
// `backend` computes in `precision`: the GPU backends in bf16 and fp16, the host ones (cpu, mpi)
// in fp32 and fp64. What a run is refused for, and a saved run (validate --from) that says otherwise.
void check_backend_computes_in(std::string_view backend, Precision precision);

// The matrix `backend` runs where no flag says otherwise. `fitting` (--calibrate, --compare):
// three ring sizes, two lengths and two tiles, sized so that the CPU backend's fit finishes in
// well under a minute and the GPU backends time kernels long enough to measure. `backward`
// (--pass fwdbwd) halves the GPU lengths: the GPU backward kernel is scalar, 90 to 110 times the
// forward's time, and the fitting matrix at 16k and 32k tokens would run for about 15 minutes on
// an H200 where 8k and 16k take 2 to 3.
[[nodiscard]] ValidateMatrix default_matrix(std::string_view backend, bool fitting, bool backward);

// The hardware profile predictions start from: `hardware` (a name or JSON) where given, the cpu
// profile on the host backends, else the profile whose device_names claim the device the run was
// on (the name the driver reports), an H100 when none does.
[[nodiscard]] model::HardwareProfile base_hardware(const model::ConfigCatalog& catalog, const std::string& hardware,
                                                   std::string_view backend, const std::string& device_name);

// The kernel profile the validator's own runs are fitted from: `kernel` where given, else the
// kernel the backend runs (the CPU backend's loops: the hardware's default; on a GPU
// stripesim-flash, stripesim-wgmma or stripesim-wmma, as `run` (a case of the run) says), its
// backward blocks holding the keys the run's backward kernel gives them. The wgmma kernel runs
// the flash kernel's algorithm: on hardware with no stripesim-wgmma profile yet (measured on an
// H200 only), a run whose costs are fitted (`costs_fitted`) starts from stripesim-flash's, named
// and described as the wgmma kernel's; a prediction without a fit is refused (InputError), since
// it would price the wgmma kernel at the flash kernel's speed.
[[nodiscard]] sim::KernelProfile validator_kernel(const model::ConfigCatalog& catalog, const std::string& kernel,
                                                  std::string_view backend, const RingCase& run,
                                                  const model::HardwareProfile& hardware, bool costs_fitted = false);

// The case whose kernels a run's predictions describe (validator_kernel, check_backward_costs_known):
// its first backward case where it has one (runs merged with --from may put a forward-only run
// first), else its first case. `results` is not empty.
[[nodiscard]] const RingCase& kernels_case(const std::vector<CaseResult>& results);

// Throws model::InputError when predictions would use a shipped profile's backward costs for a
// backward kernel they were not measured on: the shipped stripesim profiles' backward costs are
// the scalar backward's, so a `wmma` backward run is predicted by fitting on it (or with
// --kernel naming a profile fitted on one), never with --profile alone.
void check_backward_costs_known(bool given_profile, const std::string& kernel, std::string_view backend, const RingCase& run);

// Which cases a fit sees. With `hold_out`, ring cases alternate within each family (the cases
// that differ in length, ring size or seed only: the same layout, mask, tile shape and problem),
// each family starting where the one before it did not, so every tile shape's fit sees every
// layout and mask, and every (length, N) is held out for some of them; without, all calibrate.
// (Alternating over the whole matrix held out the same layouts at every size: with three layouts
// and two tile shapes, one shape's fit saw striped calls only.) All-gather and Ulysses cases are
// never fitted on (the fit is per ring round): held out with `hold_out`, only checked without.
[[nodiscard]] std::vector<CaseRole> case_roles(const std::vector<CaseResult>& results, bool hold_out);

struct PredictionInputs {
  model::HardwareProfile base;                 // the profile a fit starts from
  std::optional<model::HardwareProfile> given;  // predict with this profile instead of fitting one
  // The validator's kernel profile on a hardware profile (validator_kernel with the flags bound).
  std::function<sim::KernelProfile(const model::HardwareProfile&)> kernel;
  bool hold_out = false;  // --compare: predict the cases the fit did not see
};

// Fits the profile on the calibration cases (unless one is given), then predicts every case of
// the report as the simulator would run it (devices at once or in turn, as the backend ran them;
// on the placement's topology when the job spans nodes) and compares: fills the report's
// calibration, profile, kernel, topology and comparisons.
void predict_and_compare(ValidationReport& report, const PredictionInputs& inputs, bool concurrent_devices);

}  // namespace stripesim::validate
