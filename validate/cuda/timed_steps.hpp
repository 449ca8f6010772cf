#pragma once
// The steps of one iteration of a collective on one stream (the all-gather's and Ulysses' copies,
// transfers and calls: cuda_collectives.hpp, nccl_collectives.hpp), each between two events and
// named for a failure, in the order they were enqueued; events are made on the first iteration
// and reused. Each step is a device's round 0 cell, its kernel or (summed) its hand-off, the
// cells the cpu backend fills for these algorithms.
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device_resources.hpp"
#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate::gpu {

class TimedSteps {
 public:
  enum class Cell { kernel, handoff };

  // Events on the CURRENT device; `rank` names it in failures of the events themselves.
  explicit TimedSteps(Count rank) : rank_(rank), wall_start_(rank), wall_end_(rank), done_(rank) {}

  // Starts an iteration on `stream`: its wall starts here.
  void begin(cudaStream_t stream);
  // Opens `device`'s `cell` step on `stream` (`what` names it in a failure); returns its index
  // for finish().
  std::size_t start(Count device, Cell cell, std::string what, cudaStream_t stream);
  void finish(std::size_t step, cudaStream_t stream);
  // start(), what `enqueue` puts on `stream`, finish().
  template <typename Enqueue>
  void time(Count device, Cell cell, std::string what, cudaStream_t stream, Enqueue&& enqueue) {
    const std::size_t step = start(device, cell, std::move(what), stream);
    enqueue();
    finish(step, stream);
  }
  // Ends the wall here.
  void end_wall(cudaStream_t stream) { record(wall_end_, stream); }
  // Marks the end of everything enqueued on `stream` so far; done() polls it (a CUDA error is a
  // DeviceFailure naming `failed`).
  void mark_done(cudaStream_t stream) { record(done_, stream); }
  [[nodiscard]] bool done(const char* failed) const;
  // The first step of this iteration that has not completed: (its device, its name).
  [[nodiscard]] std::optional<std::pair<Count, std::string>> first_pending() const;
  // mark_done(), then polls until done; past the deadline a DeviceFailure naming the first step
  // that did not complete (and hung() true from then on).
  void wait(cudaStream_t stream, const Deadline& deadline);
  [[nodiscard]] bool hung() const { return hung_; }
  // The last iteration's steps added to round 0's cells, [0 * devices + device] = [device], of
  // `kernel_us` and `handoff_us` (a device's hand-offs summed).
  void add_cells(std::vector<double>& kernel_us, std::vector<double>& handoff_us) const;
  // The last iteration's wall, begin() to end_wall().
  [[nodiscard]] double wall_us() const;

 private:
  struct Step {
    Event start, end;
    Count device;
    Cell cell;
    std::string what;
  };
  void record(const Event& event, cudaStream_t stream);

  Count rank_;
  std::vector<Step> steps_;
  std::size_t next_ = 0;
  Event wall_start_, wall_end_, done_;
  bool hung_ = false;
};

}  // namespace stripesim::validate::gpu
