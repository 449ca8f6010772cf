#include "stripesim/validate/reference_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stripesim::validate {

std::vector<double> reference_attention(const RingProblem& problem) {
  const RingCase& c = problem.ring_case();
  const auto n = static_cast<size_t>(c.seq_len);
  const auto heads = static_cast<size_t>(c.heads);
  const auto kv_heads = static_cast<size_t>(c.kv_heads);
  const auto dim = static_cast<size_t>(c.head_dim);
  const size_t group = heads / kv_heads;
  const double scale = problem.scale();
  const auto& q = problem.q();
  const auto& k = problem.k();
  const auto& v = problem.v();
  std::vector<double> out(n * heads * dim, 0.0);
  std::vector<double> scores;
  for (size_t p = 0; p < n; ++p) {
    // Every mask of the model lets a query see one interval of keys.
    const auto lo = static_cast<size_t>(problem.mask().lowest_key(static_cast<Position>(p)));
    const auto hi = static_cast<size_t>(problem.mask().highest_key(static_cast<Position>(p)));
    scores.resize(hi - lo + 1);
    for (size_t h = 0; h < heads; ++h) {
      const double* qrow = &q[(p * heads + h) * dim];
      const size_t kvh = h / group;
      double best = -std::numeric_limits<double>::infinity();
      for (size_t key = lo; key <= hi; ++key) {
        const double* krow = &k[(key * kv_heads + kvh) * dim];
        double dot = 0;
        for (size_t i = 0; i < dim; ++i) dot += qrow[i] * krow[i];
        scores[key - lo] = dot * scale;
        best = std::max(best, scores[key - lo]);
      }
      double sum = 0;
      double* orow = &out[(p * heads + h) * dim];
      for (size_t key = lo; key <= hi; ++key) {
        const double weight = std::exp(scores[key - lo] - best);
        sum += weight;
        const double* vrow = &v[(key * kv_heads + kvh) * dim];
        for (size_t i = 0; i < dim; ++i) orow[i] += weight * vrow[i];
      }
      for (size_t i = 0; i < dim; ++i) orow[i] /= sum;
    }
  }
  return out;
}

OutputError compare_output(const std::vector<double>& output, const std::vector<double>& reference) {
  OutputError error;
  for (const double r : reference) error.max_reference = std::max(error.max_reference, std::abs(r));
  if (output.size() != reference.size()) {
    error.max_abs = error.relative = std::numeric_limits<double>::infinity();
    return error;
  }
  for (size_t i = 0; i < output.size(); ++i) {
    const double diff = std::abs(output[i] - reference[i]);
    // NaN (a poisoned token the ring never wrote) must fail, and NaN compares false.
    if (!(diff <= error.max_abs)) error.max_abs = std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff;
  }
  error.relative = error.max_reference > 0 ? error.max_abs / error.max_reference : error.max_abs;
  return error;
}

double output_tolerance(Precision precision) {
  return precision == Precision::bf16 || precision == Precision::fp16 ? 2e-2 : 1e-5;
}

}  // namespace stripesim::validate
