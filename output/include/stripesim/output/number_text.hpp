#pragma once
// Numbers as the tables and Markdown print them.
#include <cmath>

namespace stripesim::output {

// `value` as printed with `decimals` decimals: one that rounds to zero is 0, so a difference a
// hair below zero prints 0.0000 (or +0.0%), never -0.0000.
[[nodiscard]] inline double as_printed(double value, int decimals) {
  return std::abs(value) * std::pow(10.0, decimals) < 0.5 ? 0.0 : value;
}

}  // namespace stripesim::output
