#include "stripesim/validate/validation_run.hpp"

#include <fmt/format.h>

#include <array>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/model/workflows/grid.hpp"
#include "stripesim/validate/reference_cache.hpp"

namespace stripesim::validate {

std::vector<RingCase> expand_matrix(const ValidateMatrix& m) {
  std::vector<RingCase> cases;
  const std::array axes{m.seq_lens.size(), m.devices.size(), m.tiles.size(), m.masks.size(), m.layouts.size(), m.cps.size()};
  model::for_each_grid_point(axes, [&](auto at) {
    const auto [s, d, t, k, l, p] = at;
    RingCase c;
    c.seq_len = m.seq_lens[s];
    c.devices = m.devices[d];
    c.layout = m.layouts[l];
    c.mask = m.masks[k];
    c.tile = m.tiles[t];
    c.heads = m.heads;
    c.kv_heads = m.kv_heads;
    c.head_dim = m.head_dim;
    c.precision = m.precision;
    c.seed = m.seed;
    c.gpu_kernel = m.gpu_kernel;
    c.gpu_backward_kernel = m.gpu_backward_kernel;
    c.cp = m.cps[p];
    c.backward = m.backward;
    try {
      check_ring_case(c);
    } catch (const model::IndivisibleLength& e) {
      throw model::for_every_layout(e, m.layouts, m.devices, kMaxValidateTokens);  // lengths every case takes
    }
    cases.push_back(std::move(c));
  });
  return cases;
}

void check_backend_runs(std::string_view backend, const std::string& cp) {
  // cpu (every device in one process), mpi (a process each), cuda (every device in turn on one
  // GPU) and nccl from one process (a GPU each) run all three; nccl started as one rank of an
  // MPI job runs its ring only.
  if (cp != "ring" && backend == "nccl" && launched_as_mpi_rank()) {
    throw model::InputError(fmt::format("--cp {}: --backend nccl under mpirun runs the ring only; allgather and ulysses run on "
                                        "--backend nccl in one process (without mpirun), cuda or mpi",
                                        cp));
  }
}

void check_backend_runs_backward(std::string_view backend) {
  if (backend != "cpu" && backend != "mpi" && backend != "cuda") {
    throw model::InputError(fmt::format(
        "--pass fwdbwd: the {} backend runs the forward only; the backward ring runs on --backend cpu, mpi or cuda", backend));
  }
}

std::vector<RingPlan> plan_matrix(const ValidateMatrix& matrix) {
  std::vector<RingPlan> plans;
  for (RingCase& c : expand_matrix(matrix)) {
    try {
      plans.push_back(plan_ring_problem(std::move(c)));
    } catch (const model::IndivisibleLength& e) {
      throw model::for_every_layout(e, matrix.layouts, matrix.devices, kMaxValidateTokens);  // lengths every case takes
    }
  }
  return plans;
}

CaseResult run_case(RingBackend& backend, const RingPlan& plan, const RunOptions& options, bool check_output) {
  const RingCase& ring_case = plan.ring_case;
  check_backend_runs(backend.name(), ring_case.cp);
  if (ring_case.backward) check_backend_runs_backward(backend.name());
  const RingProblem problem(plan);
  CaseResult result;
  result.ring_case = ring_case;
  result.work = model::count_work(problem.layout(), problem.mask(), ring_case.tile, 1);
  const RingMeasurement measurement = backend.run(problem, options);
  result.summary = summarize(measurement, ring_case.devices);
  result.handoff_bytes = measurement.handoff_bytes;
  result.gradient_handoff_bytes = measurement.gradient_handoff_bytes;
  result.tolerance = output_tolerance(ring_case.precision);
  if (check_output) {
    result.checked = true;
    // Every layout, device count and tile of one problem shares its reference (computed by the
    // backend: on the GPU for cuda and nccl, in float64 on the host for cpu).
    const DenseReference reference =
        shared_reference_cache().get(ring_case, [&] { return backend.dense_reference(problem, options); });
    result.error = compare_output(measurement.output, *reference);
    if (ring_case.backward) {
      const DenseReference gradients = shared_reference_cache().get(
          ring_case, [&] { return backend.dense_gradients(problem, options); }, ReferenceOf::gradients);
      result.gradient_error = compare_gradients(measurement.gradients, *gradients, ring_case);
    }
    result.passed = result.within_tolerance();
  }
  return result;
}

}  // namespace stripesim::validate
