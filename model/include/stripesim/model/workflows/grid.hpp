#pragma once
// The points of a grid: the Cartesian product of a few axes, in order, the last axis varying
// fastest. Every grid of the project (sweeps, balance sweeps, validate matrices, the sweep flags'
// meshes) is walked by this one helper; each caller names its axes with a structured binding:
//   for_each_grid_point(std::array{seq_lens.size(), devices.size()}, [&](auto at) {
//     const auto [s, d] = at;  ...
//   });
#include <array>
#include <cstddef>

namespace stripesim::model {

template <std::size_t Axes, typename Visit>
void for_each_grid_point(const std::array<std::size_t, Axes>& sizes, Visit&& visit) {
  for (const std::size_t size : sizes) {
    if (size == 0) return;  // an empty axis: no point
  }
  std::array<std::size_t, Axes> at{};
  while (true) {
    visit(at);
    // The next index, like an odometer: the last axis first.
    std::size_t axis = Axes;
    while (axis > 0) {
      --axis;
      if (++at[axis] < sizes[axis]) break;
      at[axis] = 0;
      if (axis == 0) return;
    }
    if constexpr (Axes == 0) return;
  }
}

// How many points the grid has.
template <std::size_t Axes>
[[nodiscard]] std::size_t grid_points(const std::array<std::size_t, Axes>& sizes) {
  std::size_t points = 1;
  for (const std::size_t size : sizes) points *= size;
  return points;
}

}  // namespace stripesim::model
