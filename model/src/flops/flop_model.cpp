#include "stripesim/model/flops/flop_model.hpp"

#include <fmt/format.h>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {

FlopConvention parse_flop_convention(std::string_view text) {
  if (text == "paper") return FlopConvention::paper;
  if (text == "exact") return FlopConvention::exact;
  throw InputError(Input::convention, std::string(text), "expected paper or exact", Shown::quoted);
}

TrainingPass parse_training_pass(std::string_view text) {
  if (text == "fwd") return TrainingPass::forward;
  if (text == "fwdbwd") return TrainingPass::forward_backward;
  throw InputError(Input::pass, std::string(text), "expected fwd or fwdbwd", Shown::quoted);
}

void require_backward_for_recompute(TrainingPass pass, bool recompute) {
  if (recompute && pass == TrainingPass::forward) {
    throw InputError(Input::recompute, "", "only with pass fwdbwd (it is the backward that recomputes the forward)");
  }
}

std::string to_string(FlopConvention convention) { return convention == FlopConvention::paper ? "paper" : "exact"; }

std::string to_string(TrainingPass pass) { return pass == TrainingPass::forward ? "fwd" : "fwdbwd"; }

double attention_backward_factor(FlopConvention convention) { return convention == FlopConvention::paper ? 2.0 : 2.5; }

TrainingMultipliers training_multipliers(FlopConvention convention, TrainingPass pass, bool recompute) {
  TrainingMultipliers m{1, 1};
  if (pass == TrainingPass::forward_backward) {
    m.matmul += 2;
    m.attention += attention_backward_factor(convention);
  }
  if (recompute) {
    m.matmul += 1;
    m.attention += 1;
  }
  return m;
}

FlopCounts count_flops(const TransformerModel& model, FlopConvention convention) {
  const double d = static_cast<double>(model.d_model);
  const double d_ff = static_cast<double>(model.d_ff);
  const double vocab = static_cast<double>(model.vocab);
  const double layers = static_cast<double>(model.layers);
  FlopCounts flops;
  if (convention == FlopConvention::paper) {
    const double per_layer = 2.0 * (4.0 * d * d + 2.0 * d * d_ff) + 2.0 * d * vocab / layers;
    flops.non_attention_per_token = layers * per_layer;
    flops.attention_per_pair = layers * attention_flops_per_pair(d);
    return flops;
  }
  const LayerFlops layer = count_layer_flops(model);
  flops.non_attention_per_token = layers * layer.matmul_per_token + layer.lm_head_per_token;
  flops.attention_per_pair = layers * layer.attention_per_pair;
  return flops;
}

LayerFlops count_layer_flops(const TransformerModel& model) {
  const double d = static_cast<double>(model.d_model);
  const double q_width = static_cast<double>(model.heads * model.head_dim);
  const double kv_width = static_cast<double>(model.kv_heads * model.head_dim);
  const double mlp_matrices = model.mlp == "swiglu" ? 3.0 : 2.0;
  const double projections = 2.0 * (d * q_width + 2.0 * d * kv_width + q_width * d);
  const double mlp = 2.0 * mlp_matrices * d * static_cast<double>(model.d_ff);
  return {projections + mlp, attention_flops_per_pair(q_width), 2.0 * d * static_cast<double>(model.vocab)};
}

}  // namespace stripesim::model
