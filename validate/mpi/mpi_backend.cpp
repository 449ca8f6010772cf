#include "stripesim/validate/mpi_backend.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "mpi_cp.hpp"
#include "mpi_hosts.hpp"
#include "mpi_session.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/validate/cpu_ring.hpp"

namespace stripesim::validate {
namespace {

// One rank's part of the case's context parallelism, in T.
template <typename T>
RingMeasurement measure(const RingProblem& problem, const RunOptions& options, int rank, const std::string& device_name) {
  const std::string& cp = problem.ring_case().cp;
  if (cp == "allgather") return mpi::measure_allgather<T>(problem, options, rank, device_name);
  if (cp == "ulysses") return mpi::measure_ulysses<T>(problem, options, rank, device_name);
  return mpi::measure_ring<T>(problem, options, rank, device_name);
}

class MpiBackend final : public RingBackend {
 public:
  MpiBackend() : device_name_(cpu_ring::cpu_model_name()) {}

  [[nodiscard]] std::string name() const override { return "mpi"; }

  [[nodiscard]] bool concurrent_devices() const override { return true; }
  [[nodiscard]] std::string device_name() const override { return device_name_; }
  [[nodiscard]] bool supports(Precision p) const override { return p == Precision::fp32 || p == Precision::fp64; }
  [[nodiscard]] std::optional<Count> launched_devices() const override { return session_.ranks(); }
  [[nodiscard]] bool reports() const override { return session_.rank() == 0; }
  [[nodiscard]] std::vector<std::string> device_hosts(const RunOptions& options) override {
    return mpi::gather_hosts(session_.rank(), session_.ranks(), options.timeout_s);
  }
  [[nodiscard]] RingMeasurement run(const RingProblem& problem, const RunOptions& options) override {
    const RingCase& c = problem.ring_case();
    if (c.devices != session_.ranks()) {  // the CLI checks this first; a library caller gets the same line
      throw model::InputError(fmt::format("--devices {}: --backend mpi runs one rank per device and this job has {} ranks",
                                          c.devices, session_.ranks()));
    }
    if (!supports(c.precision)) {
      throw model::InputError(fmt::format("--dtype {}: the mpi backend computes in fp32 or fp64", precision_name(c.precision)));
    }
    return c.precision == Precision::fp64 ? measure<double>(problem, options, session_.rank(), device_name_)
                                          : measure<float>(problem, options, session_.rank(), device_name_);
  }

 private:
  mpi::Session session_;
  std::string device_name_;
};

}  // namespace

std::unique_ptr<RingBackend> make_mpi_backend() { return std::make_unique<MpiBackend>(); }

}  // namespace stripesim::validate
