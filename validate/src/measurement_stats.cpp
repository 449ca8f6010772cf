#include "stripesim/validate/measurement_stats.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace stripesim::validate {

Spread spread_of(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  const double median = values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
  return {median, values.front(), values.back()};
}

double relative_error(double predicted, double measured) { return (predicted - measured) / measured; }

Spread magnitude_spread(const std::vector<double>& errors) {
  std::vector<double> magnitudes;
  magnitudes.reserve(errors.size());
  for (const double e : errors) magnitudes.push_back(std::abs(e));
  return spread_of(std::move(magnitudes));
}

namespace {

std::vector<Spread> per_cell(const std::vector<std::vector<double>>& runs, size_t cells) {
  std::vector<Spread> out(cells);
  std::vector<double> column;
  for (size_t cell = 0; cell < cells; ++cell) {
    column.clear();
    for (const auto& run : runs) column.push_back(run[cell]);
    out[cell] = spread_of(column);
  }
  return out;
}

}  // namespace

MeasurementSummary summarize(const RingMeasurement& measurement, Count devices) {
  MeasurementSummary summary;
  summary.devices = devices;
  const auto cells = static_cast<size_t>(devices * devices);
  summary.kernel = per_cell(measurement.kernel_us, cells);
  summary.handoff = per_cell(measurement.handoff_us, cells);
  if (!measurement.backward_kernel_us.empty()) {
    summary.backward_kernel = per_cell(measurement.backward_kernel_us, cells);
    summary.backward_handoff = per_cell(measurement.backward_handoff_us, cells);
  }
  summary.wall = spread_of(measurement.wall_us);
  return summary;
}

}  // namespace stripesim::validate
