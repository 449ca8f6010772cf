#pragma once
// Dense attention in float64 straight from the definition, on ORIGINAL positions: what the ring's
// output must equal once the layout's permutation is undone.
#include <vector>

#include "stripesim/validate/ring_problem.hpp"

namespace stripesim::validate {

// [(p * heads + h) * head_dim + i]
[[nodiscard]] std::vector<double> reference_attention(const RingProblem& problem);

// The gradients of the loss sum(O * dO) (dO: problem.dout()) with respect to Q, K and V, in
// float64 straight from the definition, one after the other in one vector: dQ
// [(p * heads + h) * head_dim + i], then dK and dV [(p * kv_heads + h) * head_dim + i] (a K/V head's
// gradient sums the query heads of its group). The backward ring's gradients are laid out the same.
[[nodiscard]] std::vector<double> reference_gradients(const RingProblem& problem);
// The length of that vector: seq_len x (heads + 2 kv_heads) x head_dim.
[[nodiscard]] Count gradient_count(const RingCase& ring_case);

struct OutputError {
  double max_abs = 0;        // max |output - reference|
  double max_reference = 0;  // max |reference|
  double relative = 0;       // max_abs / max_reference; infinity when any output is NaN or missing
};

[[nodiscard]] OutputError compare_output(const std::vector<double>& output, const std::vector<double>& reference);

// dQ, dK and dV of a gradient vector laid out as reference_gradients's, each compared with its
// part of `reference` (so a small dV cannot hide under a large dQ).
struct GradientErrors {
  OutputError dq, dk, dv;
  [[nodiscard]] double worst_relative() const;
};
[[nodiscard]] GradientErrors compare_gradients(const std::vector<double>& gradients, const std::vector<double>& reference,
                                               const RingCase& ring_case);

// The bars: 1e-10 for float64 and 1e-5 for float32 on the host, 2e-2 for bf16/fp16 on a GPU.
[[nodiscard]] double output_tolerance(Precision precision);

}  // namespace stripesim::validate
