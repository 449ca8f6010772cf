#pragma once
// FLOP accounting of one training step of a decoder-only transformer, split into the part that
// scales with tokens (matmuls: projections, MLP, LM head) and the part that scales with unmasked
// (q, k) pairs (attention's QK^T and PV, 4 * heads * head_dim FLOPs per pair per layer).
//
// Conventions:
//   paper  the Striped Attention paper's TMS: per token per layer 2*(4d^2 + 2*d*d_ff) + 2*d*V/L
//          (Q, K, V, O; the MLP as two d x d_ff matrices; the LM head spread over the L layers),
//          attention 4*d per pair. Reproduces its TMS tables.
//   exact  what a Llama block does: Q and O d x d, K and V d x (kv_heads * head_dim), SwiGLU's
//          three d x d_ff matrices (two for a GELU MLP), the LM head once, attention
//          4 * heads * head_dim per pair.
//
// Training multipliers (multiples of the forward FLOPs): forward 1; backward 2 for matmuls
// (gradients of inputs and weights); attention backward 2 in `paper`, 2.5 in `exact`
// (FlashAttention recomputes QK^T in its backward); activation recomputation adds one forward.
// In a TMS ratio a multiplier shared by matmuls and attention cancels; only a difference between
// them (exact's 3.5 against 3 for forward+backward) moves the result.
#include <string>
#include <string_view>

#include "stripesim/model/flops/transformer_model.hpp"

namespace stripesim::model {

enum class FlopConvention { paper, exact };
enum class TrainingPass { forward, forward_backward };

[[nodiscard]] FlopConvention parse_flop_convention(std::string_view text);
[[nodiscard]] TrainingPass parse_training_pass(std::string_view text);
// Activation recomputation is the backward's: refused with a forward-only pass.
void require_backward_for_recompute(TrainingPass pass, bool recompute);
[[nodiscard]] std::string to_string(FlopConvention convention);
[[nodiscard]] std::string to_string(TrainingPass pass);

struct TrainingMultipliers {
  double matmul = 1;
  double attention = 1;
};

[[nodiscard]] TrainingMultipliers training_multipliers(FlopConvention convention, TrainingPass pass, bool recompute);
// Attention's backward in multiples of its forward: 2 in `paper`, 2.5 in `exact` (its five
// products, QK^T recomputed among them, against the forward's two).
[[nodiscard]] double attention_backward_factor(FlopConvention convention);

// Attention's forward FLOPs per unmasked (q, k) pair: QK^T and PV, a multiply-add (2 FLOPs) each
// per dimension of the query heads (heads x head_dim: `query_width`).
[[nodiscard]] constexpr double attention_flops_per_pair(double query_width) { return 4.0 * query_width; }

// Forward FLOPs of the whole model (all layers), before model parallelism divides them.
struct FlopCounts {
  double non_attention_per_token = 0;
  double attention_per_pair = 0;
};

[[nodiscard]] FlopCounts count_flops(const TransformerModel& model, FlopConvention convention);

// The `exact` forward FLOPs of one layer and of the LM head, before model parallelism divides
// them: what a step simulation prices layer by layer. count_flops(exact) is their sum.
struct LayerFlops {
  double matmul_per_token = 0;     // Q, K, V, O projections and the MLP
  double attention_per_pair = 0;   // QK^T and PV over the query heads
  double lm_head_per_token = 0;
};

[[nodiscard]] LayerFlops count_layer_flops(const TransformerModel& model);

}  // namespace stripesim::model
