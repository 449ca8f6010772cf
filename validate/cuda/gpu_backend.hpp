#pragma once
// The cuda and nccl backends are one class over how the ring's devices run. `Ring` is the cuda
// backend's ring (one GPU plays the N devices one after another) or the nccl backend's (a GPU per
// device, all at once, NCCL between them); the rest is theirs alike: bf16 or fp16, the shared
// measurement loop, the cuBLAS reference on GPU 0. A Ring has Ring(problem, timeout_s),
// iterate_and_record(record) (one iteration of the whole ring; with a record, its timings
// appended), device_name(), handoff_bytes() and download_output(); a Ring that runs the backward
// of a backward case also has download_gradients(). `AllGather` and `Ulysses` run `--cp allgather`
// and `--cp ulysses` with the same interface (cuda_collectives.hpp, nccl_collectives.hpp).
#include <string>
#include <utility>
#include <vector>

#include "fault_injection.hpp"
#include "gpu_devices.hpp"
#include "measure_ring.hpp"
#include "stripesim/validate/gpu_backends.hpp"
#include "stripesim/validate/ring_backend.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate::gpu {

template <typename Ring, typename AllGather, typename Ulysses>
class GpuBackend final : public RingBackend {
 public:
  // `concurrent_devices`: whether the ring's devices run at once (a GPU each) or in turn.
  GpuBackend(std::string name, bool concurrent_devices) : name_(std::move(name)), concurrent_(concurrent_devices) {}

  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] bool concurrent_devices() const override { return concurrent_; }
  [[nodiscard]] std::string device_name() const override { return gpu_name(0); }
  // A backend whose devices run at once (nccl) needs a GPU each. With no GPU at all there is no
  // limit to give: run() reports that as it does for every case (DeviceFailure, exit code 3).
  [[nodiscard]] std::optional<Count> device_limit() const override {
    if (!concurrent_) return std::nullopt;
    try {
      return visible_gpus();
    } catch (const DeviceFailure&) {
      return std::nullopt;
    }
  }
  [[nodiscard]] bool supports(Precision precision) const override {
    return precision == Precision::bf16 || precision == Precision::fp16;
  }

  [[nodiscard]] RingMeasurement run(const RingProblem& problem, const RunOptions& options) override {
    check_run_options(options);
    check_fault_reached(injected_fault(), name_, options);
    const std::string& cp = problem.ring_case().cp;
    if (cp == "allgather") return run_with<AllGather>(problem, options);
    if (cp == "ulysses") return run_with<Ulysses>(problem, options);
    return run_with<Ring>(problem, options);
  }

  // fp32 cuBLAS on GPU 0 over the inputs rounded to the case's precision (gpu_reference.cpp).
  [[nodiscard]] std::vector<double> dense_reference(const RingProblem& problem,
                                                    const RunOptions& options) const override {
    return gpu_reference_attention(problem, options.timeout_s);
  }
  // The same for the gradients of a backward case (gpu_reference.cpp).
  [[nodiscard]] std::vector<double> dense_gradients(const RingProblem& problem,
                                                    const RunOptions& options) const override {
    return gpu_reference_gradients(problem, options.timeout_s);
  }

 private:
  template <typename Algorithm>
  RingMeasurement run_with(const RingProblem& problem, const RunOptions& options) {
    constexpr bool runs_backward = requires(Algorithm& a) { a.download_gradients(); };
    const bool backward = problem.ring_case().backward;
    if (!runs_backward && backward) check_backend_runs_backward(name_);  // throws: this ring runs the forward only
    Algorithm algorithm(problem, options.timeout_s);
    RingMeasurement m =
        measure_ring(name_, algorithm, options, [&](RingMeasurement* record) { algorithm.iterate_and_record(record); });
    if constexpr (runs_backward) {
      if (backward) {
        m.gradients = algorithm.download_gradients();
        m.gradient_handoff_bytes = algorithm.gradient_handoff_bytes();
      }
    }
    return m;
  }

  std::string name_;
  bool concurrent_;
};

}  // namespace stripesim::validate::gpu
