#pragma once
// The validator's backends behind one interface: each runs the whole forward ring of a
// RingProblem (N rounds; at round r device d computes on the K/V block that started on
// (d - r) mod N, then hands it on to d + 1), and for a backward case (cpu, mpi and cuda) the
// backward ring after it, with warm-up and timed iterations, and returns the output (and the
// gradients) in original order plus a time for every (iteration, round, device).
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/validate/reference_attention.hpp"
#include "stripesim/validate/ring_problem.hpp"

namespace stripesim::validate {

struct RunOptions {
  Count warmup = 1;
  Count iterations = 5;
  // A device operation (kernel, copy, NCCL transfer) that has not completed after this long is
  // reported as a DeviceFailure naming the rank and the operation instead of hanging.
  double timeout_s = 60;
};

struct RingMeasurement {
  std::string backend;      // cpu, cuda, nccl, mpi
  std::string device_name;  // "NVIDIA H100 80GB HBM3", the CPU's model name
  Count iterations = 0;
  // [iteration][round * devices + device], microseconds; 0 where the host skipped the block.
  std::vector<std::vector<double>> kernel_us;
  // [iteration][round * devices + device]: hand-off of the block device d held at `round` to
  // d + 1 (rounds 0 .. N-2; the last round hands nothing on and records 0).
  std::vector<std::vector<double>> handoff_us;
  // [iteration]: the whole ring, first launch to last completion. One processor hosting N
  // virtual devices (cpu, cuda) runs them one after another, so this is their sum there; with
  // nccl it is the real ring's wall time.
  std::vector<double> wall_us;
  // --pass fwdbwd (RingCase::backward), empty otherwise: the backward ring's
  // [iteration][round * devices + device] kernel times and hand-offs (the K/V block on to d + 1
  // as forward, rounds 0 .. N-2, and its dK/dV accumulator, every round: the last hop brings it
  // home), and the last iteration's gradients laid out as reference_gradients's, poisoned (NaN)
  // before every iteration. wall_us then covers the forward and the backward.
  std::vector<std::vector<double>> backward_kernel_us;
  std::vector<std::vector<double>> backward_handoff_us;
  std::vector<double> gradients;
  std::int64_t handoff_bytes = 0;  // one block's K, V and positions
  std::int64_t gradient_handoff_bytes = 0;  // a backward case: one dK/dV accumulator (its own precision)
  // The last iteration's output in original order, [(p * heads + h) * head_dim + i]. Poisoned
  // (NaN) before every iteration, so a token the ring never wrote cannot pass the check.
  std::vector<double> output;
};

// A device that fails: out of memory, missing, an NCCL error, a peer that never answers. The
// message names the rank and the operation; the CLI prints it and exits with code 3.
class DeviceFailure : public std::runtime_error {
 public:
  DeviceFailure(Count rank, std::string operation, const std::string& detail);
  [[nodiscard]] Count rank() const { return rank_; }
  [[nodiscard]] const std::string& operation() const { return operation_; }

 private:
  Count rank_;
  std::string operation_;
};

class RingBackend {
 public:
  virtual ~RingBackend() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::string device_name() const = 0;
  // Precisions this backend computes in.
  [[nodiscard]] virtual bool supports(Precision precision) const = 0;
  [[nodiscard]] virtual RingMeasurement run(const RingProblem& problem, const RunOptions& options) = 0;
  // True when the ring's devices run at once (a GPU or a process each: nccl, mpi), so a ring's
  // time is its makespan; false when one processor plays them in turn (cpu, cuda), so it is the
  // sum of every call and hand-off. Predictions simulate the ring the same way.
  [[nodiscard]] virtual bool concurrent_devices() const = 0;
  // A backend launched as one process per device (mpi: the MPI world) has its ring size fixed by
  // the launch: every case must have that many devices. Empty when any N runs.
  [[nodiscard]] virtual std::optional<Count> launched_devices() const { return std::nullopt; }
  // The largest ring this backend can run here, checked before a matrix starts so that it is not
  // refused half way through (nccl in one process: a GPU per device, as many as it sees). Empty
  // when any N runs.
  [[nodiscard]] virtual std::optional<Count> device_limit() const { return std::nullopt; }
  // The host each device runs on, in device order, for a backend whose devices may span nodes
  // (mpi: every rank's host name, gathered so that every rank has them; every rank must call
  // it). Empty when every device runs in this one process.
  [[nodiscard]] virtual std::vector<std::string> device_hosts([[maybe_unused]] const RunOptions& options) { return {}; }
  // False on the processes of a multi-process backend other than rank 0: they run every case's
  // ring with the others, but only rank 0 holds the gathered output and timings, checks and
  // writes the report.
  [[nodiscard]] virtual bool reports() const { return true; }
  // Dense attention for `problem` in original order, [(p * heads + h) * head_dim + i]: what run()'s
  // output is checked against. By default the host's float64 loop (reference_attention), which
  // costs n^2 per head on one core; the GPU backends override it with fp32 cuBLAS on GPU 0 over
  // the inputs rounded to the case's precision. `options.timeout_s` bounds each device wait.
  // run_case asks through the reference cache, so every layout of one problem shares one answer.
  [[nodiscard]] virtual std::vector<double> dense_reference(const RingProblem& problem,
                                                            [[maybe_unused]] const RunOptions& options) const {
    return reference_attention(problem);
  }
  // The gradients a backward case is checked against (reference_gradients's layout): by default
  // the host's float64 loop; the GPU backends override it with cuBLAS on GPU 0, as above. Only
  // backends that run the backward are asked.
  [[nodiscard]] virtual std::vector<double> dense_gradients(const RingProblem& problem,
                                                            [[maybe_unused]] const RunOptions& options) const {
    return reference_gradients(problem);
  }
};

// True when mpirun / mpiexec (Open MPI, MPICH, Intel MPI) or srun with PMI/PMIx started this
// process as one rank of a job: their environment names its rank. `nccl` then runs one rank.
[[nodiscard]] bool launched_as_mpi_rank();

// "cpu", "cuda", "nccl" or "mpi". A backend this build lacks (no CUDA toolkit, no NCCL, no MPI) is an InputError
// naming what is missing; a missing GPU at run time is a DeviceFailure.
[[nodiscard]] std::unique_ptr<RingBackend> make_backend(std::string_view name);
// The backends compiled into this build.
[[nodiscard]] std::vector<std::string> built_backends();

}  // namespace stripesim::validate
