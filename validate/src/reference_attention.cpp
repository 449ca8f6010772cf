#include "stripesim/validate/reference_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stripesim::validate {

namespace {

// The softmax of query p's scores against its visible keys [lo, hi] for head h (K/V head
// h / group), into probs[key - lo]; returns lo. Every mask of the model lets a query see one
// interval of keys.
size_t softmax_row(const RingProblem& problem, size_t p, size_t h, std::vector<double>& probs) {
  const RingCase& c = problem.ring_case();
  const auto heads = static_cast<size_t>(c.heads);
  const auto kv_heads = static_cast<size_t>(c.kv_heads);
  const auto dim = static_cast<size_t>(c.head_dim);
  const size_t kvh = h / (heads / kv_heads);
  const auto lo = static_cast<size_t>(problem.mask().lowest_key(static_cast<Position>(p)));
  const auto hi = static_cast<size_t>(problem.mask().highest_key(static_cast<Position>(p)));
  const double* qrow = &problem.q()[(p * heads + h) * dim];
  probs.resize(hi - lo + 1);
  double best = -std::numeric_limits<double>::infinity();
  for (size_t key = lo; key <= hi; ++key) {
    const double* krow = &problem.k()[(key * kv_heads + kvh) * dim];
    double dot = 0;
    for (size_t i = 0; i < dim; ++i) dot += qrow[i] * krow[i];
    probs[key - lo] = dot * problem.scale();
    best = std::max(best, probs[key - lo]);
  }
  double sum = 0;
  for (double& s : probs) sum += (s = std::exp(s - best));
  for (double& s : probs) s /= sum;
  return lo;
}

// out[i] += sum_j probs[j] * V[lo + j] of K/V head kvh: the row's output from softmax_row's probs.
void add_weighted_values(const RingProblem& problem, size_t lo, const std::vector<double>& probs, size_t kvh, double* out) {
  const RingCase& c = problem.ring_case();
  const auto kv_heads = static_cast<size_t>(c.kv_heads);
  const auto dim = static_cast<size_t>(c.head_dim);
  for (size_t j = 0; j < probs.size(); ++j) {
    const double* vrow = &problem.v()[((lo + j) * kv_heads + kvh) * dim];
    for (size_t i = 0; i < dim; ++i) out[i] += probs[j] * vrow[i];
  }
}

// Calls row(p, h, lo, probs) for every query p and head h with softmax_row's probabilities.
template <typename Row>
void for_each_softmax_row(const RingProblem& problem, Row&& row) {
  std::vector<double> probs;
  for (size_t p = 0; p < static_cast<size_t>(problem.ring_case().seq_len); ++p) {
    for (size_t h = 0; h < static_cast<size_t>(problem.ring_case().heads); ++h) {
      const size_t lo = softmax_row(problem, p, h, probs);
      row(p, h, lo, probs);
    }
  }
}

}  // namespace

std::vector<double> reference_attention(const RingProblem& problem) {
  const RingCase& c = problem.ring_case();
  const auto heads = static_cast<size_t>(c.heads);
  const auto dim = static_cast<size_t>(c.head_dim);
  const size_t group = heads / static_cast<size_t>(c.kv_heads);
  std::vector<double> out(static_cast<size_t>(c.seq_len) * heads * dim, 0.0);
  for_each_softmax_row(problem, [&](size_t p, size_t h, size_t lo, const std::vector<double>& probs) {
    add_weighted_values(problem, lo, probs, h / group, &out[(p * heads + h) * dim]);
  });
  return out;
}

std::vector<double> reference_gradients(const RingProblem& problem) {
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
  const auto& dout = problem.dout();
  const size_t q_size = n * heads * dim;
  const size_t kv_size = n * kv_heads * dim;
  std::vector<double> grads(static_cast<size_t>(gradient_count(c)), 0.0);
  double* dq = grads.data();
  double* dk = dq + q_size;
  double* dv = dk + kv_size;
  std::vector<double> out(dim);
  for_each_softmax_row(problem, [&](size_t p, size_t h, size_t lo, const std::vector<double>& probs) {
    const double* qrow = &q[(p * heads + h) * dim];
    const double* dorow = &dout[(p * heads + h) * dim];
    const size_t kvh = h / group;
    std::fill(out.begin(), out.end(), 0.0);
    add_weighted_values(problem, lo, probs, kvh, out.data());
    // dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dO * O)), dQ = scale dS K, dK = scale dS^T Q.
    double delta = 0;
    for (size_t i = 0; i < dim; ++i) delta += dorow[i] * out[i];
    double* dqrow = &dq[(p * heads + h) * dim];
    for (size_t j = 0; j < probs.size(); ++j) {
      const size_t kv_at = ((lo + j) * kv_heads + kvh) * dim;
      double dp = 0;
      for (size_t i = 0; i < dim; ++i) dp += dorow[i] * v[kv_at + i];
      const double ds = probs[j] * (dp - delta) * scale;
      for (size_t i = 0; i < dim; ++i) {
        dv[kv_at + i] += probs[j] * dorow[i];
        dqrow[i] += ds * k[kv_at + i];
        dk[kv_at + i] += ds * qrow[i];
      }
    }
  });
  return grads;
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

Count gradient_count(const RingCase& c) { return c.seq_len * (c.heads + 2 * c.kv_heads) * c.head_dim; }

GradientErrors compare_gradients(const std::vector<double>& gradients, const std::vector<double>& reference,
                                 const RingCase& c) {
  const auto q_size = static_cast<std::ptrdiff_t>(c.seq_len * c.heads * c.head_dim);
  const auto kv_size = static_cast<std::ptrdiff_t>(c.seq_len * c.kv_heads * c.head_dim);
  const std::ptrdiff_t bounds[] = {0, q_size, q_size + kv_size, static_cast<std::ptrdiff_t>(gradient_count(c))};
  GradientErrors errors;
  OutputError* parts[] = {&errors.dq, &errors.dk, &errors.dv};
  for (size_t part = 0; part < 3; ++part) {
    const auto slice = [&](const std::vector<double>& all) {
      // A vector of the wrong size compares as missing (infinite error), as compare_output does.
      if (static_cast<std::ptrdiff_t>(all.size()) != bounds[3]) return std::vector<double>{};
      return std::vector<double>(all.begin() + bounds[part], all.begin() + bounds[part + 1]);
    };
    *parts[part] = compare_output(slice(gradients), slice(reference));
  }
  return errors;
}

double GradientErrors::worst_relative() const { return std::max({dq.relative, dk.relative, dv.relative}); }

double output_tolerance(Precision precision) {
  switch (precision) {
    // A ring in float64 against the float64 reference differs by the order of its sums alone
    // (about 1e-16 a sum): 1e-10 leaves six orders of room and still catches a wrong tile that
    // fp32's 1e-5 would let through.
    case Precision::fp64: return 1e-10;
    case Precision::fp32: return 1e-5;
    case Precision::bf16:
    case Precision::fp16: return 2e-2;
  }
  return 1e-5;
}

}  // namespace stripesim::validate
