#include "stripesim/validate/validation_run.hpp"

#include <fmt/format.h>

#include "stripesim/model/input_error.hpp"
#include "stripesim/model/work_model.hpp"
#include "stripesim/validate/reference_cache.hpp"

namespace stripesim::validate {

std::vector<RingCase> expand_matrix(const ValidateMatrix& m) {
  std::vector<RingCase> cases;
  auto add = [&](Count seq_len, Count devices, model::TileShape tile, const std::string& mask, const std::string& layout,
                 const std::string& cp) {
    RingCase c;
    c.seq_len = seq_len;
    c.devices = devices;
    c.layout = layout;
    c.mask = mask;
    c.tile = tile;
    c.heads = m.heads;
    c.kv_heads = m.kv_heads;
    c.head_dim = m.head_dim;
    c.precision = m.precision;
    c.seed = m.seed;
    c.gpu_kernel = m.gpu_kernel;
    c.cp = cp;
    check_ring_case(c);
    cases.push_back(std::move(c));
  };
  for (const Count seq_len : m.seq_lens) {
    for (const Count devices : m.devices) {
      for (const auto& tile : m.tiles) {
        for (const auto& mask : m.masks) {
          for (const auto& layout : m.layouts) {
            for (const auto& cp : m.cps) add(seq_len, devices, tile, mask, layout, cp);
          }
        }
      }
    }
  }
  return cases;
}

void check_backend_runs(std::string_view backend, const std::string& cp) {
  // The host backends (cpu: every device in one process; mpi: a process each) run all three.
  if (cp != "ring" && backend != "cpu" && backend != "mpi") {
    throw model::InputError(
        fmt::format("--cp {}: the {} backend runs the ring only; allgather and ulysses run on --backend cpu or mpi", cp, backend));
  }
}

CaseResult run_case(RingBackend& backend, const RingCase& ring_case, const RunOptions& options, bool check_output) {
  check_backend_runs(backend.name(), ring_case.cp);
  const RingProblem problem(ring_case);
  CaseResult result;
  result.ring_case = ring_case;
  result.work = model::count_work(problem.layout(), problem.mask(), ring_case.tile, 1);
  const RingMeasurement measurement = backend.run(problem, options);
  result.summary = summarize(measurement, ring_case.devices);
  result.handoff_bytes = measurement.handoff_bytes;
  result.tolerance = output_tolerance(ring_case.precision);
  if (check_output) {
    result.checked = true;
    // Every layout, device count and tile of one problem shares its reference (computed by the
    // backend: on the GPU for cuda and nccl, in float64 on the host for cpu).
    const DenseReference reference =
        shared_reference_cache().get(ring_case, [&] { return backend.dense_reference(problem, options); });
    result.error = compare_output(measurement.output, *reference);
    result.passed = result.error.relative < result.tolerance;
  }
  return result;
}

}  // namespace stripesim::validate
