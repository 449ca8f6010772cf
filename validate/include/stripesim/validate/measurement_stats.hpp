#pragma once
// Medians and spreads of repeated timings (the nccl-tests / nvbench practice: warm up, repeat,
// report the median and how far the runs strayed from it).
#include <vector>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate {

struct Spread {
  double median = 0;
  double min = 0;
  double max = 0;
};

// Of a non-empty sample; the median of an even count is the mean of the middle two.
[[nodiscard]] Spread spread_of(std::vector<double> values);

// A prediction's error relative to a timing that took time (measured > 0): (predicted - measured) / measured.
[[nodiscard]] double relative_error(double predicted, double measured);
// The median, smallest and worst of the errors' magnitudes: how a fit or a comparison reports them.
[[nodiscard]] Spread magnitude_spread(const std::vector<double>& errors);

struct MeasurementSummary {
  Count devices = 0;
  std::vector<Spread> kernel;   // [round * devices + device]
  std::vector<Spread> handoff;  // [round * devices + device]
  std::vector<Spread> backward_kernel;   // the same for the backward ring; empty for a forward case
  std::vector<Spread> backward_handoff;
  Spread wall;

  [[nodiscard]] const Spread& kernel_at(Count round, Count device) const {
    return kernel[static_cast<size_t>(round * devices + device)];
  }
  [[nodiscard]] const Spread& handoff_at(Count round, Count device) const {
    return handoff[static_cast<size_t>(round * devices + device)];
  }
  // A (round, device)'s attention time: the forward call's median, plus the backward call's for a
  // backward case (what the simulator's --pass fwdbwd prices the cell at).
  [[nodiscard]] double call_us(Count round, Count device) const {
    const auto cell = static_cast<size_t>(round * devices + device);
    return kernel[cell].median + (backward_kernel.empty() ? 0.0 : backward_kernel[cell].median);
  }
};

[[nodiscard]] MeasurementSummary summarize(const RingMeasurement& measurement, Count devices);

}  // namespace stripesim::validate
