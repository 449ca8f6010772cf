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

struct MeasurementSummary {
  Count devices = 0;
  std::vector<Spread> kernel;   // [round * devices + device]
  std::vector<Spread> handoff;  // [round * devices + device]
  Spread wall;

  [[nodiscard]] const Spread& kernel_at(Count round, Count device) const {
    return kernel[static_cast<size_t>(round * devices + device)];
  }
  [[nodiscard]] const Spread& handoff_at(Count round, Count device) const {
    return handoff[static_cast<size_t>(round * devices + device)];
  }
};

[[nodiscard]] MeasurementSummary summarize(const RingMeasurement& measurement, Count devices);

}  // namespace stripesim::validate
