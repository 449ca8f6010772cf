#include "timed_steps.hpp"

namespace stripesim::validate::gpu {

void TimedSteps::record(const Event& event, cudaStream_t stream) {
  check_cuda(cudaEventRecord(event.get(), stream), rank_, "cudaEventRecord of a collective's timing event");
}

void TimedSteps::begin(cudaStream_t stream) {
  next_ = 0;
  record(wall_start_, stream);
}

std::size_t TimedSteps::start(Count device, Cell cell, std::string what, cudaStream_t stream) {
  if (next_ == steps_.size()) steps_.push_back({Event(rank_), Event(rank_), 0, Cell::kernel, {}});
  Step& step = steps_[next_];
  step.device = device;
  step.cell = cell;
  step.what = std::move(what);
  record(step.start, stream);
  return next_++;
}

void TimedSteps::finish(std::size_t step, cudaStream_t stream) { record(steps_[step].end, stream); }

bool TimedSteps::done(const char* failed) const { return event_done(done_.get(), rank_, failed); }

std::optional<std::pair<Count, std::string>> TimedSteps::first_pending() const {
  for (std::size_t i = 0; i < next_; ++i) {
    if (cudaEventQuery(steps_[i].end.get()) != cudaSuccess) return std::pair{steps_[i].device, steps_[i].what};
  }
  return std::nullopt;
}

void TimedSteps::wait(cudaStream_t stream, const Deadline& deadline) {
  mark_done(stream);
  // An error here is asynchronous (a kernel or copy faulted earlier): CUDA cannot say which.
  const auto failed = "the collective's kernels and copies (an asynchronous error: set CUDA_LAUNCH_BLOCKING=1 to "
                      "locate the launch)";
  while (!done(failed)) {
    if (deadline.passed()) {
      hung_ = true;
      if (const auto pending = first_pending()) throw DeviceFailure(pending->first, pending->second, timeout_detail(deadline));
      throw DeviceFailure(rank_, "output normalisation", timeout_detail(deadline));
    }
    poll_pause();
  }
}

void TimedSteps::add_cells(std::vector<double>& kernel_us, std::vector<double>& handoff_us) const {
  for (std::size_t i = 0; i < next_; ++i) {
    const Step& step = steps_[i];
    const double us = elapsed_us(step.start.get(), step.end.get(), step.device);
    std::vector<double>& cells = step.cell == Cell::kernel ? kernel_us : handoff_us;
    cells[static_cast<std::size_t>(step.device)] += us;
  }
}

double TimedSteps::wall_us() const { return elapsed_us(wall_start_.get(), wall_end_.get(), rank_); }

}  // namespace stripesim::validate::gpu
