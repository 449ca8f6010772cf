#pragma once
// A validation matrix (layouts x masks x N x sequence lengths x tiles) and the run of one case:
// the ring on a backend, its output against dense attention, its timings summarised, and the
// work model's counts for the same case beside them.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/work/work_matrix.hpp"
#include "stripesim/validate/measurement_stats.hpp"
#include "stripesim/validate/reference_attention.hpp"
#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate {

struct ValidateMatrix {
  std::vector<std::string> layouts{"contiguous", "striped", "zigzag"};
  std::vector<std::string> masks{"causal"};
  std::vector<Count> devices{4};
  std::vector<Count> seq_lens{2048};
  std::vector<model::TileShape> tiles{{64, 64}};
  Count heads = 2;
  Count kv_heads = 1;
  Count head_dim = 32;
  Precision precision = Precision::fp32;
  std::uint64_t seed = 1;
  GpuKernel gpu_kernel = GpuKernel::flash;
  GpuBackwardKernel gpu_backward_kernel = GpuBackwardKernel::scalar;
  std::vector<std::string> cps{"ring"};  // context parallelism (RingCase::cp)
  bool backward = false;                 // --pass fwdbwd (RingCase::backward)
};

// Every combination, in a fixed order (sequence length, N, tile, mask, layout, cp). Each case is
// checked (InputError naming the case when a size does not divide).
[[nodiscard]] std::vector<RingCase> expand_matrix(const ValidateMatrix& matrix);

// Throws model::InputError unless `backend` runs context parallelism `cp`: every backend runs
// ring, allgather and ulysses, except nccl in a process that an MPI launcher started (one rank
// of the ring per process: the ring only).
void check_backend_runs(std::string_view backend, const std::string& cp);
// Throws model::InputError unless `backend` runs the backward ring (--pass fwdbwd): the cpu, mpi
// and cuda backends do; nccl runs the forward.
void check_backend_runs_backward(std::string_view backend);

struct CaseResult {
  RingCase ring_case;
  bool checked = false;  // the output was compared with dense attention
  OutputError error;
  std::optional<GradientErrors> gradient_error;  // a checked backward case: dQ, dK, dV against dense gradients
  double tolerance = 0;
  bool passed = true;
  MeasurementSummary summary;
  std::int64_t handoff_bytes = 0;
  std::int64_t gradient_handoff_bytes = 0;  // a backward case: what one dK/dV hop moved
  model::Work work;  // the work model's counts for this case

  // A checked case passes when its output's relative error, and a backward case's worst
  // gradient's, are below the tolerance.
  [[nodiscard]] bool within_tolerance() const {
    return error.relative < tolerance && (!gradient_error || gradient_error->worst_relative() < tolerance);
  }
};

// Every case of the matrix planned (plan_ring_problem), in expand_matrix's order: what parse-only
// mode checks, and what run_case runs.
[[nodiscard]] std::vector<RingPlan> plan_matrix(const ValidateMatrix& matrix);

// `check_output`: also compare with dense attention, the backend's dense_reference computed once
// per problem through shared_reference_cache() (the expensive part for large n).
[[nodiscard]] CaseResult run_case(RingBackend& backend, const RingPlan& plan, const RunOptions& options,
                                  bool check_output);

using CaseProgress = std::function<void(size_t done, size_t total, const std::string& label)>;

}  // namespace stripesim::validate
