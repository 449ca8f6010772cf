#pragma once
// Dense attention in float64 straight from the definition, on ORIGINAL positions: what the ring's
// output must equal once the layout's permutation is undone.
#include <vector>

#include "stripesim/validate/ring_problem.hpp"

namespace stripesim::validate {

// [(p * heads + h) * head_dim + i]
[[nodiscard]] std::vector<double> reference_attention(const RingProblem& problem);

struct OutputError {
  double max_abs = 0;        // max |output - reference|
  double max_reference = 0;  // max |reference|
  double relative = 0;       // max_abs / max_reference; infinity when any output is NaN or missing
};

[[nodiscard]] OutputError compare_output(const std::vector<double>& output, const std::vector<double>& reference);

// The bars: 1e-5 for float32 (and float64) on the CPU, 2e-2 for bf16/fp16 on a GPU.
[[nodiscard]] double output_tolerance(Precision precision);

}  // namespace stripesim::validate
