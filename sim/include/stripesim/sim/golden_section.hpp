#pragma once
// Golden-section search: the one line search the fits share (the step fit's element-wise bytes,
// a kernel fit's per-score share of a tile). Both first try a grid and hand this the two grid
// points beside the best, where the function is taken to have one minimum.
#include <cmath>
#include <concepts>
#include <utility>

namespace stripesim::sim {

// Narrows [lo, hi] around a minimum of f: each step keeps the part of the bracket beside the
// smaller of its two inner values (the left part on a tie) and evaluates f once, at the inner
// point the kept part lacks. Returns the bracket after `steps` steps, 0.618^steps of the first.
// Callers that want the best point f was evaluated at record it inside f.
template <typename F>
  requires std::invocable<F&, double>
[[nodiscard]] std::pair<double, double> golden_section(F&& f, double lo, double hi, int steps) {
  const double inverse_golden = (std::sqrt(5.0) - 1) / 2;
  double a = hi - inverse_golden * (hi - lo), b = lo + inverse_golden * (hi - lo);
  double fa = f(a), fb = f(b);
  for (int i = 0; i < steps; ++i) {
    if (fa <= fb) {
      hi = b, b = a, fb = fa;
      a = hi - inverse_golden * (hi - lo);
      fa = f(a);
    } else {
      lo = a, a = b, fa = fb;
      b = lo + inverse_golden * (hi - lo);
      fb = f(b);
    }
  }
  return {lo, hi};
}

}  // namespace stripesim::sim
